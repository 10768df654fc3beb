"""LEAPP's two-node example (a preprocessing node feeding a policy node over a data-flow edge), as
an export script: four passes, three cached samples, jit and onnx."""
import sys

import torch

import leapp
from leapp import annotate

torch.manual_seed(0)
W = torch.randn(8, 4)
leapp.start(name="two_node", save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
for k in range(4):
    obs = torch.randn(1, 8) * (k + 1)
    x = annotate.input_tensors("preprocess", {"obs": obs})
    feats = (x - x.mean()) / (x.std() + 1e-6)
    annotate.output_tensors("preprocess", {"features": feats}, export_with="jit")
    f = annotate.input_tensors("policy", {"features": feats})
    annotate.output_tensors("policy", {"action": torch.tanh(f @ W)}, export_with="onnx")
leapp.stop()
leapp.compile_graph(visualize=False, validate=True)

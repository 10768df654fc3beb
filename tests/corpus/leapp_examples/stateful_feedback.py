"""LEAPP's stateful example: an encoder with explicit state (``state_tensors`` / ``update_state``)
and the policy's action fed back to the encoder on the next step."""
import sys

import torch

import leapp
from leapp import annotate

torch.manual_seed(0)
W = torch.randn(4, 4) * 0.5
P = torch.randn(4, 2)
leapp.start(name="stateful", save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
h = torch.zeros(1, 4)
prev_action = torch.zeros(1, 2)
for obs in [torch.randn(1, 4) for _ in range(4)]:
    o, pa = annotate.input_tensors("encoder", {"obs": obs, "prev_action": prev_action})
    h_in = annotate.state_tensors("encoder", {"h": h})
    h_new = torch.tanh(o @ W + h_in + pa.sum())
    annotate.update_state("encoder", {"h": h_new})
    latent = annotate.output_tensors("encoder", {"latent": h_new * 1.0}, export_with="jit")
    lat = annotate.input_tensors("policy", {"latent": latent})
    action = annotate.output_tensors("policy", {"action": torch.tanh(lat @ P)}, export_with="onnx")
    h, prev_action = h_new, action
leapp.stop()
leapp.compile_graph(visualize=False, validate=True)

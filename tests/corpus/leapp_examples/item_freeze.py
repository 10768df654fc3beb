"""LEAPP's constant-freeze example, its ``.item()`` case: ``x * x.abs().max().item()`` freezes the
first pass's maximum into the graph as a float literal."""
import sys

import torch

import leapp
from leapp import annotate

leapp.start("hint_item", save_path=sys.argv[1] if len(sys.argv) > 1 else ".")
torch.manual_seed(1)
for _ in range(3):
    x = annotate.input_tensors("n", {"obs": torch.randn(2, 3)})
    annotate.output_tensors("n", {"y": x * x.abs().max().item()}, export_with="jit")
leapp.stop()
leapp.compile_graph(visualize=False, validate=True, strict=False)

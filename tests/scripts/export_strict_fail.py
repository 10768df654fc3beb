"""An export script whose normaliser freezes a live ``.item()``; ``strict=True`` makes LEAPP raise.

Usage: python export_strict_fail.py OUT_DIR
"""
import sys

import torch

import leapp
from leapp import annotate

out = sys.argv[1]
torch.manual_seed(0)
leapp.start("strictfail", save_path=out, max_cached_io=3)
for k in range(3):
    x = annotate.input_tensors("norm", {"obs": torch.randn(1, 4) * (k + 1)})
    scale = x.abs().max().item()                       # frozen at trace time
    annotate.output_tensors("norm", {"y": x / scale}, export_with="jit")
leapp.stop()
leapp.compile_graph(visualize=False, validate=True, strict=True)
print("not reached")

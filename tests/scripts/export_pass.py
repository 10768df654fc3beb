"""A passing two-node LEAPP export script (used by tests/integration/test_run_cli.py).

Usage: python export_pass.py OUT_DIR
"""
import sys

import torch

import leapp
from leapp import annotate

out = sys.argv[1]
torch.manual_seed(0)
W = torch.randn(4, 2)

leapp.start("passing", save_path=out, max_cached_io=3)
for k in range(3):
    x = annotate.input_tensors("pre", {"obs": torch.randn(1, 4) * (k + 1)})
    feat = annotate.output_tensors("pre", {"feat": torch.tanh(x * 0.5)}, export_with="jit")
    z = annotate.input_tensors("head", {"feat": feat})
    annotate.output_tensors("head", {"action": z @ W}, export_with="jit")
leapp.stop()
result = leapp.compile_graph(visualize=False)          # LEAPP defaults: validate, strict
print("compile_graph returned", result)
assert result == {"pre": True, "head": True}, result

"""Same frozen ``.item()`` bug, ``strict=False``; imports compile_graph by name.

Usage: python export_nonstrict_fail.py OUT_DIR RESULT_FILE
Writes what compile_graph returned to RESULT_FILE (so a test can check the script saw LEAPP's dict).
"""
import json
import sys

import torch

from leapp import annotate, compile_graph, start, stop

out, result_file = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
start("nonstrict", save_path=out, max_cached_io=3)
for k in range(3):
    x = annotate.input_tensors("norm", {"obs": torch.randn(1, 4) * (k + 1)})
    annotate.output_tensors("norm", {"y": x / x.abs().max().item()}, export_with="jit")
    z = annotate.input_tensors("ok", {"y": x * 1.0})
    annotate.output_tensors("ok", {"out": torch.relu(z)}, export_with="jit")
stop()
result = compile_graph(visualize=False, strict=False)
with open(result_file, "w") as fh:
    json.dump({k: v for k, v in result.items()}, fh)

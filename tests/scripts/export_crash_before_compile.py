"""Starts a LEAPP session, traces one pass, then crashes before compile_graph.

Usage: python export_crash_before_compile.py OUT_DIR
"""
import sys

import torch

import leapp
from leapp import annotate

out = sys.argv[1]
leapp.start("crashing", save_path=out, max_cached_io=2)
x = annotate.input_tensors("n", {"obs": torch.randn(1, 3)})
annotate.output_tensors("n", {"y": x * 2}, export_with="jit")
raise RuntimeError("the export script crashed before compile_graph")

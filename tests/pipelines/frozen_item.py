"""frozen-constant + trace-loss: a normaliser that divides by ``x.abs().max().item()``.

``.item()`` turns the traced scale into a Python float, so the trace bakes in the scale of the
first pass. Sample 0 passes, samples 1 and 2 (other scales) fail, and the exported model agrees
with the FX replay there (the debugging guide's "a graph that matches the first observation can
still have inlined a live input as a constant").
"""
import torch
from leapp import annotate

NAME = "frozen_item"
OPTIONS = {"max_cached_io": 3}
EXPECTED = [
    ("trace-loss", "norm", None, []),
    ("frozen-constant", "norm", "y", [1, 2]),
]


def body():
    torch.manual_seed(0)
    for k in range(3):
        obs = torch.randn(2, 8) * (k + 1)
        x = annotate.input_tensors("norm", {"obs": obs})
        scale = x.abs().max().item()
        annotate.output_tensors("norm", {"y": x / scale}, export_with="jit")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

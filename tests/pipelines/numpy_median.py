"""trace-loss (untraced NumPy call, int()) + frozen-constant: centring by ``np.median`` and ``int()``.

``np.median`` has no torch equivalent in LEAPP: it returns a plain array and the trace keeps its
first-pass value as a constant; ``int(x.abs().sum())`` does the same through a Python int.
"""
import numpy as np
import torch
from leapp import annotate

NAME = "numpy_median"
OPTIONS = {"max_cached_io": 3}
EXPECTED = [
    ("trace-loss", "center", None, []),
    ("frozen-constant", "center", "y", [1, 2]),
]


def body():
    torch.manual_seed(0)
    for k in range(3):
        x = annotate.input_tensors("center", {"obs": torch.randn(2, 6) + k})
        med = np.median(x.numpy())
        offset = int(x.abs().sum())
        annotate.output_tensors("center", {"y": x - torch.as_tensor(med) + offset}, export_with="jit")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

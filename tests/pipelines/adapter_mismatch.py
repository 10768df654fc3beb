"""adapter-mismatch: a FunctionPatch adapter that is wrong for inputs the trace never saw.

``mylib.normalize`` divides by a Python float (``float(x.abs().max())``), which LEAPP cannot
trace, so the session patches it with an adapter. The adapter forgot the ``abs``. Every traced
observation is positive, where both agree: LEAPP's validation passes on every sample. Run on the
arguments captured during the trace and on perturbed copies (negated), the adapter and the
original disagree: the hazard says so (docs/hazards.md).
"""
import types

import torch
from leapp import FunctionPatch, annotate

NAME = "adapter_mismatch"

mylib = types.ModuleType("adapter_mismatch_lib")


def normalize(x):
    """The library function: scale by the largest magnitude (a Python float: not traceable)."""
    return x / float(x.abs().max())


def normalize_adapter(x):
    """The traceable replacement, with a bug: max() instead of abs().max()."""
    return x / x.max()


mylib.normalize = normalize
OPTIONS = {"max_cached_io": 3, "patching": [FunctionPatch(mylib, "normalize", normalize_adapter)]}
EXPECTED = [
    ("adapter-mismatch", "norm", None, []),
]


def body():
    torch.manual_seed(0)
    for _ in range(3):
        x = annotate.input_tensors("norm", {"obs": torch.rand(2, 3) + 0.1})   # always positive
        annotate.output_tensors("norm", {"y": mylib.normalize(x)}, export_with="jit")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3,
                patching=OPTIONS["patching"])
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

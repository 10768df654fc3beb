"""Isolation pins the failure on patching: an adapter that is right in Python but not traceable.

``mylib.clip_norm`` is plain torch and traces fine, but the session still patches it with an old
adapter (written for an earlier NumPy version of the helper) that chooses its result with a Python
``if`` on a tensor. Called eagerly the adapter agrees with the original (the adapter check passes);
traced, only the branch of the first pass (norm below the limit: no clipping) is recorded, so the
later, clipped samples fail validation. Traced again without the adapters (``patching=None``) or
with LEAPP's patches off (``global_patching=False``), the original traces and every sample passes:
the isolation runs decide "patching" (docs/deep-checks.md).
"""
import types

import torch
from leapp import FunctionPatch, annotate

NAME = "adapter_branch"

mylib = types.ModuleType("adapter_branch_lib")


def clip_norm(x, limit):
    """The library function: scale x down to norm ``limit`` when it is longer (pure torch)."""
    return x * torch.clamp(limit / (x * x).sum().sqrt(), max=1.0)


def clip_norm_adapter(x, limit):
    """The old adapter: the same in Python, but its ``if`` is decided once while tracing."""
    n = (x * x).sum().sqrt()
    return x * (limit / n) if n > limit else x


mylib.clip_norm = clip_norm
OPTIONS = {"max_cached_io": 3, "patching": [FunctionPatch(mylib, "clip_norm", clip_norm_adapter)]}
EXPECTED = [
    ("trace-loss", "clip", None, []),
    ("frozen-constant", "clip", "y", [1, 2]),
]


def body():
    torch.manual_seed(0)
    for scale in (0.2, 2.0, 3.0):            # the first pass is below the limit, the others above
        x = annotate.input_tensors("clip", {"obs": torch.randn(2, 3) * scale})
        annotate.output_tensors("clip", {"y": mylib.clip_norm(x, 1.0)}, export_with="jit")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3,
                patching=OPTIONS["patching"])
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

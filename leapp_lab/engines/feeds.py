"""Check ``model.npz`` against the ONNX graph's inputs before an engine is built.

A feed under the wrong name, with another rank, static dimension or dtype than the graph declares, or
with no samples, is the user's input at fault, not a failed build: :class:`CompileInputError` names
the npz, the input and what the graph expects (exit 2), before any engine time is spent. It is also
a CompileError, so callers that caught CompileError for these cases still do.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from leapp_lab.model.errors import UnusableInput
from leapp_lab.model.npzcheck import check_npz

from .base import CompileError


class CompileInputError(UnusableInput, CompileError):
    """The input npz does not fit the model's inputs (exit 2)."""


def _declared(model) -> dict[str, tuple[np.dtype | None, list[int | None] | None]]:
    """Graph input name -> (numpy dtype or None, dims with None for symbolic ones, or None: unknown)."""
    from onnx import helper

    inits = {i.name for i in model.graph.initializer}
    out = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        dtype = dims = None
        if tt is not None and tt.elem_type:
            try:
                dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
            except (KeyError, TypeError, ValueError):
                dtype = None
        if tt is not None and tt.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        out[vi.name] = (dtype, dims)
    return out


def check_feeds(model, names: list[str], npz: Path) -> None:
    """Raise CompileInputError when ``npz`` cannot feed the graph inputs ``names`` of ``model``."""
    headers = check_npz(npz)      # regular file, sane headers, declared sizes within the file
    missing = [n for n in names if n not in headers]
    if missing:
        raise CompileInputError(f"{npz}: has no array for model input(s) {missing} (it holds "
                                f"{sorted(headers)}); re-run prepare or pass the matching --npz")
    bad = [n for n in names if not headers[n].shape]
    if bad:
        raise CompileInputError(f"{npz}: input(s) {bad} are scalars; every input needs a leading "
                                f"sample axis")
    counts = {n: headers[n].shape[0] for n in names}
    if len(set(counts.values())) > 1:
        raise CompileInputError(f"{npz}: inputs have different sample counts {counts}; every input "
                                f"needs the same leading sample axis")
    if names and not next(iter(counts.values())):
        raise CompileInputError(f"{npz}: holds zero samples; re-run prepare (or pass an npz with "
                                f"at least one sample)")
    declared = _declared(model)
    for n in names:
        if n not in declared:
            continue
        dtype, dims = declared[n]
        h = headers[n]
        per_sample = list(h.shape[1:])
        if dtype is not None and h.dtype != dtype:
            raise CompileInputError(f"{npz}: input {n!r} is {h.dtype}, the model expects {dtype}; "
                                    f"re-run prepare or pass the npz prepare wrote for this model")
        if dims is not None:
            if len(per_sample) != len(dims):
                raise CompileInputError(
                    f"{npz}: input {n!r} has per-sample shape {tuple(per_sample)} (rank "
                    f"{len(per_sample)}), the model expects rank {len(dims)} "
                    f"{tuple('?' if d is None else d for d in dims)} (the leading axis of the npz "
                    f"counts samples); re-run prepare or pass the matching --npz")
            wrong = [i for i, (a, d) in enumerate(zip(per_sample, dims)) if d is not None and a != d]
            if wrong:
                raise CompileInputError(
                    f"{npz}: input {n!r} has per-sample shape {tuple(per_sample)}, the model expects "
                    f"{tuple('?' if d is None else d for d in dims)} (dimension {wrong[0]} differs); "
                    f"re-run prepare or pass the matching --npz")

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


def check_calibration(feeds: list[dict[str, np.ndarray]], npz: Path, engine: str) -> list[str]:
    """An int8 engine takes each activation's range from the min and max its calibration sees on
    every sample of ``npz``: a float input with no finite value gives no range (onnxruntime says only
    "scale issue") and one Inf an infinite one (the build "succeeds" and computes NaN). Both raise
    CompileInputError naming the npz and the input. NaNs among finite values are skipped by the
    calibrator (np.nanmin / np.nanmax): returned as notes for compile.log."""
    notes = []
    for name in (feeds[0] if feeds else {}):
        if np.asarray(feeds[0][name]).dtype.kind not in "fc":
            continue
        finite = nan = inf = 0
        inf_at = None
        for i, f in enumerate(feeds):
            a = np.asarray(f[name])
            n_fin, n_nan = int(np.count_nonzero(np.isfinite(a))), int(np.count_nonzero(np.isnan(a)))
            finite, nan = finite + n_fin, nan + n_nan
            if a.size - n_fin - n_nan:
                inf += a.size - n_fin - n_nan
                inf_at = i if inf_at is None else inf_at
        what = (f"{npz}: input {name!r} calibrates the {engine} engine (its int8 ranges are the min "
                f"and max of every sample)")
        if not finite:
            raise CompileInputError(f"{what} but holds no finite value ({nan} NaN, {inf} Inf); write "
                                    f"the npz again from real inputs (re-run prepare) or pass --npz "
                                    f"with finite samples")
        if inf:
            raise CompileInputError(f"{what} but holds {inf} Inf value(s) (first in sample {inf_at}), "
                                    f"which would make its int8 range infinite and the engine's "
                                    f"values NaN; replace or drop those samples, or pass --npz "
                                    f"with finite ones")
        if nan:
            notes.append(f"note: {npz.name}: input {name!r} holds {nan} NaN value(s); int8 calibration "
                         f"skips them")
    return notes


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

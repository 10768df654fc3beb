"""The tests' one metric oracle: each metric of docs/verify.md written out by its definition in
float64 numpy, independent of ``leapp_lab.numerics`` (what the tests check against it).

``e``: the engine's (or exported, or compared) values, ``r``: the reference's; any shape, flattened.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np


def _flat(x) -> np.ndarray:
    return np.asarray(x, np.float64).ravel()


def nrmse(e, r) -> float:
    """√mean((e − r)²) / √mean(r²)."""
    e, r = _flat(e), _flat(r)
    return float(np.sqrt(np.mean((e - r) ** 2)) / np.sqrt(np.mean(r ** 2)))


def cosine(e, r) -> float:
    """Σer / (‖e‖‖r‖); 1 when both are zero, 0 when one is."""
    e, r = _flat(e), _flat(r)
    ne, nr = np.linalg.norm(e), np.linalg.norm(r)
    return 1.0 if ne == 0 and nr == 0 else (0.0 if ne == 0 or nr == 0 else float(e @ r / (ne * nr)))


def max_abs(e, r) -> float:
    """max |e − r|."""
    return float(np.abs(_flat(e) - _flat(r)).max())


def metrics(e, r) -> dict[str, float]:
    """max_abs, mse, mape (percent, |r| floored at 1e-6), cosine and nrmse of one pair."""
    e, r = _flat(e), _flat(r)
    d = np.abs(e - r)
    return {"max_abs": float(d.max()), "mse": float(np.mean((e - r) ** 2)),
            "mape": float(100 * np.mean(d / np.maximum(np.abs(r), 1e-6))), "cosine": cosine(e, r),
            "nrmse": nrmse(e, r)}


def nrmse_of_files(engine_npz: str | Path, reference_npz: str | Path, name: str) -> float:
    """``nrmse`` of array ``name`` over every sample, read from the two npz files on disk."""
    with np.load(engine_npz, allow_pickle=False) as z:
        e = z[name]
    with np.load(reference_npz, allow_pickle=False) as z:
        r = z[name]
    return nrmse(e, r)

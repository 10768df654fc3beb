"""Repair runs of the shared test models, made once per test session (like ``builds.prepared``).

    from tests.models.repairs import int8_repair
    report = int8_repair()     # leapp_lab.repair of outlier_mlp on ort-int8, target 0.01, in process
"""
from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from .builds import _root, prepared

TARGET = 0.01


def outlier_mlp():
    """The prepared outlier MLP (every tap exposed): its int8 engine misses TARGET by far."""
    return prepared("outlier_mlp", taps=("all",))


@functools.lru_cache(maxsize=None)
def int8_repair(jobs: int = 1):
    """``leapp_lab.repair`` of the outlier MLP on ort-int8 at TARGET (jobs=1: in this process)."""
    import leapp_lab
    p = outlier_mlp()
    out = Path(tempfile.mkdtemp(prefix="repair-", dir=_root()))
    return leapp_lab.repair(p.reference, p.onnx, engine="ort-int8", target_nrmse=TARGET, jobs=jobs, out=out)

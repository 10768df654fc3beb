"""Which backend runs the metric pass: ``numba`` (``numerics.fused``) or ``numpy``
(``numerics.numpy_pass``), the same bits either way.

``LEAPP_LAB_METRICS`` = ``numba`` | ``numpy`` | ``auto`` (the default: numba when it imports; see
``resolve_backend``) picks one. numba is imported once, when first wanted; a numba that imports but
cannot compile here is given up for the rest of the process (``numba_failed``), numpy taking over.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

BACKEND_ENV = "LEAPP_LAB_METRICS"
BACKENDS = ("numba", "numpy")
_fused: Any = None        # the numerics.fused module once imported; False when numba is unusable
_fused_error: str = ""


def env_choice() -> str:
    return os.environ.get(BACKEND_ENV, "").strip().lower()


def _load_fused():
    global _fused, _fused_error
    if _fused is None:
        try:
            from . import fused as _f
            _fused = _f
        except Exception as exc:  # noqa: BLE001 - absent, or present but unusable (e.g. a numpy it does not support)
            _fused, _fused_error = False, f"{type(exc).__name__}: {exc}"
    return _fused


#: ``auto`` does not import numba for a call of fewer element pairs than this (loading numba and its
#: cached kernel takes longer than numpy takes over so few); once numba is loaded, every call uses it
AUTO_MIN_PAIRS = 1 << 24


def resolve_backend(backend: str | None = None, pairs: int | None = None) -> str:
    """The metrics backend a call with ``backend`` uses: the argument, else ``$LEAPP_LAB_METRICS``
    (``numba`` | ``numpy`` | ``auto``), else ``auto``: numba when it imports, numpy otherwise (and
    numpy for a call of ``pairs`` < AUTO_MIN_PAIRS while numba is not loaded yet)."""
    want = (backend or env_choice() or "auto").lower()
    if want == "numpy":
        return "numpy"
    if want not in ("numba", "auto"):
        src = "backend" if backend else BACKEND_ENV
        raise ValueError(f"{src}={want!r}: the metrics backend is one of numba, numpy, auto")
    if want == "auto" and _fused is None and pairs is not None and pairs < AUTO_MIN_PAIRS:
        return "numpy"
    if _load_fused():
        return "numba"
    if want == "numba":
        src = "backend='numba'" if backend else f"{BACKEND_ENV}=numba"
        raise RuntimeError(f"{src}, but numba cannot be used here ({_fused_error}); install numba "
                           f"(pip install numba) or set {BACKEND_ENV}=numpy")
    return "numpy"


def backend_threads(backend: str | None = None) -> int:
    """Threads ``diff_pass_rows`` uses by default (numba: ``NUMBA_NUM_THREADS``; numpy: 1)."""
    return _fused.threads() if resolve_backend(backend) == "numba" else 1


def numba_dtype(dt: np.dtype) -> bool:
    # native-endian bool/int/uint/float up to 8 bytes (float16 is read as its bits)
    return dt.kind in "biuf" and dt.itemsize <= 8 and dt.isnative


def fused() -> Any:
    """The ``numerics.fused`` module once loaded; None before, False when numba is unusable."""
    return _fused


def numba_failed(exc: BaseException) -> bool:
    """numba imports but cannot compile here: numpy from now on (same bits). True the first time
    (the caller says it once)."""
    global _fused, _fused_error
    if not _fused:
        return False
    _fused, _fused_error = False, f"{type(exc).__name__}: {exc}"
    return True

"""leapp_lab: find why, and where, an exported LEAPP model disagrees with the Python it came from.

The public API is imported lazily so that ``import leapp_lab`` (and ``%load_ext leapp_lab``) stays
fast and does not import torch until a feature needs it. Reports open, render and export without
LEAPP installed (``leapp_lab.model`` / ``leapp_lab.views``); the LEAPP version is checked where
LEAPP is used (``leapp_lab.trace``).
"""
from __future__ import annotations

import importlib
from typing import Any

from .egress import quiet_environment as _quiet_environment

# first of all: onnxruntime reads its telemetry switch once, when its library loads (leapp_lab.egress)
_quiet_environment()

__version__ = "0.1.0"

_LAZY = {
    "tap": "leapp_lab.taps.marker",
    "Tap": "leapp_lab.taps.marker",
    "trace": "leapp_lab.steps.trace_nodes",
    "prepare": "leapp_lab.steps.prepare",
    "compile": "leapp_lab.steps.compile",
    "verify": "leapp_lab.steps.verify",
    "verify_many": "leapp_lab.steps.verify_many",
    "diff": "leapp_lab.compare.diff",
    "repair": "leapp_lab.steps.repair",
    "report": "leapp_lab.views.html",
    "load": "leapp_lab.model.base",
    "replay": "leapp_lab.steps.replay_engines",
    "parity": "leapp_lab.deep.parity",
    "exporters": "leapp_lab.steps.deep_checks",
    "isolate": "leapp_lab.steps.deep_checks",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'leapp_lab' has no attribute {name!r}")
    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


def load_ipython_extension(ipython: Any) -> None:
    from .magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .magics import unload_ipython_extension as _unload

    _unload(ipython)

"""LEAPP wrapper: a safe tracing session, capture of samples / FX / YAML / log, attach mode.

``leapp_lab.trace`` is both this package and the context manager: once any submodule is imported,
Python binds the package to ``leapp_lab.trace``, which would shadow the lazily exported function.
Making the package module callable keeps ``with leapp_lab.trace("g") as t:`` working either way.
"""
from __future__ import annotations

import sys
import types

from .._compat import check_leapp_version

check_leapp_version()   # every module here drives LEAPP internals verified for 0.7.x only


class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        # stands for the facade's public ``leapp_lab.trace`` (its _LAZY entry: the session with the
        # node engines, steps.trace_nodes), which this package must not import (it lies above)
        import importlib
        facade = sys.modules.get("leapp_lab")
        target = getattr(facade, "_LAZY", {}).get("trace") or f"{__name__}.session"
        return getattr(importlib.import_module(target), "trace")(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule


def __getattr__(name: str):
    if name in ("trace", "TraceSession"):
        from . import session
        return getattr(session, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

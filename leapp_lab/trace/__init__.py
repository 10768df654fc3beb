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
        from .session import trace
        return trace(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule


def __getattr__(name: str):
    if name in ("trace", "TraceSession"):
        from . import session
        return getattr(session, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

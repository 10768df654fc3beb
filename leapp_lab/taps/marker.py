"""Tap markers: ``tap(x, "name")`` and the ``Tap("name")`` module.

Outside ``leapp_lab.prepare`` a tap is a bare function call that returns its argument: no graph
node, no copy, no bookkeeping. That is what makes an untapped export identical to the export of the
same source with ``tap`` bound to ``lambda x, name: x``.

``prepare`` switches a *mode* on for the duration of one forward pass:

* ``CaptureMode`` (eager reference runs) records where every tap fired and keeps a copy of the
  tensors that are to be exposed;
* ``ExportMode`` (the ONNX export trace) replaces each exposed tap by a ``leapp_lab::Tap`` ONNX
  node (``torch.onnx.ops.symbolic``), which prepare removes again after export, exposing the
  tensor it marked as a graph output named after the tap.

Both modes raise ``DuplicateTapError`` when one forward pass reaches the same name twice.

Outside those modes a *sink* may be installed (``leapp_lab.model.tapsink.tap_sink``): a callable
``(x, name, site) -> x`` that sees every tap. The trace side installs one while a LEAPP session
runs, to record which node each tap fired in (leapp_lab.trace.node_taps); neither package imports
the other.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ..model import tapsink
from ..model.errors import UserError
from ..model.tap import TAP_DOMAIN, TAP_OP  # noqa: F401  (the marker's op, re-exported)
from ..model.tapsink import (FORBIDDEN_CATEGORIES, RESERVED_NAMES, name_problem,  # noqa: F401
                             short_path, tap_sink)


@dataclass(frozen=True)
class Site:
    """A place in Python source: where a tap() was called or a Tap module was built."""

    file: str
    line: int
    function: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class TapError(UserError):
    """A tap marker that cannot be honoured; the message names the tap and its site(s)."""


class DuplicateTapError(TapError):
    def __init__(self, name: str, first: Site, second: Site, modules: bool = False):
        self.name, self.first, self.second = name, first, second
        if modules and first == second:
            where = (f"two Tap({name!r}) modules built by the same line {first}: a module class "
                     f"used more than once (e.g. a repeated block); tap names must be unique in a "
                     f"model, so pass an index to its constructor and name each instance, e.g. "
                     f"Tap(f\"{name}_{{i}}\")")
        elif modules:
            where = (f"two Tap({name!r}) modules, built at {first} and at {second}; tap names "
                     f"must be unique in a model")
        elif first == second:
            where = (f"the tap() at {first} ran twice in one forward pass (a loop, or a module "
                     f"called twice); give each call its own name, e.g. f\"{name}_{{i}}\"")
        else:
            where = f"first at {first}, again at {second}; tap names must be unique in a model"
        super().__init__(f"duplicate tap name {name!r}: {where}")


def check_name(name: str, what: str) -> None:
    """TapError ``WHAT: PROBLEM`` when ``name`` holds a character no tap name may hold."""
    problem = name_problem(name)
    if problem is not None:
        raise TapError(f"{what}: the tap name {problem}")


# The active mode, or None. A plain global (not a ContextVar): torch.export traces in this thread,
# and prepare never runs two modes at once.
_MODE: "_Mode | None" = None


def tap(x: Any, name: str, *, _site: Site | None = None) -> Any:
    """Mark ``x`` as the debug tap ``name`` and return ``x`` unchanged.

    Use the returned value (``x = tap(x, "name")``): a tap whose result is never used may be
    removed by the exporter as dead code, and ``prepare --debug-taps name`` then fails with
    "optimised away".
    """
    mode = _MODE
    if mode is None:
        sink = tapsink.current()
        if sink is None:
            return x
        return sink(x, name, _site or _caller_site())
    return mode.on_tap(x, name, _site or _caller_site())


def tap_at(x: Any, name: str, file: str, line: int) -> Any:
    """``tap(x, name)`` with its site given: the call ``prepare --from-trace`` puts into a LEAPP
    node's traced graph where the original tap() fired (the site is the one recorded then)."""
    return tap(x, name, _site=Site(file, int(line)))


class Tap(nn.Module):
    """``tap`` as a module, for ``nn.Sequential`` where there is no ``forward`` to edit."""

    def __init__(self, name: str):
        super().__init__()
        if not isinstance(name, str) or not name:
            raise TypeError(f"Tap(name): name must be a non-empty string, got {name!r}")
        self.name = name
        self.site = _caller_site()
        check_name(name, f"Tap({name!r}) at {self.site}")

    def forward(self, x: Any) -> Any:
        return tap(x, self.name, _site=self.site)

    def extra_repr(self) -> str:
        return repr(self.name)


def _caller_site() -> Site:
    """The first frame outside this module (the user's call of tap() or Tap())."""
    f = sys._getframe(1)
    here = __file__
    while f is not None and f.f_code.co_filename == here:
        f = f.f_back
    if f is None:  # pragma: no cover - only from C callers
        return Site("<unknown>", 0)
    return Site(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)


# --------------------------------------------------------------------------------------------
# modes (CaptureMode: leapp_lab.taps.eager_capture; ExportMode: leapp_lab.taps.onnx_export)
# --------------------------------------------------------------------------------------------

@dataclass
class _Mode:
    expose: frozenset[str] | None = None        # None: expose every tap ("all")
    hits: dict[str, Site] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)

    def wants(self, name: str) -> bool:
        return self.expose is None or name in self.expose

    def record(self, x: Any, name: str, site: Site) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"tap() at {site}: name must be a non-empty string, got {name!r}")
        check_name(name, f"tap(x, {name!r}) at {site}")
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"tap({name!r}) at {site}: expected a torch.Tensor, got {type(x).__name__}")
        prev = self.hits.get(name)
        if prev is not None:
            raise DuplicateTapError(name, prev, site)
        self.hits[name] = site
        self.order.append(name)

    def on_tap(self, x: Any, name: str, site: Site) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def __enter__(self) -> "_Mode":
        global _MODE
        if _MODE is not None:
            raise RuntimeError("leapp_lab tap modes do not nest")
        _MODE = self
        return self

    def __exit__(self, *exc: Any) -> None:
        global _MODE
        _MODE = None


@dataclass
class CaptureMode(_Mode):
    """Eager run: remember every tap site, keep a detached copy of the exposed ones."""

    values: dict[str, torch.Tensor] = field(default_factory=dict)

    def on_tap(self, x: Any, name: str, site: Site) -> Any:
        self.record(x, name, site)
        if self.wants(name):
            self.values[name] = x.detach().to("cpu", copy=True)
        return x


@dataclass
class ForceMode(CaptureMode):
    """Teacher forcing in eager (``verify --local --expected fp16``): a tap named in ``forced``
    returns that value (the reference, cast to the tap's dtype and device) instead of its own, so
    the layers after it compute from exact inputs; the value the tap's own layer computed is kept
    in ``values``, as CaptureMode keeps it."""

    forced: dict[str, torch.Tensor] = field(default_factory=dict)

    def on_tap(self, x: Any, name: str, site: Site) -> Any:
        super().on_tap(x, name, site)
        f = self.forced.get(name)
        if f is None or tuple(f.shape) != tuple(x.shape):
            return x
        return f.to(dtype=x.dtype, device=x.device)


@dataclass
class ExportMode(_Mode):
    """Export trace: put a ``leapp_lab::Tap`` marker node on every exposed tap."""

    def on_tap(self, x: Any, name: str, site: Site) -> Any:
        self.record(x, name, site)
        if not self.wants(name):
            return x
        return torch.onnx.ops.symbolic(
            f"{TAP_DOMAIN}::{TAP_OP}", (x,), {"name": name, "site": str(site)},
            dtype=x.dtype, shape=x.shape, version=1)


def tap_modules(model: nn.Module) -> list[tuple[str, Tap]]:
    """Every ``Tap`` module in ``model`` with its qualified name; duplicates raise, naming both sites."""
    seen: dict[str, Tap] = {}
    found = []
    for qual, m in model.named_modules(remove_duplicate=False):
        if isinstance(m, Tap):
            prev = seen.get(m.name)
            if prev is not None and prev is not m:
                raise DuplicateTapError(m.name, prev.site, m.site, modules=True)
            seen[m.name] = m
            found.append((qual, m))
    return found

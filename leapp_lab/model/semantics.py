"""Errors by meaning: what a port's elements are (LEAPP's ``TensorSemantics``) and the error of each.

LEAPP lets a port declare ``TensorSemantics(kind=..., element_names=[...])``; ``element_names`` is
kept as LEAPP normalises it: one *axis item* per trailing axis of the tensor (the leading axes,
usually a batch of 1, are not named), each item a list of names, ``None`` (an unnamed axis) or
``"__temporal_axis__"`` (a ``TemporalAxis(period_ms)``: the steps of an action chunk). A flat list
``["hip", "knee"]`` is one axis item, the last axis. Observed on LEAPP 0.7.2: a [1, 2, 3] port with
``[TemporalAxis(20), ["hip", "knee", "ankle"]]`` is saved as
``["__temporal_axis__", ["hip", "knee", "ankle"]]`` with ``temporal_period_ms: 20.0``.

:func:`element_layout` turns that (and the array's shape) into one name per element of the trailing
axes, joined with ``/``: ``knee``; along a temporal axis ``t+2/knee``; an unnamed axis by index.
The leading axes are pooled: an element's error is over every leading index. A port without
semantics is broken down by index (``[3]``, ``[0,2]``) when it holds at most
:data:`MAX_INDEX_ELEMENTS` elements (leading axes of size 1 dropped): more bars than that are not
read. A declared breakdown is kept up to :data:`MAX_NAMED_ELEMENTS` elements.

:class:`ElementSums` accumulates, per element, max |e − r| and the sums behind nrmse (float64, over
the finite pairs), so one record can cover one sample, one step or a whole sequence; ``worst`` is
the element with the largest |e − r| (an element where exactly one side is NaN/Inf counts as
infinitely wrong: LEAPP fails it whatever the tolerance).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dc import Plain

TEMPORAL_AXIS = "__temporal_axis__"      # LEAPP's TEMPORAL_AXIS_SENTINEL
#: ports without declared names are broken down by index up to this many elements
MAX_INDEX_ELEMENTS = 32
#: a declared breakdown is kept up to this many elements (report size; a chart stays readable
#: scrolled); beyond it the port has no breakdown and ``ElementLayout.note`` says why
MAX_NAMED_ELEMENTS = 2048


@dataclass
class PortSemantics(Plain):
    """What LEAPP says a port means (``TensorDescription.get_semantics()``, as in the YAML)."""
    kind: str | None = None                  # e.g. "target/joint/position" (an Input/OutputKindEnum value)
    element_names: list[Any] | None = None   # LEAPP's axis items (module doc)
    temporal_period_ms: float | None = None  # the TemporalAxis period
    unit: str | None = None                  # extra "unit" / "units" when declared
    extra: dict[str, Any] = field(default_factory=dict)   # other extra fields, as declared

    @classmethod
    def from_leapp(cls, sem: dict[str, Any] | None) -> "PortSemantics | None":
        """From ``td.get_semantics()`` (enums as their value); None when nothing is declared."""
        if not sem:
            return None
        out = cls()
        for key, value in sem.items():
            value = getattr(value, "value", value)       # Input/OutputKindEnum -> its string
            if key == "kind":
                out.kind = None if value is None else str(value)
            elif key == "element_names":
                out.element_names = _plain(value)
            elif key == "temporal_period_ms":
                out.temporal_period_ms = None if value is None else float(value)
            elif key in ("unit", "units") and isinstance(value, str):
                out.unit = value
            else:
                out.extra[str(key)] = _plain(value)
        if out.kind is None and out.element_names is None and out.unit is None and not out.extra:
            return None
        return out

    def label(self) -> str | None:
        """``kind`` and unit as one short label (``target/joint/position, rad``), None if neither."""
        parts = [x for x in (self.kind, self.unit) if x]
        return ", ".join(parts) or None


def _plain(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(getattr(v, "value", v))


@dataclass
class ElementError(Plain):
    """One element of a port (``knee``, ``t+2/knee``, ``[3]``): its error over the record's pairs."""
    name: str
    max_abs: float | None = None     # max |e − r| (None: no finite pair)
    nrmse: float | None = None       # sqrt(mean d²) / sqrt(mean r²); None when r is all zero


@dataclass
class ElementLayout:
    """How a port's arrays split into named elements."""
    names: list[str]                 # one per element of the trailing ``axes`` axes, row-major
    axes: int                        # how many trailing axes the names cover
    source: str                      # "semantics" | "index"
    note: str | None = None          # a declared name list that did not fit, and what was done


def _index_names(shape: list[int]) -> list[str]:
    if len(shape) == 1:
        return [f"[{i}]" for i in range(shape[0])]
    return ["[" + ",".join(map(str, idx)) + "]" for idx in np.ndindex(*shape)]


def element_layout(semantics: PortSemantics | None, shape: Any) -> ElementLayout | None:
    """The element names of an array of ``shape`` (module doc), or None when there is no
    breakdown (a scalar or one element, a port too big to read by index)."""
    if shape is None:
        return None
    shape = [int(s) for s in shape]
    axes = semantics.element_names if semantics is not None else None
    if axes:
        lay = _declared(axes, shape, semantics.temporal_period_ms)
        if lay is not None:
            return lay
    trailing = list(shape)
    while trailing and trailing[0] == 1:
        trailing.pop(0)
    n = int(np.prod(trailing)) if trailing else 1
    if n <= 1 or n > MAX_INDEX_ELEMENTS:
        return None
    return ElementLayout(_index_names(trailing), len(trailing), "index")


def _declared(axes: list[Any], shape: list[int], period: float | None) -> ElementLayout | None:
    k = len(axes)
    if k > len(shape):
        return None
    trailing = shape[len(shape) - k:]
    per_axis: list[list[str]] = []
    notes = []
    for i, (item, dim) in enumerate(zip(axes, trailing)):
        if item == TEMPORAL_AXIS:
            per_axis.append([f"t+{j}" for j in range(dim)])
        elif isinstance(item, list) and len(item) == dim and all(isinstance(x, (str, int, float)) for x in item):
            per_axis.append([str(x) for x in item])
        else:
            if isinstance(item, list):
                notes.append(f"axis {len(shape) - k + i} declares {len(item)} names for {dim} elements: "
                             f"named by index")
            per_axis.append([str(j) for j in range(dim)])
    n = int(np.prod(trailing)) if trailing else 1
    if n <= 1 or n > MAX_NAMED_ELEMENTS:
        return None
    names = ["/".join(parts) for parts in _product(per_axis)]
    return ElementLayout(names, k, "semantics", "; ".join(notes) or None)


def _product(per_axis: list[list[str]]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for names in per_axis:
        out = [p + [n] for p in out for n in names]
    return out


class ElementSums:
    """Per-element accumulators over any number of (exported, reference) pairs of one port."""

    def __init__(self, layout: ElementLayout) -> None:
        m = len(layout.names)
        self.layout = layout
        self.n = np.zeros(m)
        self.sum_sq = np.zeros(m)
        self.sum_rr = np.zeros(m)
        self.max_abs = np.full(m, -math.inf)
        self.bad = np.zeros(m, dtype=bool)      # exactly one side non-finite somewhere

    def add(self, value: Any, ref: Any) -> bool:
        """Add one pair; False (nothing added) when the shapes differ or do not fit the layout."""
        if value is None or ref is None:
            return False
        v, r = np.asarray(value, np.float64), np.asarray(ref, np.float64)
        m = len(self.layout.names)
        if v.shape != r.shape or v.size == 0 or v.size % m:
            return False
        v, r = v.reshape(-1, m), r.reshape(-1, m)
        fv, fr = np.isfinite(v), np.isfinite(r)
        ok = fv & fr
        d = np.where(ok, v - r, 0.0)
        rr = np.where(ok, r, 0.0)
        self.n += ok.sum(axis=0)
        self.sum_sq += (d * d).sum(axis=0)
        self.sum_rr += (rr * rr).sum(axis=0)
        has = ok.any(axis=0)
        mx = np.where(ok, np.abs(d), -math.inf).max(axis=0)
        self.max_abs = np.where(has, np.maximum(self.max_abs, mx), self.max_abs)
        self.bad |= (fv != fr).any(axis=0)
        return True

    def errors(self) -> list[ElementError]:
        out = []
        for i, name in enumerate(self.layout.names):
            n = self.n[i]
            mx = float(self.max_abs[i]) if n > 0 else None
            nr = (float(math.sqrt(self.sum_sq[i] / n) / math.sqrt(self.sum_rr[i] / n))
                  if n > 0 and self.sum_rr[i] > 0 else None)
            out.append(ElementError(name, mx, nr))
        return out

    def worst(self) -> str | None:
        """The element with the largest |e − r| (a one-sided NaN/Inf first); None when nothing was
        compared or every element agrees exactly."""
        if self.bad.any():
            return self.layout.names[int(np.argmax(self.bad))]
        mx = np.where(self.n > 0, self.max_abs, -math.inf)
        if not (self.n > 0).any() or not mx.max() > 0:
            return None              # nothing compared, or no element differs at all
        return self.layout.names[int(np.argmax(mx))]


def breakdown(semantics: PortSemantics | None, value: Any, ref: Any
              ) -> tuple[list[ElementError], str | None]:
    """(elements, worst element) of one pair; ([], None) when the port has no breakdown."""
    if value is None or ref is None or np.shape(value) != np.shape(ref):
        return [], None
    lay = element_layout(semantics, np.shape(ref))
    if lay is None:
        return [], None
    s = ElementSums(lay)
    if not s.add(value, ref):
        return [], None
    return s.errors(), s.worst()


def worst_text(worst: str | None, semantics: PortSemantics | None, elements: list[ElementError]) -> str | None:
    """``worst element knee (max |diff| 0.03; target/joint/position)``: the sentence rows carry."""
    if worst is None:
        return None
    e = next((x for x in elements if x.name == worst), None)
    parts = []
    if e is not None and e.max_abs is not None:
        parts.append(f"max |diff| {e.max_abs:.3g}")
    label = semantics.label() if semantics is not None else None
    if label:
        parts.append(label)
    return f"worst element {worst}" + (f" ({'; '.join(parts)})" if parts else "")

"""Errors by meaning in verify (docs/semantics.md, "verify outputs of a prepared node").

A build prepared from a LEAPP trace (``prepare --from-trace``) records, in its prepare report
(``<onnx dir>/<stem>.prepare/report.json``, ``from_trace.semantics``), what each output port of
the node declares: ``TensorSemantics(kind=..., element_names=[...])``. Verify then breaks every
compared output row down per element, over all samples (``model.semantics.ElementSums``, float64,
finite pairs): ``elements`` ``[{name, max_abs, nrmse}]``, ``worst_element`` (the largest
|engine − reference|), ``meaning`` (kind and unit). An output without semantics is broken down by
index when it holds at most 32 elements, as everywhere else. Builds of other models are left as
they are: their outputs are not LEAPP ports.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from leapp_lab.model.errors import NotAFile
from leapp_lab.model.jsonio import read_json
from leapp_lab.model.safepaths import present
from leapp_lab.model.semantics import ElementSums, PortSemantics, element_layout
from leapp_lab.model.verify import VerifyReport


def trace_semantics(build: Any, ref_path: Path) -> dict[str, PortSemantics | None] | None:
    """``{output: semantics or None}`` of a build prepared from a trace (None: any other build, or
    no readable prepare record)."""
    from .expected_drift import PREPARE_SUFFIX, _onnx_candidates
    for onnx in _onnx_candidates(build, ref_path):
        rec = onnx.parent / f"{onnx.stem}{PREPARE_SUFFIX}" / "report.json"
        if not present(rec):
            continue
        try:
            d = read_json(rec)
        except NotAFile:
            raise
        except (OSError, ValueError):
            return None
        origin = d.get("from_trace") if isinstance(d, dict) else None
        if not isinstance(origin, dict):
            return None
        sems = origin.get("semantics") or {}
        out: dict[str, PortSemantics | None] = {}
        for row in d.get("rows") or []:
            if isinstance(row, dict) and row.get("kind") == "output" and isinstance(row.get("name"), str):
                raw = sems.get(row["name"]) if isinstance(sems, dict) else None
                out[row["name"]] = PortSemantics.from_dict(raw) if isinstance(raw, dict) else None
        return out
    return None


def add_elements(report: VerifyReport, build: Any, ref: Any, eng: Any, ref_path: Path) -> None:
    """Fill ``elements`` / ``worst_element`` / ``meaning`` of the output rows (module doc)."""
    ports = trace_semantics(build, ref_path)
    if not ports:
        return
    for r in report.rows:
        if r.kind != "output" or r.status != "compared" or r.name not in ports:
            continue
        sem = ports[r.name]
        r.meaning = sem.label() if sem is not None else None
        shape = r.shape_reference
        if not shape or shape != r.shape_engine:
            continue
        lay = element_layout(sem, shape[1:])          # per sample: without the leading sample axis
        if lay is None:                               # nothing to name, or too many to read
            continue
        try:
            e, x = np.asarray(eng[r.name]), np.asarray(ref[r.name])
        except (KeyError, OSError, ValueError):
            continue
        sums = ElementSums(lay)
        if sums.add(e, x):
            r.elements, r.worst_element = sums.errors(), sums.worst()
    report.elements = any(r.elements for r in report.rows)

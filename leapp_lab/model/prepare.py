"""The prepare report: what ``leapp_lab.prepare`` exported, which taps it exposed, and why not.

Saved as ``report.json`` in ``<onnx dir>/<onnx stem>.prepare/`` (see docs/taps.md). The manifest
itself lives in the ONNX model; this report repeats it with shapes, dtypes and timings.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .base import Report, register
from .dc import Plain
from .reuse import CacheInfo
from .semantics import PortSemantics
from .tap import TapEntry


@dataclass
class TensorInfo(Plain):
    name: str
    dtype: str | None = None
    shape: list[int] | None = None          # per sample (without the leading sample axis)


@dataclass
class TraceOrigin(Plain):
    """Where a prepare --from-trace build came from (docs/taps.md, "A node becomes a tapped build").

    ``run``: the trace run folder; ``graph`` / ``node``: which node of which graph; ``backend``:
    LEAPP's export backend of the node; ``onnx_source``: ``leapp`` (the ONNX is LEAPP's own artifact,
    byte for byte) or ``re-export`` (the node's traced graph exported again, with its taps);
    ``same_as_leapp``: for a re-export, whether its graph without the taps equals LEAPP's artifact
    (None when LEAPP's artifact is not ONNX or is gone); ``leapp_artifact``: that file;
    ``note``: why a re-export, and what differs. ``semantics``: the node's output ports that
    declare LEAPP ``TensorSemantics`` (output name -> kind, element names, unit), so that verify
    breaks their rows down per element (docs/semantics.md); empty in records written before it."""
    run: str
    graph: str
    node: str
    backend: str | None = None
    onnx_source: str = "leapp"
    same_as_leapp: bool | None = None
    leapp_artifact: str | None = None
    note: str | None = None
    semantics: dict[str, PortSemantics] = field(default_factory=dict)


@dataclass
class PrepareReport(Report, Plain):
    """``model``: the MODEL.py (or a description); ``model_file`` / ``model_sha256``: that file's
    absolute path and the sha256 of the bytes prepare executed (``verify --expected`` re-runs that
    file only if it still has them; None for a model given as an object, and in reports written
    before they were recorded); ``onnx`` / ``npz`` / ``reference``: the files
    written; ``exporter``: ``dynamo`` or ``torchscript`` (``fallback_reason`` says why);
    ``samples``: sample count; ``requested_taps``: the --debug-taps values; ``plugin_taps`` /
    ``op_taps``: the flags; ``inputs``; ``rows``: outputs and taps in model order;
    ``manifest_stamped``: False when nothing was tapped (the ONNX equals the untapped export);
    ``warnings``: human sentences; ``timings_s``: seconds per stage; ``benchmark_ms``: mean eager
    forward time per sample; ``cache``: whether this prepare reused the previous one's files
    (``CacheInfo``: hit, key, why it ran; None for a prepare that used no cache)."""

    kind: ClassVar[str] = "prepare"
    model: str = ""
    model_file: str | None = None
    model_sha256: str | None = None
    onnx: str = ""
    npz: str = ""
    reference: str = ""
    exporter: str = "dynamo"
    fallback_reason: str | None = None
    samples: int = 0
    requested_taps: list[str] = field(default_factory=list)
    plugin_taps: bool = False
    op_taps: bool = False
    inputs: list[TensorInfo] = field(default_factory=list)
    rows: list[TapEntry] = field(default_factory=list)
    manifest_stamped: bool = False
    warnings: list[str] = field(default_factory=list)
    #: the tap() / Tap() names the model reached that were not asked for (taps are off by default)
    unexposed_taps: list[str] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)
    benchmark_ms: float | None = None
    created: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    from_trace: TraceOrigin | None = None   # prepare --from-trace: the trace node it came from
    cache: CacheInfo | None = None

    path: Path | None = field(default=None, repr=False, compare=False, metadata={"transient": True})

    # -- model API -----------------------------------------------------------------------------
    def row(self, name: str) -> TapEntry:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"no output or tap {name!r} in this prepare report; have {[r.name for r in self.rows]}")

    @property
    def taps(self) -> list[TapEntry]:
        return [r for r in self.rows if r.kind != "output"]

    @property
    def outputs(self) -> list[TapEntry]:
        return [r for r in self.rows if r.kind == "output"]

    @property
    def uncompared(self) -> list[TapEntry]:
        return [r for r in self.taps if r.reference_source is None]

    def to_dataframe(self):
        import pandas as pd
        cols = ["name", "kind", "order", "reference_source", "uncompared_reason", "source",
                "producer_op", "producer_node", "scope", "tensor", "dtype", "shape", "producer_source"]
        return pd.DataFrame([{c: getattr(r, c) for c in cols} for r in self.rows], columns=cols)

    # -- views (str(self): the registry's text renderer, Report.__str__) -------------------------
    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


register(PrepareReport)

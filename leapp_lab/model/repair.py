"""The repair report: which stretches of the model a reduced-precision engine must keep in fp32 to
bring its outputs under a target error, found by a sweep of real builds and proven by one more.

Shape (JSON, kind ``repair``; see docs/repair.md)::

    RepairReport{onnx, npz, reference, engine, target_nrmse, budget,
                 segments: [Segment{name, kind, order, taps, nodes, keep, ops, source}],
                 baseline: Proof, trials: [Trial{round, segments, added, error, outputs, gain, rank, ...}],
                 chosen: [segment names], final: Proof | None, status, met, message,
                 builds, seconds, build_seconds, workers, executor, address, exit_code, ...}

A *segment* is the model-order stretch of ONNX nodes that produces one tap (from the previous tap to
this one), or the model outputs after the last tap. A *trial* is one build with a set of segments
kept in fp32, verified against the reference: its ``error`` is the largest output nrmse (None when
an output could not be measured: ``reason`` says why). Round 1 keeps one segment at a time (the
ranking); each later round adds one segment to the set chosen so far. The ``final`` build is the
chosen set built again in its own folder and verified in its own run: the report claims only what
that build measured.

Plain data: stdlib only (numbers come from verify runs; nothing here computes a metric).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .base import Report, Viewable, register
from .columns import Column
from .dc import Plain

#: ``RepairReport.status``: ``met`` (the final build is under the target), ``already-met`` (the
#: engine as built already is: nothing to repair), ``not-met`` (no verified set reached it within
#: the budget; ``final`` is the best one found)
STATUSES = ("met", "already-met", "not-met")


#: the ranked table's columns, defined once: ``records()`` / ``to_dataframe()`` / JSON hold all of
#: them; the text table, the static HTML and the interactive table the ``table`` ones
COLUMNS: tuple[Column, ...] = (
    Column("rank", "rank", "int", "round 1 rank: 1 = this segment alone in fp32 leaves the least output error",
           table=True),
    Column("segment", "segment", "text", "the tap (or model output) the stretch of nodes ends at", table=True),
    Column("kind", "kind", "text", "the tap kind, or output for the nodes after the last tap", table=True),
    Column("order", "#", "int", "model order of the segment's last node"),
    Column("taps", "taps", "text", "taps and outputs computed at the segment's end", table=True),
    Column("nodes", "nodes", "int", "ONNX nodes in the stretch", table=True),
    Column("kept_nodes", "kept nodes", "int", "nodes the engine keeps in fp32 for it (int8: and the nodes "
           "reading its values)"),
    Column("output_nrmse", "output NRMSE", "num", "largest model-output nrmse with this segment alone in fp32 "
           "(round 1)", table=True, log=True),
    Column("gain", "gain", "num", "output nrmse of the engine as built minus the above: the error it removes",
           table=True),
    Column("chosen", "in final", "bool", "kept in fp32 by the final engine", table=True),
    Column("seconds", "build s", "num", "seconds its build and verify took"),
    Column("note", "note", "text", "why the error is unmeasurable, or the build failed", table=True),
)


def table_columns() -> list[Column]:
    return [c for c in COLUMNS if c.table]


def output_error(row: Any) -> tuple[float | None, str | None]:
    """How far one model-output row of a verify report is from its reference, for repair: its nrmse,
    or (None, why) when that cannot be trusted (not compared, extra non-finite engine values,
    nothing finite compared, an all-zero reference the engine does not match)."""
    if row.status != "compared":
        return None, f"{row.name}: {row.status}"
    if row.nonfinite_engine > row.nonfinite_reference:
        return None, f"{row.name}: {row.nonfinite_engine} non-finite engine values"
    if row.nrmse is not None:
        return float(row.nrmse), None
    if row.n and row.max_abs is None:
        return None, f"{row.name}: nothing finite compared"
    if not row.max_abs:
        return 0.0, None          # all-zero reference matched exactly
    return None, f"{row.name}: the reference is all zero, so nrmse is undefined (max |diff| {row.max_abs:g})"


def worst(errors: dict[str, float | None]) -> float | None:
    """The trial's error: the largest output error, None if any output is unmeasurable."""
    if not errors or any(v is None for v in errors.values()):
        return None
    return max(errors.values())


def sort_key(error: float | None, order: int = 0) -> tuple:
    """Best first: measurable errors ascending, unmeasurable ones last, then model order."""
    return (error is None, error if error is not None else 0.0, order)


@dataclass
class Segment(Plain):
    """One stretch of the model. ``name``: the tap (or model output) it ends at; ``kind``: that
    entry's kind; ``order``: its model order; ``taps``: every tap / output ending at the same node;
    ``nodes``: ONNX node names of the stretch in model order; ``keep``: the nodes the engine keeps in
    fp32 for it (int8 adds the nodes that read the stretch's values, since a QDQ tensor is
    quantized when any node touching it is); ``ops``: op type -> count of ``nodes``;
    ``source``: the Python line of the tap."""
    name: str = ""
    kind: str = "manual"
    order: int | None = None
    taps: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)
    ops: dict[str, int] = field(default_factory=dict)
    source: str | None = None


@dataclass
class Trial(Plain):
    """One verified build. ``round``: 0 the engine as built, 1 one segment at a time (``rank``
    among them, 1 = removes the most error), k > 1 one segment added to round k-1's choice.
    ``segments``: every segment kept in fp32; ``added``: the one this trial adds (None at round 0).
    ``error``: largest output nrmse (None: unmeasurable or the build failed, ``reason`` says why);
    ``outputs``: output name -> nrmse; ``gain``: error of the set it extends minus this error;
    ``seconds``: its build + verify time; ``chosen``: it became the next choice."""
    round: int = 1
    segments: list[str] = field(default_factory=list)
    added: str | None = None
    error: float | None = None
    outputs: dict[str, float | None] = field(default_factory=dict)
    reason: str | None = None
    gain: float | None = None
    rank: int | None = None
    seconds: float = 0.0
    chosen: bool = False


@dataclass
class Proof(Trial):
    """A kept build and its saved verify run (the engine as built, and the final mixed engine).
    ``build``: build folder; ``verify_run``: verify run folder; ``keep_fp32``: ONNX node names kept in
    fp32; ``met``: every output nrmse <= the target; ``swept_error``: the error the same set had
    during the sweep (None when it was not swept), a check that builds are reproducible."""
    build: str | None = None
    verify_run: str | None = None
    keep_fp32: list[str] = field(default_factory=list)
    met: bool = False
    swept_error: float | None = None


@register
@dataclass
class RepairReport(Viewable, Report, Plain):
    """``leapp_lab.repair(reference, onnx, engine=..., target_nrmse=...)`` (module doc).

    ``engine``: the reduced-precision engine repaired; ``target_nrmse``: the bound every model output's
    nrmse must meet (a fraction); ``budget``: the most builds allowed (None: no limit).
    ``segments``: model order; ``baseline``: the engine as built; ``trials``: every other verified
    build (round 1 = the ranking); ``chosen``: segment names kept in fp32 by ``final``; ``final``:
    the proof build (None when the budget left no build for it); ``status`` (STATUSES), ``met``,
    ``message``: one sentence. Cost: ``builds`` (every build, failed ones too), ``seconds`` (wall
    time), ``build_seconds`` (sum of the builds' own times), ``workers``, ``executor``
    (inline | process | dask | a class name), ``address`` (Dask scheduler). ``exit_code``: 0 met, 1 not.
    ``rank`` / ``excess``: how the candidates were ranked (docs/repair.md, "Ranking by excess").
    """
    kind: ClassVar[str] = "repair"
    onnx: str = ""
    npz: str = ""
    reference: str = ""
    engine: str = ""
    target_nrmse: float = 0.01
    budget: int | None = None
    segments: list[Segment] = field(default_factory=list)
    baseline: Proof | None = None
    trials: list[Trial] = field(default_factory=list)
    chosen: list[str] = field(default_factory=list)
    final: Proof | None = None
    status: str = "not-met"
    met: bool = False
    message: str = ""
    builds: int = 0
    seconds: float = 0.0
    build_seconds: float = 0.0
    workers: int = 1
    executor: str = "inline"
    address: str | None = None
    exit_code: int = 1
    warnings: list[str] = field(default_factory=list)
    created: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    #: how candidates are ranked: ``output`` (a sweep build per segment, by the output error left)
    #: or ``excess`` (by each segment's local excess in the baseline's verify --expected, one build
    #: per candidate in that order); ``excess``: segment name -> its largest local excess
    rank: str = "output"
    excess: dict[str, float] = field(default_factory=dict)

    path: Path | None = field(default=None, repr=False, compare=False, metadata={"transient": True})

    # -- model API -----------------------------------------------------------------------------
    def segment(self, name: str) -> Segment:
        for s in self.segments:
            if s.name == name:
                return s
        raise KeyError(f"no segment {name!r} in this repair report; segments: {[s.name for s in self.segments]}")

    def ranking(self) -> list[Trial]:
        """Round 1, best first: each segment alone in fp32 and how much output error that removes
        (``rank="excess"``: every candidate, in the order of its excess)."""
        trials = self.trials if self.rank == "excess" else [t for t in self.trials if t.round == 1]
        return sorted(trials, key=lambda t: (t.rank is None, t.rank or 0))

    def steps(self) -> list[Trial]:
        """The greedy choices: the trial each round chose, in order."""
        return [t for t in self.trials if t.chosen]

    def rounds(self) -> int:
        return max((t.round for t in self.trials), default=0)

    @property
    def before(self) -> float | None:
        return self.baseline.error if self.baseline is not None else None

    @property
    def after(self) -> float | None:
        return self.final.error if self.final is not None else None

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def __bool__(self) -> bool:
        return self.passed

    def records(self) -> list[dict[str, Any]]:
        """One plain dict per segment, in ranking order (segments not swept last, in model order)."""
        by_seg = {t.added: t for t in self.ranking()}

        def key(item):
            i, s = item
            rank = by_seg[s.name].rank if s.name in by_seg else None
            return (rank is None, rank or 0, i)
        segs = [s for _, s in sorted(enumerate(self.segments), key=key)]
        out = []
        for s in segs:
            t = by_seg.get(s.name)
            out.append({"rank": t.rank if t else None, "segment": s.name, "kind": s.kind, "order": s.order,
                        "taps": list(s.taps), "nodes": len(s.nodes), "kept_nodes": len(s.keep),
                        "output_nrmse": t.error if t else None, "gain": t.gain if t else None,
                        "chosen": s.name in self.chosen, "seconds": t.seconds if t else None,
                        "note": (t.reason if t else self._untried(s.name))})
        return out

    def _untried(self, name: str) -> str:
        """Why a segment has no trial: ``--rank excess`` stops at the target and skips a segment
        without an excess; a sweep leaves a segment only when the budget runs out."""
        if self.rank == "excess" and name not in self.excess:
            return "not tried: no local excess"
        if self.rank == "excess" and self.met:
            return "not tried: the target was met first"
        return "not swept (budget)" if self.budget is not None else "not swept"

    def to_dataframe(self):
        """The ranked table: one line per segment (rank, output nrmse with it alone in fp32, gain...)."""
        import pandas as pd
        return pd.DataFrame(self.records(), columns=[c.key for c in COLUMNS])

    def compile_command(self) -> str | None:
        """The ``leapp-lab compile`` line that builds the final engine again."""
        if self.final is None:
            return None
        import shlex
        keep = " ".join(f"--keep-fp32 {shlex.quote(n)}" for n in self.final.keep_fp32)
        return f"leapp-lab compile {shlex.quote(self.onnx)} --engine {self.engine}" + (f" {keep}" if keep else "")

"""Isolation runs: the traced body again with pieces of LEAPP turned off, and what that pins.

The debugging guide's "Isolate the failure": ``dry_run=True`` (trace, no export),
``non_traced=[nodes]`` (those nodes not exported), ``global_patching=False`` (LEAPP's session
patches off; in LEAPP 0.7.2 this also turns off the user's ``patching=`` list) and, when the
session had adapters, ``patching=None`` (the adapters alone off). A dry run gives no verdicts,
so it is compared by its FX graphs, ports and constants and by its FX replay against the recorded
Python. The decision table (docs/deep-checks.md) maps the outcome pattern to ``tracing``,
``export`` or ``patching``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .dc import Plain
from .sections import SectionBase, register_section

DECISIONS = ("tracing", "export", "patching", "none", "inconclusive")

#: The decision table: (row, outcome pattern, decision). The first row that matches decides
#: (leapp_lab.deep.isolation.decide; docs/deep-checks.md prints the same table).
DECISION_TABLE = (
    (1, "the trace compiled and every sample passed", "none"),
    (2, "no_adapters (patching=None) compiles and every sample passes", "patching"),
    (3, "global_patching_off compiles and every sample passes", "patching"),
    (4, "the dry run is refused / raises, or traces another graph (FX graphs, ports or constants "
        "differ from the trace's)", "tracing"),
    (5, "the dry run's FX replay disagrees with the recorded Python on some sample", "tracing"),
    (6, "the trace was refused at compile and non_traced (the failing nodes unexported) compiles",
     "export"),
    (7, "the dry run's FX replay agrees with the recorded Python everywhere, and some sample of the "
        "trace fails", "export"),
    (8, "anything else", "inconclusive"),
)


@dataclass
class IsolationRun(Plain):
    label: str                         # baseline | dry_run | non_traced | global_patching_off | no_adapters
    options: dict[str, Any] = field(default_factory=dict)   # what was changed
    ran: bool = True                   # False: not applicable (see note)
    status: str | None = None          # the graph's status: compiled | dry-run | refused | error
    verdict: str | None = None         # pass | fail | error | skipped
    error: str | None = None
    nodes: dict[str, str] = field(default_factory=dict)     # node -> verdict
    failing: list[str] = field(default_factory=list)        # "node/port/sample" failing validation
    fx_mismatch: list[str] = field(default_factory=list)    # "node/port/sample" where FX replay ≠ recorded
    hazards: list[str] = field(default_factory=list)        # hazard kinds
    same_trace: bool | None = None     # FX graphs, ports and constants equal to the baseline's
    trace_diff: list[str] = field(default_factory=list)     # what differs from the baseline
    time_s: float | None = None
    run_dir: str | None = None
    note: str | None = None


@register_section
@dataclass
class IsolationResult(SectionBase, Plain):
    section: ClassVar[str] = "isolation"
    status: str = "skipped"            # ok | failed | unavailable | skipped
    reason: str | None = None
    decision: str | None = None        # tracing | export | patching | none | inconclusive
    rule: int | None = None            # the row of the decision table that matched
    explanation: str | None = None
    runs: list[IsolationRun] = field(default_factory=list)
    reruns: int = 0                    # how many times the body ran again
    notes: list[str] = field(default_factory=list)

    def run(self, label: str) -> IsolationRun:
        for r in self.runs:
            if r.label == label:
                return r
        raise KeyError(f"no isolation run {label!r}; runs: {[r.label for r in self.runs]}")

    def to_dataframe(self):
        import pandas as pd
        cols = ["label", "options", "ran", "status", "verdict", "failing", "fx_mismatch", "same_trace",
                "hazards", "error", "time_s"]
        rows = []
        for r in self.runs:
            row = {k: getattr(r, k) for k in cols}
            row["failing"], row["fx_mismatch"] = len(r.failing), len(r.fx_mismatch)
            row["hazards"] = ", ".join(r.hazards)
            rows.append(row)
        return pd.DataFrame(rows, columns=cols)

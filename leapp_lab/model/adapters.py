"""Adapter checks: every ``leapp.FunctionPatch`` against the function it replaces.

While tracing, LEAPP calls the replacement instead of the original function (only when an argument
is being traced, so in practice on a node's first pass; re-entries call the original). The export
is built from the replacement, so an adapter that does not compute what the original computes is
a bug no validation of the export can reveal on the first sample. leapp_lab keeps the arguments
of every call made during the trace and, after the session, runs both the adapter and the
original on them and on perturbed copies.

An adapter that disagrees is also reported as the hazard ``adapter-mismatch`` (docs/hazards.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from .dc import Plain
from .sections import SectionBase, register_section


@dataclass
class AdapterCase(Plain):
    """One set of arguments: a call captured during the trace, or a perturbed copy of it."""
    case: str                          # "captured 0", "perturbed 0 (noise)", ...
    passed: bool | None = None         # same structure, shapes, dtypes and allclose(rtol, atol)
    max_abs: float | None = None       # max |adapter − original| over every returned array
    adapter_shapes: list[list[int]] = field(default_factory=list)
    original_shapes: list[list[int]] = field(default_factory=list)
    adapter_dtypes: list[str] = field(default_factory=list)
    original_dtypes: list[str] = field(default_factory=list)
    error: str | None = None           # one side raised, or the results cannot be compared


@dataclass
class AdapterCheck(Plain):
    function: str                      # "module.function" being replaced
    replacement: str                   # the adapter's qualified name
    node: str | None = None            # the node being traced when it was called
    calls: int = 0                     # calls captured during the trace
    passed: bool | None = None         # every case passed (None: nothing to compare)
    max_abs: float | None = None
    worst_case: str | None = None
    cases: list[AdapterCase] = field(default_factory=list)
    error: str | None = None


@register_section
@dataclass
class AdapterResult(SectionBase, Plain):
    section: ClassVar[str] = "adapters"
    status: str = "skipped"            # ok | diverged | failed | unavailable | skipped
    reason: str | None = None
    rtol: float | None = None
    atol: float | None = None
    adapters: list[AdapterCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dataframe(self):
        """One row per adapter and case."""
        import pandas as pd
        cols = ["function", "replacement", "node", "case", "passed", "max_abs", "adapter_shapes",
                "original_shapes", "adapter_dtypes", "original_dtypes", "error"]
        rows = []
        for a in self.adapters:
            for c in a.cases or [None]:
                row = {"function": a.function, "replacement": a.replacement, "node": a.node}
                if c is None:
                    row.update(case=None, passed=a.passed, max_abs=a.max_abs, error=a.error)
                else:
                    row.update({k: getattr(c, k) for k in cols[3:]})
                rows.append(row)
        return pd.DataFrame(rows, columns=cols)

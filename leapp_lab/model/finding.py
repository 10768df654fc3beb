"""The finding: what a report says first, in one to three sentences, computed here once so that the
text output, the widget, the offline report, the static notebook view and ``report.finding`` say
the same (docs/report.md "The finding").

``finding_of(report)`` dispatches on ``report.kind`` to one function per kind (trace:
``finding_trace``; verify and compare: ``finding_verify``; repair, build and prepare: here). Each
returns a ``Finding``: its ``text`` (``report.finding``), its ``status`` and the ``rows`` it names.

``status`` is the colour the views give it, the same rule everywhere (Deliver 3 of issue 21):
``fail`` (red) a defect the finding names, ``warn`` (amber) diverged but within what precision
explains (or a hazard on rows that pass), ``pass`` (green) every row passes / the target is met.
``rows``: the row names the text cites, verbatim, in the order they appear: the views make each
one a link that selects its row.

Plain data and sentences only: nothing here computes a metric (every number was stored in the
report when it was made).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .numfmt import fmt

#: ``Finding.status``: the colours of every view (red, amber, green)
STATUSES = ("fail", "warn", "pass")


@dataclass
class Finding:
    """``text``: one to three sentences; ``status``: STATUSES; ``rows``: the row names the text
    cites (each appears in ``text`` verbatim)."""
    text: str
    status: str = "pass"
    rows: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"finding status {self.status!r}: one of {', '.join(STATUSES)}")
        self.rows = [r for i, r in enumerate(self.rows) if r and r in self.text and r not in self.rows[:i]]


def ratio(x: float | None) -> str:
    """A ratio as the findings write it: ``70×``, ``4.2×``, ``1.05×``."""
    if x is None:
        return "–"
    if x >= 10:
        return f"{x:.0f}×"
    return f"{x:.2g}×" if x < 1 else f"{x:.3g}×"


def names(items: list[str], most: int = 4) -> str:
    """``a``, ``a and b``, ``a, b and c``, ``a, b, c, d and 3 more``."""
    items = list(items)
    if len(items) > most:
        return ", ".join(items[:most]) + f" and {len(items) - most} more"
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def num(x: Any) -> str:
    return fmt(x, "num")


# -- repair, build, prepare ---------------------------------------------------------------------------
def repair_finding(r: Any) -> Finding:
    """Met or not, the segments kept, output error before → after, the builds, the command."""
    kept = list(r.chosen)
    n_seg = len(r.segments)
    before, after, target = r.before, r.after, r.target_nrmse
    cmd = r.compile_command()
    if r.status == "already-met":
        return Finding(f"Target already met: the {r.engine} engine as built has output NRMSE {num(before)} "
                       f"≤ {num(target)}, so no segment needs fp32 ({plural(r.builds, 'build')}).", "pass")
    if r.final is None:       # why there is no final build: the budget, or no segment helped
        budget = f"the budget of {plural(r.budget or 0, 'build')}"
        why = (f"no segment kept in fp32 lowered the output error ({plural(r.builds, 'build')})"
               if not kept and r.trials else
               f"{budget} left no room to sweep a segment (at least 3: the baseline, one sweep build and "
               f"the final build); raise --budget" if not kept else
               f"{budget} left none to build and verify the best set found ({names(kept)}) on its own; "
               f"raise --budget")
        return Finding(f"Target not met: {why}. The engine as built has output NRMSE {num(before)} against "
                       f"the target {num(target)}.", "fail", [])
    what = (f"keeping {len(kept)} of {plural(n_seg, 'segment')} in fp32 ({names(kept)})" if kept
            else "keeping no segment in fp32")
    built = f"{plural(r.builds, 'build')}" + (f", budget {r.budget}" if r.budget is not None else "")
    if r.met:
        text = (f"Target met: {what} brings the output NRMSE from {num(before)} to {num(after)} "
                f"≤ {num(target)}, measured on its own build ({built}).")
        status = "pass"
    else:
        text = (f"Target not met: the best set found, {what}, brings the output NRMSE from {num(before)} "
                f"to {num(after)}, above the target {num(target)} ({built}).")
        status = "fail"
    if cmd:
        text += f" Rebuild it: {cmd}"
    return Finding(text, status, kept)


def build_finding(b: Any) -> Finding:
    taps = list(b.taps)
    unbound = [t.name for t in taps if t.binding == "unbound"]
    unc = [t.name for t in taps if t.binding == "uncompared"]
    text = f"{b.engine} build with {plural(len(taps), 'tap')}"
    if unbound:
        text += f"; {len(unbound)} removed by the conversion (fused away), first {unbound[0]}"
    if unc:
        text += f"; {len(unc)} exposed without a reference, first {unc[0]}"
    text += "."
    ob = b.observer
    if ob.checked and ob.outputs_agree is False:
        return Finding(text + " The taps change the engine: its outputs differ from the untapped build's.",
                       "fail", unbound[:1] + unc[:1])
    return Finding(text, "warn" if unbound else "pass", unbound[:1] + unc[:1])


def prepare_finding(p: Any) -> Finding:
    unc = list(p.uncompared) if hasattr(p, "uncompared") else []
    text = f"Prepared {plural(len(p.outputs), 'output')} and {plural(len(p.taps), 'tap')} of {p.model}"
    if unc:
        first = unc[0]
        name = getattr(first, "name", str(first))
        why = getattr(first, "uncompared_reason", None)
        text += f"; {len(unc)} without a reference, first {name}" + (f" ({why})" if why else "")
    return Finding(text + ".", "warn" if unc else "pass", [getattr(u, "name", str(u)) for u in unc[:1]])


def _verify(r: Any) -> Finding:
    from .finding_verify import verify_finding
    return verify_finding(r)


def _compare(r: Any) -> Finding:
    from .finding_verify import compare_finding
    return compare_finding(r)


def _trace(r: Any) -> Finding:
    from .finding_trace import trace_finding
    return trace_finding(r)


#: report kind -> the function that words its finding
FINDERS: dict[str, Callable[[Any], Finding]] = {
    "trace": _trace, "verify": _verify, "compare": _compare, "repair": repair_finding,
    "build": build_finding, "prepare": prepare_finding,
}


def finding_of(report: Any) -> Finding:
    """The ``Finding`` of any report (by its ``kind``); a kind without a finder says what it is."""
    fn = FINDERS.get(getattr(report, "kind", ""))
    if fn is None:
        return Finding(f"A {getattr(report, 'kind', '') or type(report).__name__} report.", "pass")
    return fn(report)

"""The verdict of a trace report: one judgement of every result the run holds.

A run can hold LEAPP's validation, hazards, a replay (captured, fresh, on engines), a parity run
and the nodes built and verified on engines (``--engine``). Each is turned into ``Evidence`` here,
and the verdict is the first evidence in ``PRECEDENCE`` order: a failure outranks a hazard note, and
a check that was asked for and diverged or could not run is never a pass. The finding
(``finding_trace``), the view's status and badges and ``leapp-lab run``'s exit status read this one
verdict, so they cannot disagree (docs/report.md, "How the finding is decided").

Plain data: nothing here computes a metric; every number was stored when the run was made.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .dc import Plain

#: (evidence kind, status, what it means), most decisive first: the verdict is the first kind that
#: has evidence. ``fail``: a defect (red, ``run`` exits 1); ``warn``: a note or a divergence that
#: precision may explain (amber, exit 0); ``pass``: every check that ran agrees (green).
PRECEDENCE: tuple[tuple[str, str, str], ...] = (
    ("not-compiled", "fail", "LEAPP refused the trace, the traced code raised, or no graph was compiled"),
    ("validation", "fail", "an exported node disagrees with what Python recorded on a sample"),
    ("node-error", "fail", "LEAPP's validation of a node raised"),
    ("replay", "fail", "the requested replay of the exported pipeline diverged or could not run"),
    ("parity", "fail", "the requested fresh-input parity diverged or could not run"),
    # the engines are a finer look asked for on top of LEAPP's own checks: what they find is never
    # green, but it leaves `run`'s exit status to validation, replay and parity (docs/trace.md)
    ("engine-failed", "warn", "a node or the replay could not be built or run on a requested engine"),
    ("engine-diverged", "warn", "a node or the replay diverges on a requested engine (precision or a "
                                "defect: verify --expected tells them apart)"),
    ("hazard", "warn", "every check agrees, but a hazard of the LEAPP guides is present"),
    ("nothing-validated", "warn", "no recorded sample was compared"),
    ("pass", "pass", "every check that ran agrees and no hazard is present"),
)
RANK = {kind: i for i, (kind, _, _) in enumerate(PRECEDENCE)}
STATUS_OF = {kind: status for kind, status, _ in PRECEDENCE}
_BAD = ("diverged", "failed")


@dataclass
class Evidence(Plain):
    """One result the verdict weighed: its ``kind`` (PRECEDENCE), the graph, where (a row, a node,
    an engine) and why in a few words."""
    kind: str
    graph: str | None = None
    where: str | None = None
    why: str | None = None
    status: str = ""

    def __post_init__(self) -> None:
        self.status = STATUS_OF[self.kind]


@dataclass
class TraceVerdict(Plain):
    """``status``: fail | warn | pass; ``decided_by``: the evidence kind that decided it;
    ``evidence``: every result weighed, most decisive first."""
    status: str = "pass"
    decided_by: str = "pass"
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """``leapp-lab run``'s exit status for it (before --no-fail): 1 on a defect, else 0."""
        return 1 if self.status == "fail" else 0

    def first(self, kind: str | None = None) -> Evidence | None:
        return next((e for e in self.evidence if kind is None or e.kind == kind), None)


def _engine_evidence(g: Any) -> list[Evidence]:
    out = []
    for n in g.nodes:
        for e in getattr(n, "engines", None) or []:
            if e.status == "failed":
                out.append(Evidence("engine-failed", g.name, f"{n.name} on {e.engine}", e.error))
            elif e.status == "diverged":
                out.append(Evidence("engine-diverged", g.name, f"{n.name} on {e.engine}",
                                    f"first divergent {e.first_divergent}" if e.first_divergent else None))
    replay = g.section("replay")
    for e in getattr(replay, "engines", None) or []:
        if e.status == "failed":
            out.append(Evidence("engine-failed", g.name, f"replay on {e.engine}", e.reason))
        elif e.status == "diverged":
            out.append(Evidence("engine-diverged", g.name, f"replay on {e.engine}", e.reason))
    return out


def not_evidence(g: Any) -> set[tuple[str, int]]:
    """(node, sample) pairs whose checks are no evidence either way: LEAPP never recorded the sample
    (its zero placeholder, the unfilled-cache hazard), so every port of that node on that sample
    compared something against nothing."""
    out = {(c.node, c.sample) for c in g.checks if getattr(c, "placeholder", False)}
    for h in g.hazards:
        if h.kind == "unfilled-cache" and h.node:
            out |= {(h.node, k) for k in h.samples}
    return out


def evidence_samples(g: Any, node: Any) -> list[int]:
    """The samples of ``node`` that LEAPP really recorded (every sample when none is known to be a
    placeholder); a node's builds are verified and scored on these only."""
    skip = not_evidence(g)
    real = [k for k in range(node.samples) if (node.name, k) not in skip]
    return real or list(range(node.samples))


def evidence_checks(g: Any) -> list[Any]:
    """The checks that count: every check but those on samples LEAPP never recorded."""
    skip = not_evidence(g)
    return [c for c in g.checks if (c.node, c.sample) not in skip]


def graph_evidence(g: Any) -> list[Evidence]:
    """Every result of one graph that bears on the verdict, most decisive first."""
    ev: list[Evidence] = []
    if g.status in ("refused", "error") and not g.checks:
        ev.append(Evidence("not-compiled", g.name, None, g.error))
    failing = [c for c in evidence_checks(g) if c.passed is False]
    if failing:
        c = failing[0]
        ev.append(Evidence("validation", g.name, f"{c.node}/{c.port}/{c.sample}",
                           f"{len(failing)} failing check{'s' if len(failing) != 1 else ''}"))
    for n in g.nodes:
        # LEAPP's own node verdict "fail" is not used: it counts the placeholder samples too
        if n.verdict == "error":
            ev.append(Evidence("node-error", g.name, n.name, n.error))
    for name in ("replay", "parity"):
        sec = g.section(name)
        if getattr(sec, "status", None) in _BAD:
            ev.append(Evidence(name, g.name, sec.status, getattr(sec, "reason", None)))
    ev += _engine_evidence(g)
    for h in g.hazards:
        ev.append(Evidence("hazard", g.name, "/".join(x for x in (h.node, h.port) if x) or None, h.kind))
    if not g.checks and g.status not in ("refused", "error"):
        ev.append(Evidence("nothing-validated", g.name, None, g.status))
    return sorted(ev, key=lambda e: RANK[e.kind])


def graph_verdict(g: Any) -> TraceVerdict:
    """The verdict of one graph alone."""
    ev = graph_evidence(g)
    return TraceVerdict(ev[0].status, ev[0].kind, ev) if ev else TraceVerdict("pass", "pass", [])


def trace_verdict(report: Any) -> TraceVerdict:
    graphs = list(getattr(report, "graphs", []) or [])
    if not graphs:
        err = (getattr(report, "script_error", None) or "").strip().splitlines()
        e = Evidence("not-compiled", None, None, err[-1] if err else "no graph was traced")
        return TraceVerdict("fail", e.kind, [e])
    ev = [e for g in graphs for e in graph_evidence(g)]
    # stable: within one kind, graphs keep their order
    ev.sort(key=lambda e: RANK[e.kind])
    if not ev:
        return TraceVerdict("pass", "pass", [])
    return TraceVerdict(ev[0].status, ev[0].kind, ev)

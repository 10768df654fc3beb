"""Plain-text rendering of a repair report (terminals, ``str(report)``). Reads fields only."""
from __future__ import annotations

from leapp_lab.model.finding import plural
from leapp_lab.model.repair import table_columns

from .finding import lead
from .numfmt import fmt
from .text_verify import _table

_LEFT = ("text", "status", "bool")


def render_repair(report) -> str:
    r = report
    verdict = {"met": "MET", "already-met": "MET (already)", "not-met": "NOT MET"}.get(r.status, r.status)
    lines = [f"repair [{r.onnx}] engine={r.engine}  target nrmse {fmt(r.target_nrmse)}: {verdict}",
             r.message]
    lines.append(f"output nrmse: before {fmt(r.before)}  after {fmt(r.after)}"
                 + ("" if r.final is not None else "  (no final build)"))
    if r.baseline is not None and r.baseline.outputs:
        per = ", ".join(f"{k} {fmt(v)} -> {fmt((r.final.outputs if r.final else {}).get(k))}"
                        for k, v in r.baseline.outputs.items())
        lines.append(f"  per output: {per}")
    recs = r.records()
    if r.trials:
        cols = table_columns()
        body = [[_cell(x[c.key], c.fmt) for c in cols] for x in recs]
        lines.append("")
        if r.rank == "excess":
            lines.append("candidates by their local excess in the baseline (largest first), each added to the "
                         "set chosen so far; output NRMSE = with that set in fp32 (gain = removed)")
            lines.append("  excess: " + ", ".join(f"{k} {fmt(v, 'x')}" for k, v in
                                                  sorted(r.excess.items(), key=lambda kv: -kv[1])[:8]))
        else:
            lines.append("round 1: each segment alone in fp32, ranked by the output nrmse left (gain = removed)")
        lines += _table([c.label for c in cols], body, [c.fmt in _LEFT for c in cols])
    steps = r.steps()
    if r.rank != "excess" and (len(steps) > 1 or r.rounds() > 1):
        lines.append("")
        lines.append("greedy rounds (each adds the segment that lowers the error most):")
        for t in steps:
            n = sum(1 for x in r.trials if x.round == t.round)
            lines.append(f"  round {t.round}: + {t.added} -> nrmse {fmt(t.error)}  ({plural(n, 'build')})")
        tried = [x for x in r.trials if x.round == r.rounds() and not x.chosen]
        if tried and not any(x.chosen for x in r.trials if x.round == r.rounds()):
            lines.append(f"  round {r.rounds()}: no segment lowered the error further")
    lines.append("")
    lines.append(f"cost: {plural(r.builds, 'build')} in {fmt(r.seconds)} s on {plural(r.workers, 'worker')} ({r.executor}"
                 + (f" {r.address}" if r.address else "") + f"); the builds took {fmt(r.build_seconds)} s in all")
    if r.baseline is not None and r.baseline.build:
        lines.append(f"baseline build: {r.baseline.build}  verify run: {r.baseline.verify_run}")
    if r.final is not None and r.final is not r.baseline:
        lines.append(f"final build: {r.final.build}  verify run: {r.final.verify_run}")
        cmd = r.compile_command()
        if cmd:
            lines.append(f"rebuild it: {cmd}")
    for w in r.warnings:
        lines.append(f"warning: {w}")
    if r.path:
        lines.append(f"run folder: {r.path}")
    return lead(report, "\n".join(lines))


def _cell(v, kind: str) -> str:
    if isinstance(v, list):
        return ", ".join(map(str, v))
    if kind == "bool":
        return "yes" if v else ""
    return fmt(v, kind)

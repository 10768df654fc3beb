"""``leapp_lab.isolate(trace_report, body)``: isolation runs and the decision they support.

The body is traced again (``deep/body.py``) with:

- ``dry_run``: ``dry_run=True``: traced, nothing exported, no verdict. Compared with the trace by
  its FX graphs, ports and constants, and by its FX replay against the recorded Python;
- ``non_traced``: ``non_traced=[the failing nodes]``: those nodes are not exported;
- ``global_patching_off``: ``global_patching=False``: LEAPP's session patches off (in LEAPP 0.7.2
  this also turns off the ``patching=`` list);
- ``no_adapters``: ``patching=None`` (only when the trace had adapters): LEAPP's own patches on,
  the user's adapters off.

``decide`` applies the decision table (first matching row; docs/deep-checks.md).
"""
from __future__ import annotations

import time
from pathlib import Path


from leapp_lab.model.isolation import IsolationResult, IsolationRun
from leapp_lab.model.jsonio import load_npz
from leapp_lab.model.trace import GraphReport

from .body import Body, RandomState, deep_dir, pick_graph
from .common import Progress, report_progress

# (label, what it changes, the leapp.start overrides)
RUNS = ("dry_run", "non_traced", "global_patching_off", "no_adapters")


def _arrays_of(graph: GraphReport) -> dict:
    p = Path(graph.run_dir) / "arrays.npz" if graph.run_dir else None
    try:
        return load_npz(p) if p is not None and p.is_file() else {}
    except Exception:
        return {}


def fx_mismatches(graph: GraphReport, arrays: dict) -> list[str]:
    """``node/port/sample`` where the FX replay of the trace disagrees with the recorded Python
    (allclose with the check's rtol/atol, NaN equal to NaN; placeholders ignored)."""
    from leapp_lab.numerics.checks import allclose
    out = []
    for c in graph.checks:
        if c.placeholder:
            continue
        fx, rec = arrays.get(f"{c.node}/{c.port}/{c.sample}/fx"), arrays.get(f"{c.node}/{c.port}/{c.sample}/recorded")
        if fx is None or rec is None:
            continue
        if not allclose(fx, rec, c.rtol, c.atol):
            out.append(c.row_id)
    return out


def trace_signature(graph: GraphReport) -> dict[str, dict]:
    """Per node: FX code, output ports and input port names (as traced), constants."""
    sig = {}
    for n in graph.nodes:
        fx = n.fx
        sig[n.name] = {
            "code": fx.code.strip() if fx else None,
            "outputs": sorted((p.traced_name or p.name, p.dtype, tuple(p.shape or ())) for p in n.outputs()),
            "inputs": {p.traced_name or p.name for p in n.inputs()},
            "constants": (sorted(fx.weights), [(x.name, [repr(v) for v in x.literals]) for x in fx.nodes if x.literals])
            if fx else None,
        }
    return sig


def compare_traces(base: GraphReport, other: GraphReport) -> list[str]:
    """What differs between two traces of the same body (empty: the same trace)."""
    a, b = trace_signature(base), trace_signature(other)
    diff = []
    if set(a) != set(b):
        diff.append(f"nodes {sorted(a)} vs {sorted(b)}")
    for name in sorted(set(a) & set(b)):
        x, y = a[name], b[name]
        if x["code"] is not None and y["code"] is not None and x["code"] != y["code"]:
            diff.append(f"node {name!r}: the FX graph differs")
        if x["outputs"] != y["outputs"]:
            diff.append(f"node {name!r}: output ports differ")
        if not x["inputs"] <= y["inputs"]:     # export may drop inputs the dry run keeps
            diff.append(f"node {name!r}: input ports differ ({sorted(x['inputs'] - y['inputs'])} missing)")
        if x["constants"] is not None and y["constants"] is not None and x["constants"] != y["constants"]:
            diff.append(f"node {name!r}: constants differ (weights or literals)")
    return diff


def summarize(label: str, options: dict, graph: GraphReport | None, error: str | None,
              base: GraphReport | None = None, time_s: float | None = None) -> IsolationRun:
    r = IsolationRun(label=label, options=dict(options), time_s=time_s)
    if graph is None:
        from .exporters import narrow_error
        r.status, r.verdict = "error", "error"
        r.error = narrow_error(error) or "the body compiled no graph of this name"
        return r
    from .exporters import narrow_error
    r.status, r.verdict, r.error = graph.status, graph.verdict, narrow_error(graph.error or error)
    r.nodes = {n.name: n.verdict for n in graph.nodes}
    r.failing = [c.row_id for c in graph.checks if c.passed is False and not c.placeholder]
    r.fx_mismatch = fx_mismatches(graph, _arrays_of(graph))
    r.hazards = sorted({h.kind for h in graph.hazards})
    r.run_dir = graph.run_dir
    if base is not None and graph.status not in ("refused", "error") and base.status not in ("error",):
        r.trace_diff = compare_traces(base, graph)
        r.same_trace = not r.trace_diff
    return r


def _passes(r: IsolationRun | None) -> bool:
    return bool(r is not None and r.ran and r.status == "compiled" and r.verdict == "pass" and not r.failing)


def decide(runs: list[IsolationRun]) -> tuple[str, int, str]:
    """(decision, table row, explanation) from the runs (docs/deep-checks.md, "Decision table")."""
    by = {r.label: r for r in runs}
    base, dry = by.get("baseline"), by.get("dry_run")
    nt, gp, na = by.get("non_traced"), by.get("global_patching_off"), by.get("no_adapters")
    if base is None:
        return "inconclusive", 8, "no baseline run"
    if _passes(base):
        return "none", 1, "the trace compiled and every sample passed: there is no failure to isolate"
    if _passes(na):
        return "patching", 2, ("with the FunctionPatch adapters off (patching=None, LEAPP's own "
                               "patches on) the failure goes away: an adapter is at fault. Check it "
                               "against the function it replaces (the adapters section) and that it "
                               "traces (no Python branch on a tensor, no .item())")
    if _passes(gp):
        return "patching", 3, ("with global_patching=False (LEAPP's session patches off, which in "
                               "LEAPP 0.7.2 also turns off the patching= list) the failure goes away: "
                               "a LEAPP patch or an adapter is involved")
    if dry is not None and dry.ran:
        if dry.status in ("refused", "error"):
            return "tracing", 4, (f"even without export (dry_run) LEAPP refuses or the body raises: "
                                  f"{(dry.error or '').splitlines()[0] if dry.error else dry.status}")
        if dry.same_trace is False:
            return "tracing", 4, ("the dry run traced another graph than the trace ("
                                  + "; ".join(dry.trace_diff[:4]) + "): tracing depends on something "
                                  "that changes between runs")
        if dry.fx_mismatch:
            return "tracing", 5, (f"without export the FX replay of the trace already disagrees with "
                                  f"the recorded Python on {', '.join(dry.fx_mismatch[:6])}"
                                  f"{' …' if len(dry.fx_mismatch) > 6 else ''}: the trace is wrong, no "
                                  f"exporter can fix it")
    if base.status == "refused" and nt is not None and nt.ran and nt.status == "compiled":
        return "export", 6, (f"the trace compiles once {', '.join(nt.options.get('non_traced', []))} "
                             f"is not exported: that node's export fails (see the exporter matrix)")
    if dry is not None and dry.ran and dry.status == "dry-run" and not dry.fx_mismatch and base.failing:
        return "export", 7, ("the FX replay of the trace agrees with the recorded Python on every "
                             "sample, the exported model does not: the export backend computes "
                             "something else (see the exporter matrix)")
    return "inconclusive", 8, "no row of the decision table matches; read the runs side by side"


def _failing_nodes(g: GraphReport) -> list[str]:
    return [n.name for n in g.nodes if n.verdict in ("fail", "error")]


def run_isolation(graphs: list[GraphReport], body: Body, non_traced: list[str] | None = None,
                  had_adapters: bool | None = None, progress: Progress | None = None
                  ) -> dict[str, IsolationResult]:
    """The isolation section of every graph in ``graphs`` from one series of re-runs of ``body``."""
    fail_nodes = list(non_traced) if non_traced else sorted({n for g in graphs for n in _failing_nodes(g)})
    adapters = bool(had_adapters) if had_adapters is not None else any(
        (g.options or {}).get("patching") is not None for g in graphs)
    plan = [("dry_run", {"dry_run": True})]
    if fail_nodes:
        plan.append(("non_traced", {"non_traced": fail_nodes}))
    plan.append(("global_patching_off", {"global_patching": False}))
    if adapters:
        plan.append(("no_adapters", {"patching": None}))
    results = {g.name: IsolationResult(status="ok") for g in graphs}
    for g in graphs:
        results[g.name].runs.append(summarize("baseline", {}, g, None, None))
        results[g.name].runs[0].note = "the trace itself (not run again)"
    caller = RandomState.capture()
    try:
        for i, (label, opts) in enumerate(plan):
            report_progress(progress, f"isolation: {label} ({i + 1}/{len(plan)}; "
                                      f"{body.description} runs again)", i, len(plan))
            t0 = time.perf_counter()
            rr = body.run(deep_dir(graphs[0], "isolation") / label, start_overrides=opts)
            for g in graphs:
                r = summarize(label, {k: (list(v) if isinstance(v, tuple) else v) for k, v in opts.items()},
                              pick_graph(rr.graphs, g.name), rr.error, base=g, time_s=time.perf_counter() - t0)
                results[g.name].runs.append(r)
                results[g.name].reruns += 1
    finally:
        caller.restore()
    report_progress(progress, "isolation: done", len(plan), len(plan))
    for g in graphs:
        res = results[g.name]
        if not fail_nodes:
            res.runs.append(IsolationRun(label="non_traced", ran=False,
                                         note="no failing node to leave unexported"))
        if not adapters:
            res.runs.append(IsolationRun(label="no_adapters", ran=False,
                                         note="the trace had no patching= adapters"))
        res.decision, res.rule, res.explanation = decide(res.runs)
        res.notes.append(f"{body.description} ran again {res.reruns} time(s) (one per isolation run), "
                         f"each in a fresh LEAPP session and folder ({deep_dir(g, 'isolation')})")
    return results

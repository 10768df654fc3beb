"""The pipeline on an engine, node by node (``pipeline_engines`` of a trace; docs/schema-trace.md).

The nodes' engine builds run wired together on the trace's cached samples, in pipeline order
(LEAPP's completion order, in which every data edge runs forward):

* **local**: each node fed the *recorded* inputs: its build's own ``sample_outputs.npz`` (compile
  ran the engine on exactly those);
* **cumulative**: each node fed its upstream nodes' *engine* outputs of the same sample (data
  edges); graph inputs, feedback inputs (state, a later node's output fed back) and the outputs of
  nodes LEAPP did not export keep their recorded values.

Per node / output port, against the values the Python produced while tracing, over every sample
LEAPP really recorded for every node (a zero placeholder is no reference: model/trace_verdict.py),
in float64 (the verify kernel): ``nrmse`` (cumulative), ``local_nrmse``, ``own_share =
min(1, local_nrmse / nrmse)``. The first node (pipeline order) whose port diverges under verify's
rule, cumulatively, is ``first_divergent_node``. A node whose build failed, or that lies below one,
gets null metrics.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from leapp_lab.model.trace import GraphReport, PipelineEngine, PipelinePort


def _metrics(engine: list[np.ndarray], recorded: list[np.ndarray]) -> Any:
    from leapp_lab.model.metrics import Metrics
    from leapp_lab.numerics.metrics import diff_sums
    total = None
    for e, r in zip(engine, recorded):
        s = diff_sums(np.asarray(e), np.asarray(r))
        total = s if total is None else total.merge(s)
    return Metrics().fill(total) if total is not None else None


def _share(local: float | None, cum: float | None) -> float | None:
    if local is None or cum is None:
        return None
    if cum == 0.0:
        return 1.0
    return min(1.0, local / cum)


def pipeline_engines(graph: GraphReport, builds: dict, engines: list[str]) -> list[PipelineEngine]:
    """One PipelineEngine per engine; ``builds``: ``{(node, engine): NodeBuild}``."""
    from leapp_lab.model.jsonio import load_npz
    from leapp_lab.model.verify_rules import DivergenceRule
    from leapp_lab.model.trace_verdict import evidence_samples, not_evidence
    arrays = load_npz(Path(graph.run_dir) / "arrays.npz")
    skip = not_evidence(graph)
    n = min((nr.samples for nr in graph.nodes), default=0)
    # one sample list for the whole pipeline, so cumulative values line up node after node
    ks = [k for k in range(n) if not any((nr.name, k) in skip for nr in graph.nodes)] or list(range(n))
    at = {nr.name: {k: i for i, k in enumerate(evidence_samples(graph, nr))} for nr in graph.nodes}
    rule = DivergenceRule()
    out = []
    for engine in engines:
        pe = PipelineEngine(engine=engine)
        cum: dict[str, list[np.ndarray] | None] = {}     # "node/port" -> engine outputs per sample
        for nr in graph.nodes:
            ports = [p.name for p in nr.outputs()]
            recorded = {p: [arrays[f"{nr.name}/{p}/{k}/recorded"] for k in ks] for p in ports}
            if not nr.backend:
                cum.update({f"{nr.name}/{p}": recorded[p] for p in ports})   # Python-only: as recorded
                continue
            b = builds.get((nr.name, engine))
            runs = _node_runs(graph, nr, b, cum, arrays, ks, at[nr.name])
            for p in ports:
                local = runs[1].get(p) if runs else None
                cval = runs[0].get(p) if runs and runs[0] is not None else None
                cum[f"{nr.name}/{p}"] = cval
                m_cum = _metrics(cval, recorded[p]) if cval is not None else None
                m_loc = _metrics(local, recorded[p]) if local is not None else None
                row = PipelinePort(node=nr.name, port=p,
                                   nrmse=m_cum.nrmse if m_cum else None,
                                   local_nrmse=m_loc.nrmse if m_loc else None)
                row.own_share = _share(row.local_nrmse, row.nrmse)
                row.diverged = bool(rule.diverges(m_cum)) if m_cum is not None else None
                pe.nodes.append(row)
                if pe.first_divergent_node is None and row.diverged:
                    pe.first_divergent_node = nr.name
        out.append(pe)
    return out


def _node_runs(graph: GraphReport, nr: Any, b: Any, cum: dict, arrays: dict, ks: list[int],
               at: dict[int, int]):
    """(cumulative outputs {port: per-sample} or None, local outputs {port: per-sample}) of one node
    on its engine build, over samples ``ks``; ``at``: sample -> its place in the build's npz; None
    when the build is missing."""
    from leapp_lab.model.jsonio import load_npz
    if b is None or b.build is None:
        return None
    folder = Path(b.build.path)
    ports = [p.name for p in nr.outputs()]
    sample_outputs = load_npz(folder / "sample_outputs.npz")
    local = {p: [sample_outputs[p][at[k]] for k in ks] for p in ports if p in sample_outputs}
    feeds, complete = [], True
    src_of = {e.dst: e.src for e in graph.edges if e.kind == "data"}
    for i, k in enumerate(ks):
        feed = {}
        for p in nr.inputs():
            src = src_of.get(f"{nr.name}/{p.name}")
            if src is not None and src in cum:
                vals = cum[src]
                if vals is None:            # an upstream build failed: no cumulative value
                    complete = False
                    break
                feed[p.name] = np.ascontiguousarray(vals[i])
            else:
                feed[p.name] = np.ascontiguousarray(arrays[f"{nr.name}/{p.name}/{k}/input"])
        if not complete:
            break
        feeds.append(feed)
    if not complete:
        return None, local
    from leapp_lab.engines import get_engine
    runner = get_engine(b.engine).runner(folder / b.build.artifact)
    outs: dict[str, list[np.ndarray]] = {p: [] for p in ports}
    with runner:
        for feed in feeds:
            got = runner.run(feed, ports)
            for p in ports:
                outs[p].append(got[p])
    return outs, local

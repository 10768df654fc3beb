"""Text of the nodes on engines (``--engine``): each node's verify per engine, and the pipeline
run on each engine node by node (docs/trace.md "Inside the nodes")."""
from __future__ import annotations

from typing import Any

from leapp_lab.model.numfmt import fmt


def _pct(x: float | None) -> str:
    return fmt(x) if x is None else fmt(100 * x) + "%"     # the one number format; "–" when missing


def render_node_engines(g: Any) -> list[str]:
    nodes = [n for n in g.nodes if n.engines]
    if not nodes and not g.pipeline_engines:
        return []
    L = ["  inside the nodes (prepared from the trace, compiled, verified tap by tap):"]
    w = max(len(n.name) for n in nodes) if nodes else 4
    for n in nodes:
        for e in n.engines:
            if e.status in ("failed", "unavailable"):
                what = f"{e.status}: {(e.error or '').splitlines()[0] if e.error else ''}"
            else:
                what = e.status + (f", first divergent {e.first_divergent}" if e.first_divergent else "")
                what += f", worst local {e.worst_local}" if e.worst_local else ""
            L.append(f"    {n.name:<{w}}  {e.engine:<9} {what}")
            if e.verify_run:
                L.append(f"    {'':<{w}}  {'':<9} verify run {e.verify_run}")
    for pe in g.pipeline_engines:
        first = pe.first_divergent_node
        L.append(f"  the pipeline on {pe.engine}, node by node (nrmse fed the engine's upstream outputs / "
                 f"fed the recorded inputs, own share): first divergent node {first or _none(g, pe)}")
        wp = max([len(f"{r.node}/{r.port}") for r in pe.nodes] + [4])
        for r in pe.nodes:
            L.append(f"    {r.node + '/' + r.port:<{wp}}  {_pct(r.nrmse):>9}  {_pct(r.local_nrmse):>9}  "
                     f"own {_pct(r.own_share)}"
                     # the node's diverging ports only (a 0% argmax port beside them is no divergence)
                     + ("  <- first divergent" if r.node == first and r.diverged is not False else ""))
    return L


def _none(g: Any, pe: Any) -> str:
    """'none', or why the answer is unknown: a node without a build leaves no cumulative value to
    it and below it (was a plain 'none' beside rows of '–')."""
    gone = list(dict.fromkeys(r.node for r in pe.nodes if r.nrmse is None))
    if not gone:
        return "none"
    failed = [n.name for n in g.nodes for e in n.engines if e.engine == pe.engine and not e.build]
    why = (f"{', '.join(failed)} {'has' if len(failed) == 1 else 'have'} no {pe.engine} build (see above)" if failed
           else f"no {pe.engine} value reached {', '.join(gone)}")
    if len(gone) == len({r.node for r in pe.nodes}):
        return f"unknown: {why}"
    return f"none among the nodes that ran; unknown from {gone[0]} on: {why}"

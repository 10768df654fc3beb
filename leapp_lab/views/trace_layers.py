"""The trace view's *Layers* panels and pipeline table (``--engine``; docs/trace.md "Inside the nodes").

Per node and engine, the node's verify run (``nodes[].engines[].verify_run``) drawn by the verify
view itself: its view dict (``views.verify_view``, the same accuracy table in model order, first
divergent row, local error, histogram panel, error growth and accuracy graph) embedded in the trace
view dict under ``nodes[NAME].layers``, so the widget and the offline report draw it with the verify
view's own components. Embedded views are bounded: one above ``MAX_LAYERS_BYTES`` drops its
per-sample histograms (each row keeps the one over all samples), and one still above it, or past
``MAX_TOTAL_BYTES`` for the whole trace, is left out with the command that opens it.

The pipeline table (``pipeline_engines``): per graph and engine, its nodes / ports in pipeline
order, with the first divergent node marked.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_LAYERS_BYTES = 4_000_000       # one node's embedded verify view (JSON)
MAX_TOTAL_BYTES = 16_000_000       # every node's, in one trace view


def _size(d: Any) -> int:
    return len(json.dumps(d, separators=(",", ":"), default=str))


def _located(path: str | None, run_dir: str | None) -> Path | None:
    """The verify run folder, also after the trace run folder moved: its part from ``nodes/``
    on, under the run folder where it is now."""
    if not path:
        return None
    p = Path(path)
    if p.is_dir():
        return p
    parts = p.parts
    if run_dir and "nodes" in parts:
        q = Path(run_dir).joinpath(*parts[parts.index("nodes"):])
        if q.is_dir():
            return q
    return None


def _only_overall(view: dict) -> dict:
    """The view with each row's histogram over all samples only (no per-sample ones, no inputs)."""
    rows = [{**r, "samples": r["samples"][:1], "default_sample": r["samples"][0]["key"] if r["samples"] else None}
            for r in view["table"]["rows"]]
    return {**view, "table": {**view["table"], "rows": rows}, "inputs": {},
            "notes": list(view.get("notes") or []) + ["per-sample histograms left out of this report "
                                                      "(size); open the verify run for them"]}


def layer_budget() -> list[int]:
    """The bytes the embedded Layers views of one trace view may take, all nodes together."""
    return [MAX_TOTAL_BYTES]


def layer_views(node: Any, run_dir: str | None, budget: list[int]) -> list[dict[str, Any]]:
    """One Layers entry per engine of ``node``: the engine's facts and its verify view dict (or
    ``view`` None with ``omitted`` saying why). ``budget``: [bytes left for the whole trace]."""
    from leapp_lab.model.base import load

    from .verify_view import verify_view
    out = []
    for e in node.engines:
        entry = {"engine": e.engine, "status": e.status, "first_divergent": e.first_divergent,
                 "worst_local": e.worst_local, "error": e.error, "verify_run": e.verify_run,
                 "view": None, "omitted": None}
        out.append(entry)
        if not e.verify_run:
            entry["omitted"] = e.error or "no verify run"
            continue
        run = _located(e.verify_run, run_dir)
        if run is None:
            entry["omitted"] = f"the verify run {e.verify_run} is not there any more"
            continue
        try:
            view = verify_view(load(run))
        except Exception as exc:  # noqa: BLE001 - a broken run folder says so in its panel, never the view
            entry["omitted"] = f"the verify run {run} could not be read: {exc}"
            continue
        size = _size(view)
        if size > MAX_LAYERS_BYTES:
            view = _only_overall(view)
            size = _size(view)
        if size > min(MAX_LAYERS_BYTES, budget[0]):
            entry["omitted"] = (f"its verify view is {size / 1e6:.1f} MB, too large to embed here; "
                                f"open it: leapp-lab report {run} -o layers.html")
            continue
        budget[0] -= size
        entry["view"] = {**view, "title": f"Layers of {node.name} on {e.engine} · {view['title']}"}
    return out


def pipeline_view(graphs: list[Any], labels: list[str]) -> list[dict[str, Any]]:
    """The pipeline-on-engine tables: one per graph and engine, rows in pipeline order."""
    out = []
    for g, label in zip(graphs, labels):
        for pe in g.pipeline_engines:
            out.append({"graph": label, "engine": pe.engine, "first_divergent_node": pe.first_divergent_node,
                        "nodes": [{**r.to_dict(), "first_divergent": r.node == pe.first_divergent_node
                                   and r.diverged is not False}     # its diverging ports, not a 0% one
                                  for r in pe.nodes]})
    return out

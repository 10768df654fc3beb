"""A traced LEAPP node as prepare's model source: its saved graph with its taps, its samples.

``verify --expected`` of a ``prepare --from-trace`` build re-runs the node in low precision
(``lowprec_values``); the node comes back from the trace's run folder, as prepare rebuilt it:
no user code runs (the graph is data, fxio/store.py), so it runs in this process.
"""
from __future__ import annotations

import copy
from pathlib import Path

from .loader import ModelSource


def traced_node_source(run_dir: str | Path, node: str, taps: list[str] | None) -> ModelSource:
    """The node ``node`` of the trace run ``run_dir``, with the manual ``taps`` put back.
    Raises ValueError (a UserError where the run folder is at fault) naming what is missing."""
    from leapp_lab.fxio.node_model import TRACED_HINT, node_model, quiet_calls
    from leapp_lab.model import load
    from leapp_lab.model.jsonio import load_npz

    from .marker import tap_at

    run_dir = Path(run_dir)
    report = load(run_dir)
    g = report.graphs[0]
    nr = g.node(node)
    nm = node_model(run_dir, nr, load_npz(run_dir / "arrays.npz"), tap_at, list(taps or []))
    # a fresh copy per call: lowprec casts the model it gets, and later exports an fp32 one again
    return ModelSource(label=f"node {node!r} of trace run {run_dir}", base_dir=None, raised_hint=TRACED_HINT,
                       make_model=lambda: quiet_calls(copy.deepcopy(nm.gm)), get_samples=lambda: list(nm.samples),
                       output_names=list(nm.output_names))

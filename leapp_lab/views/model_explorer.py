"""Node data for Google Model Explorer: a verify report's numbers overlaid on the engine's ONNX graph.

``to_model_explorer(report, directory)`` writes one JSON file per metric in the format
``model_explorer_onnx.torch_utils.save_node_data_from_verification_info`` writes for torch.onnx's
verification (``model_explorer.node_data_builder.ModelNodeData``): ``{graph id: {"results": {key:
{"value": number}}, "thresholds": [{"value", "bgColor"}]}}``. Load the engine's ONNX
(``<build>/engine.onnx``) in Model Explorer with the ONNX adapter (``pip install
model-explorer-onnx``), then each file through "Load node data".

Each compared row is keyed by the tensor the engine exposes (``bound_to``, else the tap's tensor;
Model Explorer matches it against a node's output tensor names), by its producing node's name, and a
model output also by the adapter's ``[value] NAME`` output node.
A metric with no value (every pair non-finite) is left out of that metric's file; the
``_nonfinite`` file holds the NaN/Inf counts and ``_diverged`` the verdicts (1 diverged, 0 ok).
Only JSON is written: Model Explorer is not needed here.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

#: the graph id torch.onnx's exporter gives the main graph (LEAPP and prepare export through it)
DEFAULT_GRAPH_ID = "main_graph"
#: metric -> thresholds (upper bounds and colours, green to red), as torch's verification files use
THRESHOLDS = {
    "nrmse": [(1e-4, "#388e3c"), (1e-3, "#8bc34a"), (1e-2, "#ffa000"), (1e-1, "#ff5722"), (1e300, "#d32f2f")],
    "max_abs": [(1e-5, "#388e3c"), (1e-4, "#8bc34a"), (1e-3, "#c8e6c9"), (1e-2, "#ffa000"), (1, "#ff5722"),
                (100, "#d32f2f")],
    "mape": [(0.1, "#388e3c"), (1, "#8bc34a"), (10, "#ffa000"), (100, "#ff5722"), (1e300, "#d32f2f")],
    "nonfinite": [(0, "#388e3c"), (1e300, "#6a1b9a")],
    "diverged": [(0, "#388e3c"), (1, "#d32f2f")],
}
METRICS = ("nrmse", "max_abs", "mape", "nonfinite", "diverged")


def _keys(r: Any) -> list[str]:
    keys = [r.bound_to or r.tensor or r.name]
    if r.producer_node and r.producer_node not in keys:
        keys.append(r.producer_node)
    if r.kind == "output":           # the adapter's node for a graph output, as torch's files key it
        keys.append(f"[value] {r.name}")
    return keys


def _value(r: Any, metric: str) -> float | None:
    if metric == "diverged":
        return 1 if r.diverged else 0
    v = getattr(r, metric)
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


def node_data(report: Any, metric: str, graph_id: str = DEFAULT_GRAPH_ID) -> dict[str, Any]:
    """The ModelNodeData dict of one metric (compared rows only)."""
    if metric not in THRESHOLDS:
        raise KeyError(f"no Model Explorer overlay for {metric!r}; choose one of {list(METRICS)}")
    results: dict[str, dict[str, float]] = {}
    for r in report.rows:
        if r.status != "compared":
            continue
        v = _value(r, metric)
        if v is None:
            continue
        for k in _keys(r):
            results[k] = {"value": v}
    return {graph_id: {"results": results,
                       "thresholds": [{"value": v, "bgColor": c} for v, c in THRESHOLDS[metric]]}}


def to_model_explorer(report: Any, directory: str | os.PathLike, model_name: str = "model",
                      graph_id: str | None = DEFAULT_GRAPH_ID, metrics: tuple[str, ...] = METRICS) -> list[Path]:
    """Write ``<directory>/<model_name>_<metric>.json`` for each metric; returns the paths (the
    registry's ``model_explorer`` renderer of a verify report; ``graph_id`` None: the default).

    As every output of leapp_lab (docs/safety.md): refused (UnsafeOutput) when a file would land on
    or inside one of the report's inputs (the build, the reference; the run folder itself may hold
    them) or replace a file that is not node data leapp_lab wrote; the files are written together,
    all or none."""
    from leapp_lab.model.jsonio import atomic_write_text
    from leapp_lab.model.safepaths import check_outputs, staged

    from .html import _inputs_of, _run_folder
    graph_id = graph_id or DEFAULT_GRAPH_ID
    out = Path(directory)
    paths = [out / f"{model_name}_{m}.json" for m in metrics]
    check_outputs([(p, "node-data", None) for p in paths], _inputs_of(report), inside_ok=_run_folder(report))
    texts = [json.dumps(node_data(report, m, graph_id), indent=2, allow_nan=False) + "\n" for m in metrics]
    with staged(paths) as tmps:
        for t, text in zip(tmps, texts):
            atomic_write_text(t, text)
    return paths

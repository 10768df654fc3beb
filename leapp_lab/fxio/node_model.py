"""A traced LEAPP node as a model again: its saved FX graph, its taps put back, its cached samples.

``node_model(run_dir, node, arrays, tap_fn, taps)`` rebuilds the node's traced graph from the run
folder (``store.load``), puts a ``tap_fn(x, name, file, line)`` call where each wanted tap fired
while LEAPP traced (after the FX node that computed the tapped value; its users then read the tap),
and turns the recorded inputs of every cached sample into forward arguments, in the order of the
graph's placeholders. The graph's inputs and outputs are named after the node's ports as LEAPP's
own export names them (``h`` -> ``h_in`` / ``h_out``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from leapp_lab.model.errors import UnusableInput
from leapp_lab.model.safepaths import check_input_file, present

from . import store


#: what a rebuilt node that raises on a recorded sample means (prepare's message for a failing forward)
TRACED_HINT = ("the node's traced graph (its module.json) does not run on the inputs the trace recorded: "
               "the run folder was edited or damaged; trace the pipeline again")


class NodeModelError(ValueError):
    """The node cannot be rebuilt from its run folder; the message says why and what to do."""


class NodeGraphRefused(NodeModelError):
    """The node's saved graph is not one leapp_lab wrote (a malformed or crafted module.json):
    unusable input, never a finding."""


@dataclass
class NodeModel:
    gm: Any                                 # torch.fx.GraphModule, eval mode
    samples: list[tuple]                    # forward arguments per cached sample
    input_names: list[str]                  # the ONNX inputs: the node's input ports
    output_names: list[str]                 # the ONNX outputs: the node's output ports
    inserted: list[str] = field(default_factory=list)    # taps put back, in firing order
    taps: list[dict] = field(default_factory=list)       # every tap of module.json


def input_arrays(node: Any, arrays: dict, run_dir: Path,
                 samples: list[int] | None = None) -> dict[str, np.ndarray]:
    """``{input port: (samples, ...)}`` of the node's recorded inputs; NodeModelError when the
    run lost them. ``samples``: the sample indices to take (default: all)."""
    return {p.name: _stacked(arrays, node, p.name, "input", run_dir, samples) for p in node.inputs()}


def output_arrays(node: Any, arrays: dict, run_dir: Path,
                  samples: list[int] | None = None) -> dict[str, np.ndarray]:
    """``{output port: (samples, ...)}``: the outputs exactly as the Python returned them."""
    return {p.name: _stacked(arrays, node, p.name, "recorded", run_dir, samples) for p in node.outputs()}


def _stacked(arrays: dict, node: Any, port: str, kind: str, run_dir: Path,
             samples: list[int] | None = None) -> np.ndarray:
    vals = []
    for k in (range(node.samples) if samples is None else samples):
        key = f"{node.name}/{port}/{k}/{kind}"
        if key not in arrays:
            raise NodeModelError(f"{run_dir}: the trace holds no recorded {'input' if kind == 'input' else 'output'} "
                                 f"{port!r} of node {node.name!r} on sample {k} (arrays.npz lost it); "
                                 f"trace the pipeline again")
        vals.append(arrays[key])
    return np.stack(vals)


def quiet_calls(gm: Any) -> Any:
    """``gm`` called as a plain ``nn.Module``. torch.fx's own call wrapper prints the generated
    code around a failing line to stderr before the error propagates, so a node graph that fails
    on a sample put a torch traceback above the one line the CLI prints for it. Each GraphModule
    has a class of its own (a copy gets a new one: call this on copies too), and ``recompile``
    sets the wrapper again, so this is applied after it."""
    import torch
    type(gm).__call__ = torch.nn.Module.__call__
    return gm


def node_model(run_dir: str | Path, node: Any, arrays: dict, tap_fn: Callable | None = None,
               taps: Iterable[str] | None = (), samples: list[int] | None = None) -> NodeModel:
    """``node``: the NodeReport; ``arrays``: the run's arrays.npz; ``taps``: names of the taps to
    put back (None: every tap that marks a value of the traced graph)."""
    import torch
    run_dir = Path(run_dir)
    if not node.saved_graph:
        why = node.saved_graph_error or ("this run was recorded before leapp_lab saved traced graphs; "
                                         "trace the pipeline again")
        raise NodeModelError(f"node {node.name!r}: its traced graph is not in the run folder: {why}")
    folder = run_dir / node.saved_graph
    for name in (store.MODULE_FILE, store.WEIGHTS_FILE):
        if not present(folder / name):
            raise NodeModelError(f"node {node.name!r}: its traced graph cannot be rebuilt: {folder / name}: "
                                 f"missing; trace the pipeline again")
        try:        # checked before store.load opens them: a FIFO there would block the load for ever
            check_input_file(folder / name, f"a file of node {node.name!r}'s traced graph")
        except UnusableInput as exc:    # NotAFile stays one: refused wherever it is met
            raise type(exc)(f"node {node.name!r}: its traced graph cannot be rebuilt: {exc}; trace the "
                            f"pipeline again") from None
    try:
        gm, doc = store.load(folder)
    except store.FxStoreError as exc:
        raise NodeGraphRefused(f"node {node.name!r}: its traced graph cannot be rebuilt: {exc}") from None
    ins = node.inputs()
    by_traced = {(p.traced_name or p.name): p.name for p in ins}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    names = []
    for ph in placeholders:
        port = by_traced.get(str(ph.target))
        if port is None:
            raise NodeModelError(f"node {node.name!r}: its traced graph reads the input {ph.target!r}, which "
                                 f"LEAPP dropped from the exported node ({', '.join(node.dropped_inputs) or '-'}); "
                                 f"a re-export of this node is not supported")
        names.append(port)
    outs = [p.name for p in node.outputs()]
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    got = out_node.args[0]
    n_out = len(got) if isinstance(got, (tuple, list)) else 1
    if n_out != len(outs):
        raise NodeModelError(f"node {node.name!r}: its traced graph returns {n_out} values, the node has "
                             f"{len(outs)} outputs ({', '.join(outs)})")
    inserted = _put_taps(gm, doc.get("taps") or [], tap_fn, taps) if tap_fn is not None else []
    gm.recompile()
    quiet_calls(gm)
    stacked = input_arrays(node, arrays, run_dir, samples)
    feeds = [tuple(torch.from_numpy(np.ascontiguousarray(stacked[n][i])) for n in names)
             for i in range(node.samples if samples is None else len(samples))]
    return NodeModel(gm.eval(), feeds, names, outs, inserted, list(doc.get("taps") or []))


def _put_taps(gm: Any, recorded: list[dict], tap_fn: Callable, wanted: Iterable[str] | None) -> list[str]:
    """Insert ``tap_fn(value, name, file, line)`` after each wanted tap's FX node; its users then
    read the tap's result (what tap() returned in the Python)."""
    want = None if wanted is None else set(wanted)
    nodes = {n.name: n for n in gm.graph.nodes}
    last_ph = [n for n in gm.graph.nodes if n.op == "placeholder"][-1:]
    current: dict[str, Any] = {}          # FX node name -> the value that now stands for it
    done = []
    for t in recorded:
        if want is not None and t["name"] not in want:
            continue
        fx = nodes.get(t.get("fx_node") or "")
        if fx is None:
            continue
        value = current.get(fx.name, fx)
        anchor = value if value.op != "placeholder" else last_ph[0]
        file, _, line = str(t.get("site") or "?:0").rpartition(":")
        with gm.graph.inserting_after(anchor):
            new = gm.graph.call_function(tap_fn, (value, t["name"], file or "?",
                                                  int(line) if line.isdigit() else 0))
        value.replace_all_uses_with(new, delete_user_cb=lambda u, _new=new: u is not _new)
        current[fx.name] = new
        if value.op == "placeholder":
            last_ph = [new]
        done.append(t["name"])
    return done

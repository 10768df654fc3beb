"""A node's traced FX graph (``node.m``) saved in the run folder, and rebuilt in a later process.

``prepare --from-trace`` re-exports a node from the graph LEAPP traced (with debug taps, op taps,
or for a TorchScript / pt2 node), in a fresh process, from the run folder alone. LEAPP keeps that
graph only in memory, and pickling it (``torch.save`` of a GraphModule, ``torch.export.save``)
would make reading a run folder execute whatever it holds. So the graph is written as plain data:

    nodes/<node index>/module.json      {"version", "nodes": [{op, name, target, args, kwargs}],
                                         "attrs": {name: "buffer" | "parameter" | "constant"},
                                         "taps": [{name, site, fx_node}]}
    nodes/<node index>/weights.safetensors   the get_attr tensors (no pickle)

and rebuilt node by node with ``torch.fx.Graph.create_node``. The file is data: every node is
checked against the schema (schema.py) before the graph exists. A call target is a key into the
closed list of tensor operations of ops.py, never a name looked up in a module; every argument is
a typed value (numbers, plain mode strings, shapes, slices, node references, torch enums), so a
crafted file can call tensor math and nothing else.

A graph holding anything else (a call_module, a non-tensor attribute, an operation outside the
list, an argument of another type) is not saved; ``saved_graph_error`` says why and prepare
reports it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import ops, schema
from .schema import FxStoreError

FORMAT_VERSION = 1
NODES_DIR = "nodes"
MODULE_FILE = "module.json"
WEIGHTS_FILE = "weights.safetensors"
_ATTR_KINDS = ("parameter", "buffer", "constant")

__all__ = ["FxStoreError", "FORMAT_VERSION", "NODES_DIR", "MODULE_FILE", "WEIGHTS_FILE", "encode",
           "save", "write", "collect", "read_taps", "load"]


def _qualified(target: Any) -> str:
    from torch.fx.node import _get_qualified_name
    return _get_qualified_name(target)


# -- save --------------------------------------------------------------------------------------

def _attr(gm: Any, target: str) -> Any:
    obj = gm
    for p in target.split("."):
        obj = getattr(obj, p)
    return obj


def encode(gm: Any, taps: list[dict] | None = None) -> tuple[dict, dict]:
    """(module.json content, {attr: tensor}) of a GraphModule; FxStoreError when it holds
    something this format does not carry. What is written is checked as a load would check it,
    so a graph that saves also loads."""
    import torch
    params = dict(gm.named_parameters())
    buffers = dict(gm.named_buffers())
    nodes, attrs, tensors = [], {}, {}
    for n in gm.graph.nodes:
        if n.op == "call_function":
            target = _qualified(n.target)
            if ops.function(target) is not n.target:
                raise FxStoreError(f"call target {target!r} is not a tensor operation this format "
                                   f"allows (leapp_lab/fxio/ops.py lists them)")
        elif n.op == "call_method":
            target = str(n.target)
            if target not in ops.TENSOR_METHODS:
                raise FxStoreError(f"method {target!r} is not a tensor method this format allows")
        elif n.op in ("placeholder", "output"):
            target = str(n.target)
        elif n.op == "get_attr":
            target = str(n.target)
            value = _attr(gm, target)
            if not isinstance(value, torch.Tensor):
                raise FxStoreError(f"get_attr {target!r} holds a {type(value).__name__}, not a tensor")
            attrs[target] = ("parameter" if target in params else "buffer" if target in buffers
                             else "constant")
            tensors[target] = value.detach().to("cpu").contiguous().clone()
        else:
            raise FxStoreError(f"a {n.op} node ({n.name})")
        nodes.append({"op": n.op, "name": n.name, "target": target,
                      "args": [schema.encode_value(a) for a in n.args],
                      "kwargs": [[k, schema.encode_value(v)] for k, v in n.kwargs.items()]})
    doc = {"version": FORMAT_VERSION, "nodes": nodes, "attrs": attrs, "taps": list(taps or [])}
    try:
        _check(doc, Path(MODULE_FILE), lambda env, name, *_: name)
    except FxStoreError as exc:         # the graph as traced, not a file anyone edited
        raise FxStoreError(str(exc).removeprefix(f"{MODULE_FILE}: ").removesuffix(_AGAIN)) from None
    return doc, tensors


def save(folder: Path, gm: Any, taps: list[dict] | None = None) -> None:
    write(folder, *encode(gm, taps))


def write(folder: Path, doc: dict, tensors: dict) -> None:
    from safetensors.torch import save_file
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MODULE_FILE).write_text(json.dumps(doc, allow_nan=False))
    save_file(tensors, str(folder / WEIGHTS_FILE))


def collect(graph: Any, live: dict[str, Any], recorder: Any = None) -> dict[str, tuple[dict, dict]]:
    """The traced graph of every exported node of ``graph`` (a GraphReport being built), encoded,
    keyed by node name; sets ``saved_graph`` (run-relative folder) or ``saved_graph_error`` on each
    node. ``live``: LEAPP's node objects by name; ``recorder``: the session's NodeTapRecorder."""
    out = {}
    if graph.status not in ("compiled",):
        return out
    for nr in graph.nodes:
        node = live.get(nr.name)
        gm = getattr(node, "m", None)
        if nr.backend is None or gm is None:
            continue
        present = {n.name for n in gm.graph.nodes}
        taps = [{"name": r.name, "site": r.site,
                 "fx_node": r.fx_node if r.fx_node in present else None}
                for r in (recorder.records(nr.name) if recorder is not None else [])]
        try:
            out[nr.name] = encode(gm, taps)
        except FxStoreError as exc:
            nr.saved_graph_error = f"the traced graph cannot be saved: {exc}"
            continue
        except Exception as exc:  # never lose the report over a graph we cannot describe
            nr.saved_graph_error = f"the traced graph cannot be saved: {type(exc).__name__}: {exc}"
            continue
        nr.saved_graph = f"{NODES_DIR}/{nr.index}"
    return out


# -- load --------------------------------------------------------------------------------------

def read_taps(folder: str | Path) -> list[dict]:
    """The taps a saved node graph records (``{name, site, fx_node}``), without loading weights."""
    path = Path(folder) / MODULE_FILE
    doc = _read_doc(Path(folder))
    taps = doc.get("taps") if isinstance(doc, dict) else None
    if not _taps_ok(taps):
        raise FxStoreError(f"{path}: field 'taps': expected a list of {{name, site, fx_node}} strings{_AGAIN}")
    return taps


def _taps_ok(taps: Any) -> bool:
    return isinstance(taps, list) and all(
        isinstance(t, dict) and isinstance(t.get("name"), str) and
        all(t.get(k) is None or isinstance(t.get(k), str) for k in ("site", "fx_node")) for t in taps)


def _read_doc(folder: Path) -> Any:
    """module.json: a regular file, of a bounded size, valid JSON (``read_json``)."""
    from leapp_lab.model.errors import UserError
    from leapp_lab.model.jsonio import read_json
    try:
        return read_json(folder / MODULE_FILE)
    except FileNotFoundError:
        raise FxStoreError(f"{folder / MODULE_FILE}: missing") from None
    except (OSError, UserError) as exc:
        raise FxStoreError(f"unreadable ({exc})") from None


def load(folder: str | Path) -> tuple[Any, dict]:
    """(GraphModule, module.json content) rebuilt from a saved node folder. Every node is checked
    against the schema (schema.py: listed targets, typed arguments, names that are names) before
    the graph exists, so nothing but tensor operations can run when the module is called."""
    from safetensors.torch import load_file
    from safetensors import SafetensorError
    folder = Path(folder)
    doc = _read_doc(folder)
    try:
        tensors = load_file(str(folder / WEIGHTS_FILE))
    except FileNotFoundError as exc:
        raise FxStoreError(f"{exc.filename}: missing") from None
    except (OSError, ValueError, SafetensorError) as exc:
        raise FxStoreError(f"{folder / WEIGHTS_FILE}: not a safetensors file leapp_lab wrote ({exc})") from None
    try:
        return _rebuild(folder, doc, tensors)
    except (KeyError, TypeError, AttributeError, RuntimeError) as exc:
        raise FxStoreError(f"{folder / MODULE_FILE}: not a node graph leapp_lab wrote "
                           f"({type(exc).__name__}: {exc})") from None


def _check(doc: Any, path: Path, make: Any) -> dict:
    """Every node of ``doc`` checked against the schema (schema.record), in order; ``make(env,
    name, op, target, args, kwargs)`` builds each one. Returns the env: node name -> built."""
    if not isinstance(doc, dict) or doc.get("version") != FORMAT_VERSION:
        raise FxStoreError(f"{path}: not a version {FORMAT_VERSION} node graph")
    nodes, attrs = doc.get("nodes"), doc.get("attrs", {})
    if not isinstance(nodes, list):
        raise FxStoreError(f"{path}: field 'nodes': expected a list of node records")
    if not isinstance(attrs, dict):
        raise FxStoreError(f"{path}: field 'attrs': expected an object {{name: kind}}")
    for name, kind in attrs.items():
        if not schema.is_name(name, dotted=True) or kind not in _ATTR_KINDS:
            raise FxStoreError(f"{path}: field 'attrs': {name!r}: {kind!r} is not a tensor attribute "
                               f"(a dotted Python name, one of {', '.join(_ATTR_KINDS)}){_AGAIN}")
    if not _taps_ok(doc.get("taps", [])):
        raise FxStoreError(f"{path}: field 'taps': expected a list of {{name, site, fx_node}} "
                           f"strings{_AGAIN}")
    env: dict[str, Any] = {}
    for i, rec in enumerate(nodes):
        try:
            op, name, target, args, kwargs = schema.record(rec, env, set(attrs))
        except schema.Bad as exc:
            field, what = exc.args
            label = rec.get("name") if isinstance(rec, dict) and isinstance(rec.get("name"), str) else None
            where = f"nodes[{i}]" + (f" ({label[:40]!r})" if label else "") + (f": field '{field}'" if field else "")
            raise FxStoreError(f"{path}: {where}: {what}{_AGAIN}") from None
        env[name] = make(env, name, op, target, args, kwargs)
    if not nodes or not isinstance(nodes[-1], dict) or nodes[-1].get("op") != "output" or \
            sum(isinstance(r, dict) and r.get("op") == "output" for r in nodes) != 1:
        raise FxStoreError(f"{path}: field 'nodes': the graph must end in its one output node{_AGAIN}")
    return env


_AGAIN = "; this file was not written by leapp_lab (or was edited): trace the pipeline again"


def _rebuild(folder: Path, doc: dict, tensors: dict) -> tuple[Any, dict]:
    import torch
    import torch.fx as fx
    path = folder / MODULE_FILE
    graph = fx.Graph()
    _check(doc, path, lambda env, name, op, target, args, kwargs:
           graph.create_node(op, target, args, kwargs, name=name))
    root = torch.nn.Module()
    for target, kind in doc.get("attrs", {}).items():
        if target not in tensors:
            raise FxStoreError(f"{folder / WEIGHTS_FILE}: no tensor {target!r}")
        *parents, leaf = target.split(".")
        mod = root
        for p in parents:
            if not isinstance(getattr(mod, p, None), torch.nn.Module):
                if hasattr(mod, p):
                    raise FxStoreError(f"{path}: field 'attrs': {target!r} reaches into a tensor{_AGAIN}")
                mod.add_module(p, torch.nn.Module())
            mod = getattr(mod, p)
        if hasattr(mod, leaf):
            raise FxStoreError(f"{path}: field 'attrs': {target!r} names a module attribute that "
                               f"is not a free name{_AGAIN}")
        t = tensors[target]
        if kind == "parameter":
            mod.register_parameter(leaf, torch.nn.Parameter(t, requires_grad=t.is_floating_point()))
        elif kind == "buffer":
            mod.register_buffer(leaf, t)
        else:
            setattr(mod, leaf, t)
    graph.lint()
    return _quiet_class()(root, graph), doc


_QUIET: Any = None


def _quiet_class() -> Any:
    """A GraphModule whose call raises as any module's does. torch.fx's own call prints the
    generated source and a traceback to stderr before re-raising an error from inside it; a node
    graph that fails in prepare or verify is reported in one line by the caller instead. Copies
    (``copy.deepcopy``) and recompiles keep it."""
    global _QUIET
    if _QUIET is None:
        import torch
        import torch.fx as fx

        class NodeGraphModule(fx.GraphModule):
            def recompile(self) -> Any:
                out = super().recompile()
                type(self).__call__ = torch.nn.Module.__call__
                return out

        _QUIET = NodeGraphModule
    return _QUIET

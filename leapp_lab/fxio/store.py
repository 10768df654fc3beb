"""A node's traced FX graph (``node.m``) saved in the run folder, and rebuilt in a later process.

``prepare --from-trace`` re-exports a node from the graph LEAPP traced (with debug taps, op taps,
or for a TorchScript / pt2 node), in a fresh process, from the run folder alone. LEAPP keeps that
graph only in memory, and pickling it (``torch.save`` of a GraphModule, ``torch.export.save``)
would make reading a run folder execute whatever it holds. So the graph is written as plain data:

    nodes/<node index>/module.json      {"version", "nodes": [{op, name, target, args, kwargs}],
                                         "attrs": {name: "buffer" | "parameter" | "constant"},
                                         "taps": [{name, site, fx_node}]}
    nodes/<node index>/weights.safetensors   the get_attr tensors (no pickle)

and rebuilt node by node with ``torch.fx.Graph.create_node``. A call target is resolved by name
only inside torch's tensor functions (``torch.*``, ``torch.nn.functional``, ``torch._C._nn``,
``torch.ops.aten``, ``torch.Tensor`` methods), ``operator`` and ``math`` and a few builtins, and
never if its name loads, saves, compiles or imports anything: a crafted file can call tensor
math, nothing else. Arguments are JSON values, FX node references and a few torch enums.

A graph holding anything else (a call_module, a non-tensor attribute, an argument of another type)
is not saved; ``unsaved_reason`` says why and prepare reports it.
"""
from __future__ import annotations

import json
import keyword
import math
import operator
import re
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1
NODES_DIR = "nodes"
MODULE_FILE = "module.json"
WEIGHTS_FILE = "weights.safetensors"

_BUILTINS = {"getattr": getattr, "len": len, "int": int, "float": float, "bool": bool, "max": max,
             "min": min, "abs": abs, "round": round, "range": range, "slice": slice, "tuple": tuple,
             "list": list, "pow": pow}
_TORCH_ROOTS = ("torch.nn.functional.", "torch._C._nn.", "torch._C._VariableFunctions.",
                "torch.ops.aten.", "torch.Tensor.", "torch.functional.", "torch.fft.", "torch.linalg.",
                "torch.special.", "torch.")
_DENY = re.compile(r"load|save|librar|hub|compile|jit|import|exec|eval|system|open|file|deploy|"
                   r"package|set_|seed|_dynamo|distributed|cuda|backends|multiprocessing|utils|"
                   r"attrgetter|methodcaller|itemgetter|register|serializ|storage", re.I)
_METHOD = re.compile(r"^[a-z][a-z0-9_]*$")


class FxStoreError(ValueError):
    """A traced graph that cannot be saved or rebuilt; the message says why."""


# -- targets -----------------------------------------------------------------------------------

def _qualified(target: Any) -> str:
    from torch.fx.node import _get_qualified_name
    return _get_qualified_name(target)


def resolve_target(name: str) -> Any:
    """The callable a saved ``call_function`` target names, from the allowed namespaces only."""
    import torch
    if not isinstance(name, str) or _DENY.search(name):
        raise FxStoreError(f"call target {name!r} is not allowed")
    if name.startswith("builtins."):
        fn = _BUILTINS.get(name[len("builtins."):])
        if fn is None:
            raise FxStoreError(f"call target {name!r} is not allowed")
        return fn
    if name.startswith(("_operator.", "operator.")):
        obj: Any = operator
        parts = name.split(".")[1:]
    elif name.startswith("math."):
        obj, parts = math, name.split(".")[1:]
    elif name.startswith(_TORCH_ROOTS):
        obj, parts = torch, name.split(".")[1:]
    else:
        raise FxStoreError(f"call target {name!r} is outside torch, operator and math")
    for p in parts:
        if not p.isidentifier() or (p.startswith("__") and p.endswith("__")):
            raise FxStoreError(f"call target {name!r} is not allowed")
        try:
            obj = getattr(obj, p)
        except AttributeError:
            raise FxStoreError(f"call target {name!r} does not exist in this torch "
                               f"({torch.__version__})") from None
    if not callable(obj) or isinstance(obj, type) and not issubclass(obj, (int, float, bool)):
        raise FxStoreError(f"call target {name!r} is not a function")
    return obj


# -- arguments ---------------------------------------------------------------------------------

def _enc(a: Any) -> Any:
    import torch
    import torch.fx as fx
    if isinstance(a, fx.Node):
        return {"node": a.name}
    if a is None or isinstance(a, (bool, str)):
        return a
    if isinstance(a, int):
        return a
    if isinstance(a, float):
        return a if math.isfinite(a) else {"float": repr(a)}
    if isinstance(a, torch.Size):
        return {"size": [int(x) for x in a]}
    if isinstance(a, tuple):
        return {"tuple": [_enc(x) for x in a]}
    if isinstance(a, list):
        return [_enc(x) for x in a]
    if isinstance(a, dict):
        if not all(isinstance(k, str) for k in a):
            raise FxStoreError(f"a dict argument with non-string keys ({list(a)[:3]})")
        return {"dict": [[k, _enc(v)] for k, v in a.items()]}
    if isinstance(a, slice):
        return {"slice": [_enc(a.start), _enc(a.stop), _enc(a.step)]}
    if a is Ellipsis:
        return {"ellipsis": True}
    if isinstance(a, torch.dtype):
        return {"dtype": str(a).replace("torch.", "")}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, torch.memory_format):
        return {"memory_format": str(a).replace("torch.", "")}
    if isinstance(a, torch.layout):
        return {"layout": str(a).replace("torch.", "")}
    raise FxStoreError(f"an argument of type {type(a).__module__}.{type(a).__qualname__}")


def _torch_enum(kind: str, name: str, cls: type) -> Any:
    import torch
    if not isinstance(name, str) or not name.isidentifier():
        raise FxStoreError(f"bad {kind} {name!r}")
    v = getattr(torch, name, None)
    if not isinstance(v, cls):
        raise FxStoreError(f"bad {kind} {name!r}")
    return v


def _dec(a: Any, env: dict) -> Any:
    import torch
    if a is None or isinstance(a, (bool, int, float, str)):
        return a
    if isinstance(a, list):
        return [_dec(x, env) for x in a]
    if not isinstance(a, dict) or len(a) != 1:
        raise FxStoreError(f"bad argument {a!r}")
    (k, v), = a.items()
    if k == "node":
        if v not in env:
            raise FxStoreError(f"argument refers to unknown node {v!r}")
        return env[v]
    if k == "tuple":
        return tuple(_dec(x, env) for x in v)
    if k == "dict":
        return {str(kk): _dec(vv, env) for kk, vv in v}
    if k == "slice":
        return slice(*(_dec(x, env) for x in v))
    if k == "size":
        return torch.Size([int(x) for x in v])
    if k == "float":
        return float(v) if v in ("inf", "-inf", "nan") else _bad(a)
    if k == "ellipsis":
        return Ellipsis
    if k == "dtype":
        return _torch_enum("dtype", v, torch.dtype)
    if k == "device":
        return torch.device(str(v))
    if k == "memory_format":
        return _torch_enum("memory format", v, torch.memory_format)
    if k == "layout":
        return _torch_enum("layout", v, torch.layout)
    return _bad(a)


def _bad(a: Any) -> Any:
    raise FxStoreError(f"bad argument {a!r}")


# -- save --------------------------------------------------------------------------------------

def _attr(gm: Any, target: str) -> Any:
    obj = gm
    for p in target.split("."):
        obj = getattr(obj, p)
    return obj


def encode(gm: Any, taps: list[dict] | None = None) -> tuple[dict, dict]:
    """(module.json content, {attr: tensor}) of a GraphModule; FxStoreError when it holds
    something this format does not carry."""
    import torch
    params = dict(gm.named_parameters())
    buffers = dict(gm.named_buffers())
    nodes, attrs, tensors = [], {}, {}
    for n in gm.graph.nodes:
        if n.op == "call_function":
            target = _qualified(n.target)
            if resolve_target(target) is not n.target:
                raise FxStoreError(f"call target {target!r} does not resolve to {n.target!r}")
        elif n.op == "call_method":
            target = str(n.target)
            if not _METHOD.match(target) or _DENY.search(target):
                raise FxStoreError(f"method {target!r}")
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
                      "args": [_enc(a) for a in n.args],
                      "kwargs": [[k, _enc(v)] for k, v in n.kwargs.items()]})
    return {"version": FORMAT_VERSION, "nodes": nodes, "attrs": attrs, "taps": list(taps or [])}, tensors


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
    doc = _read_doc(Path(folder))
    taps = doc.get("taps") if isinstance(doc, dict) else None
    if not isinstance(taps, list) or not all(isinstance(t, dict) and isinstance(t.get("name"), str)
                                             for t in taps):
        raise FxStoreError(f"{Path(folder) / MODULE_FILE}: not a node graph")
    return taps


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
    """(GraphModule, module.json content) rebuilt from a saved node folder. Every name FX writes
    into the module's Python source is checked to be a name first (``_name``)."""
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
    if not isinstance(doc, dict) or doc.get("version") != FORMAT_VERSION:
        raise FxStoreError(f"{folder / MODULE_FILE}: not a version {FORMAT_VERSION} node graph")
    try:
        return _rebuild(folder, doc, tensors)
    except (KeyError, TypeError, AttributeError, RuntimeError) as exc:
        raise FxStoreError(f"{folder / MODULE_FILE}: not a node graph leapp_lab wrote "
                           f"({type(exc).__name__}: {exc})") from None


def _name(s: Any, what: str, folder: Path, dotted: bool = False, star: bool = False) -> str:
    """``s`` when it is a plain Python name (``a.b`` with ``dotted``, ``*a`` with ``star``). FX
    writes node names, placeholder and attribute targets and keyword names into the Python source
    of the rebuilt module, so anything else in a crafted module.json would be code that runs."""
    t = s.lstrip("*") if star and isinstance(s, str) and len(s) - len(s.lstrip("*")) <= 2 else s
    parts = t.split(".") if dotted and isinstance(t, str) else [t]
    if not all(isinstance(p, str) and p.isidentifier() and not keyword.iskeyword(p)
               and not (p.startswith("__") and p.endswith("__")) for p in parts):
        raise FxStoreError(f"{folder / MODULE_FILE}: {what} {s!r} is not a Python name; this file was "
                           f"not written by leapp_lab (or was edited): trace the pipeline again")
    return s


def _rebuild(folder: Path, doc: dict, tensors: dict) -> tuple[Any, dict]:
    import torch
    import torch.fx as fx
    root = torch.nn.Module()
    for target, kind in (doc.get("attrs") or {}).items():
        _name(target, "the attribute", folder, dotted=True)
        if target not in tensors:
            raise FxStoreError(f"{folder / WEIGHTS_FILE}: no tensor {target!r}")
        *path, leaf = target.split(".")
        mod = root
        for p in path:
            if not hasattr(mod, p):
                mod.add_module(p, torch.nn.Module())
            mod = getattr(mod, p)
        t = tensors[target]
        if kind == "parameter":
            mod.register_parameter(leaf, torch.nn.Parameter(t, requires_grad=t.is_floating_point()))
        elif kind == "buffer":
            mod.register_buffer(leaf, t)
        else:
            setattr(mod, leaf, t)
    graph = fx.Graph()
    env: dict[str, Any] = {}
    for rec in doc.get("nodes") or []:
        op, target = rec["op"], rec["target"]
        _name(rec["name"], "the node name", folder)
        if op in ("placeholder", "output"):
            _name(target, f"the {op} target", folder, star=op == "placeholder")
        elif op == "get_attr":
            _name(target, "the get_attr target", folder, dotted=True)
        if op == "call_function":
            target = resolve_target(target)
        elif op == "call_method" and (not _METHOD.match(str(target)) or _DENY.search(str(target))):
            raise FxStoreError(f"method {target!r}")
        elif op not in ("placeholder", "output", "get_attr", "call_method"):
            raise FxStoreError(f"a {op} node")
        args = tuple(_dec(a, env) for a in rec.get("args") or [])
        kwargs = {_name(k, "the keyword", folder): _dec(v, env) for k, v in rec.get("kwargs") or []}
        env[rec["name"]] = graph.create_node(op, target, args, kwargs, name=rec["name"])
    graph.lint()
    return fx.GraphModule(root, graph), doc

"""The typed form of one stored FX node (``module.json``'s ``nodes[i]``): what each field may hold.

A stored graph is data. Its call targets come from the closed lists of ``ops.py``, and every
argument is one of these values, checked before anything is built:

    null, true / false, an integer (64-bit), a finite number,
    {"float": "inf" | "-inf" | "nan"},
    a short plain string (a mode or an einsum equation: letters, digits and ``_ ,.-> ()*``; no ``__``),
    [value, ...], {"tuple": [value, ...]}, {"size": [int, ...]},
    {"slice": [start, stop, step]} of null / integers / node references, {"ellipsis": true},
    {"node": "<an earlier node>"},
    {"dtype" | "memory_format" | "layout": "<one of torch's names listed below>"},
    {"device": "cpu" | "cuda:0" | ...}.

Nothing here is callable and no string is looked up anywhere: dtypes and the like come from
tables keyed by the names written below. ``operator`` targets take nodes and numbers only;
``getitem`` / ``setitem`` a node and an index (integers, slices, None, ``...``, nodes, tuples of
those), so no string ever reaches a lookup. A ``call_method`` calls a listed tensor method on a
node. Anything else is an FxStoreError that names the node and the field.
"""
from __future__ import annotations

import keyword
import math
import re
from typing import Any

from . import ops


class FxStoreError(ValueError):
    """A traced graph that cannot be saved or rebuilt; the message says why."""


class Bad(Exception):
    """One field of one node is not what the schema allows: (field, what is wrong)."""


OPS = ("placeholder", "get_attr", "call_function", "call_method", "output")
_DTYPES = ("float32 float64 float16 bfloat16 complex32 complex64 complex128 uint8 uint16 uint32 "
           "uint64 int8 int16 int32 int64 bool float8_e4m3fn float8_e5m2 float8_e4m3fnuz "
           "float8_e5m2fnuz qint8 quint8 qint32").split()
_MEMORY_FORMATS = ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")
_LAYOUTS = ("strided",)
_DEVICE = re.compile(r"^(cpu|cuda|meta|mps|xpu)(:[0-9]{1,3})?$")
_STRING = re.compile(r"^[A-Za-z0-9_ ,.\->()*]{0,128}$")
_MAX_DEPTH = 16
_INT_BOUND = 2 ** 63


def _enums() -> dict[str, dict[str, Any]]:
    import torch
    table = {}
    for kind, names, cls in (("dtype", _DTYPES, torch.dtype), ("memory_format", _MEMORY_FORMATS,
                                                                   torch.memory_format),
                             ("layout", _LAYOUTS, torch.layout)):
        table[kind] = {n: v for n in names if isinstance(v := getattr(torch, n, None), cls)}
    return table


_ENUMS: dict[str, dict[str, Any]] | None = None


def enums() -> dict[str, dict[str, Any]]:
    global _ENUMS
    if _ENUMS is None:
        _ENUMS = _enums()
    return _ENUMS


def is_name(s: Any, dotted: bool = False) -> bool:
    """A plain Python name (``a.b`` with ``dotted``), not a keyword, not a dunder: FX writes it
    into the Python source of the rebuilt module."""
    parts = s.split(".") if dotted and isinstance(s, str) else [s]
    return all(isinstance(p, str) and p.isidentifier() and not keyword.iskeyword(p)
               and not (p.startswith("__") and p.endswith("__")) for p in parts)


def plain_string(s: str) -> bool:
    return bool(_STRING.match(s)) and "__" not in s


# -- values ------------------------------------------------------------------------------------

def value(a: Any, env: dict, field: str, depth: int = 0) -> Any:
    """The Python value a stored argument stands for; ``env``: node name -> what it rebuilds to."""
    if depth > _MAX_DEPTH:
        raise Bad(field, f"nested deeper than {_MAX_DEPTH}")
    if a is None or isinstance(a, (bool, float)):
        return a
    if isinstance(a, int):
        return _int(a, field)
    if isinstance(a, str):
        if not plain_string(a):
            raise Bad(field, f"the string {_short(a)} is not a plain mode or equation")
        return a
    if isinstance(a, list):
        return [value(x, env, f"{field}[{i}]", depth + 1) for i, x in enumerate(a)]
    k, v = _tagged(a, field)
    if k == "node":
        return node(a, env, field)
    if k == "tuple":
        return tuple(value(x, env, f"{field}.tuple[{i}]", depth + 1) for i, x in enumerate(_list(v, field)))
    if k == "size":
        import torch
        return torch.Size([_int(x, f"{field}.size[{i}]") for i, x in enumerate(_list(v, field))])
    if k == "slice":
        return _slice(v, env, field)
    if k == "float":
        if v not in ("inf", "-inf", "nan"):
            raise Bad(field, f"{{'float': {_short(v)}}}: expected 'inf', '-inf' or 'nan'")
        return float(v)
    if k == "ellipsis":
        if v is not True:
            raise Bad(field, "{'ellipsis': ...} must be true")
        return Ellipsis
    if k == "device":
        if not isinstance(v, str) or not _DEVICE.match(v):
            raise Bad(field, f"the device {_short(v)} is not a device name such as 'cpu'")
        import torch
        return torch.device(v)
    if k in ("dtype", "memory_format", "layout"):
        table = enums()[k]
        if not isinstance(v, str) or v not in table:
            raise Bad(field, f"the {k.replace('_', ' ')} {_short(v)} is not one of torch's "
                             f"({', '.join(sorted(table))})")
        return table[v]
    raise Bad(field, f"an argument tagged {_short(k)} (expected node, tuple, size, slice, float, "
                     f"ellipsis, dtype, device, memory_format or layout)")


def node(a: Any, env: dict, field: str) -> Any:
    """A reference to an earlier node: ``{"node": name}``."""
    if not (isinstance(a, dict) and len(a) == 1 and "node" in a):
        raise Bad(field, f"expected a node reference {{'node': NAME}}, got {_short(a)}")
    name = a["node"]
    if not isinstance(name, str) or name not in env:
        raise Bad(field, f"refers to {_short(name)}, which is no earlier node of the graph")
    return env[name]


def number(a: Any, env: dict, field: str) -> Any:
    """A node or a number: what ``operator`` and ``math`` targets take."""
    if isinstance(a, dict) and set(a) == {"float"}:
        return value(a, env, field)
    if isinstance(a, dict):
        return node(a, env, field)
    if a is None or isinstance(a, str) or isinstance(a, list):
        raise Bad(field, f"expected a node or a number, got {_short(a)}")
    return value(a, env, field)


def index(a: Any, env: dict, field: str, depth: int = 0) -> Any:
    """What may index a node: integers, booleans, None, slices, ``...``, nodes, tuples / lists."""
    if depth > 2:
        raise Bad(field, "an index nested deeper than 2")
    if a is None or isinstance(a, bool):
        return a
    if isinstance(a, int):
        return _int(a, field)
    if isinstance(a, list):
        return [index(x, env, f"{field}[{i}]", depth + 1) for i, x in enumerate(a)]
    if isinstance(a, dict) and len(a) == 1:
        (k, v), = a.items()
        if k == "tuple":
            return tuple(index(x, env, f"{field}.tuple[{i}]", depth + 1) for i, x in enumerate(_list(v, field)))
        if k in ("node", "slice", "ellipsis"):
            return value(a, env, field)
    raise Bad(field, f"expected an index (integers, slices, None, ..., nodes), got {_short(a)}")


def _slice(v: Any, env: dict, field: str) -> slice:
    parts = _list(v, field)
    if len(parts) != 3:
        raise Bad(field, f"a slice holds [start, stop, step], got {len(parts)} items")
    out = []
    for i, x in enumerate(parts):
        f = f"{field}.slice[{i}]"
        if x is None or isinstance(x, bool):
            out.append(x)
        elif isinstance(x, int):
            out.append(_int(x, f))
        else:
            out.append(node(x, env, f))
    return slice(*out)


def _tagged(a: Any, field: str) -> tuple[str, Any]:
    if not isinstance(a, dict) or len(a) != 1:
        raise Bad(field, f"expected a value, a list or a one-key tagged object, got {_short(a)}")
    (k, v), = a.items()
    return k, v


def _list(v: Any, field: str) -> list:
    if not isinstance(v, list):
        raise Bad(field, f"expected a list, got {type(v).__name__} {_short(v)}")
    return v


def _int(x: Any, field: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise Bad(field, f"expected an integer, got {type(x).__name__} {_short(x)}")
    if not -_INT_BOUND <= x < _INT_BOUND:
        raise Bad(field, f"the integer {_short(x)} does not fit in 64 bits")
    return x


def _short(x: Any) -> str:
    r = repr(x)
    return r if len(r) <= 60 else r[:57] + "..."


# -- the save side -----------------------------------------------------------------------------

def encode_value(a: Any) -> Any:
    """The stored form of an argument of a traced graph; FxStoreError for anything else."""
    import torch
    import torch.fx as fx
    if isinstance(a, fx.Node):
        return {"node": a.name}
    if a is None or isinstance(a, bool):
        return a
    if isinstance(a, int):
        return _int_or_refuse(a)
    if isinstance(a, float):
        return a if math.isfinite(a) else {"float": repr(a)}
    if isinstance(a, str):
        if not plain_string(a):
            raise FxStoreError(f"a string argument {_short(a)} that is not a plain mode or equation")
        return a
    if isinstance(a, torch.Size):
        return {"size": [int(x) for x in a]}
    if isinstance(a, tuple):
        return {"tuple": [encode_value(x) for x in a]}
    if isinstance(a, list):
        return [encode_value(x) for x in a]
    if isinstance(a, slice):
        return {"slice": [encode_value(a.start), encode_value(a.stop), encode_value(a.step)]}
    if a is Ellipsis:
        return {"ellipsis": True}
    for kind, cls in (("dtype", torch.dtype), ("memory_format", torch.memory_format),
                      ("layout", torch.layout)):
        if isinstance(a, cls):
            name = next((n for n, v in enums()[kind].items() if v is a), None)
            if name is None:
                raise FxStoreError(f"the {kind} {a} is not one this format carries")
            return {kind: name}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    raise FxStoreError(f"an argument of type {type(a).__module__}.{type(a).__qualname__}")


def _int_or_refuse(a: int) -> int:
    if not -_INT_BOUND <= a < _INT_BOUND:
        raise FxStoreError(f"an integer argument {_short(a)} that does not fit in 64 bits")
    return a


# -- one node ----------------------------------------------------------------------------------

def record(rec: Any, env: dict, attrs: set[str]) -> tuple[str, str, Any, tuple, dict]:
    """(op, name, target, args, kwargs) of a stored node, every field checked; ``env``: the nodes
    before it (name -> rebuilt node), ``attrs``: the tensors the file declares. Raises Bad."""
    if not isinstance(rec, dict):
        raise Bad("", f"expected an object {{op, name, target, args, kwargs}}, got {_short(rec)}")
    op, name, target = rec.get("op"), rec.get("name"), rec.get("target")
    if op not in OPS:
        raise Bad("op", f"{_short(op)} is not one of {', '.join(OPS)}")
    if not is_name(name):
        raise Bad("name", f"{_short(name)} is not a Python name")
    if name in env:
        raise Bad("name", f"a second node named {name!r}")
    args, kwargs = rec.get("args", []), rec.get("kwargs", [])
    if not isinstance(args, list):
        raise Bad("args", f"expected a list, got {type(args).__name__} {_short(args)}")
    if not isinstance(kwargs, list) or not all(isinstance(p, list) and len(p) == 2 for p in kwargs):
        raise Bad("kwargs", f"expected a list of [name, value] pairs, got {_short(kwargs)}")
    for j, (k, _) in enumerate(kwargs):
        if not is_name(k):
            raise Bad(f"kwargs[{j}]", f"the keyword {_short(k)} is not a Python name")
    if len({k for k, _ in kwargs}) != len(kwargs):
        raise Bad("kwargs", "a keyword given twice")
    if op in ("placeholder", "get_attr", "output"):
        target = _plain_node(op, target, args, kwargs, attrs)
        return op, name, target, tuple(value(a, env, f"args[{j}]") for j, a in enumerate(args)), {}
    if op == "call_method":
        if not isinstance(target, str) or target not in ops.TENSOR_METHODS:
            raise Bad("target", f"{_short(target)} is not a tensor method this format allows "
                                f"(leapp_lab/fxio/ops.py lists them)")
        if not args:
            raise Bad("args", "a method call without the tensor it is called on")
        return op, name, target, (node(args[0], env, "args[0]"),
                                  *(value(a, env, f"args[{j}]") for j, a in enumerate(args[1:], 1))), \
            {k: value(v, env, f"kwargs[{j}]") for j, (k, v) in enumerate(kwargs)}
    fn = ops.function(target)
    if fn is None:
        raise Bad("target", f"{_short(target)} is not a tensor operation this format allows "
                            f"(leapp_lab/fxio/ops.py lists them)")
    return op, name, fn, *_call_args(target, args, kwargs, env)


def _plain_node(op: str, target: Any, args: list, kwargs: list, attrs: set[str]) -> str:
    if op == "placeholder":
        bare = target.lstrip("*") if isinstance(target, str) else target
        if not is_name(bare) or len(target) - len(bare) > 2:
            raise Bad("target", f"{_short(target)} is not a Python name")
    elif op == "get_attr":
        if not isinstance(target, str) or target not in attrs:
            raise Bad("target", f"{_short(target)} is not a tensor the file declares in 'attrs'")
    elif not is_name(target):
        raise Bad("target", f"{_short(target)} is not a Python name")
    if kwargs or (op != "output" and args):
        raise Bad("args", f"a {op} node takes no arguments")
    if op == "output" and len(args) != 1:
        raise Bad("args", f"an output node takes one argument, got {len(args)}")
    return target


def _call_args(target: str, args: list, kwargs: list, env: dict) -> tuple[tuple, dict]:
    kind = ops.kind(target)
    if kind == "torch":
        return (tuple(value(a, env, f"args[{j}]") for j, a in enumerate(args)),
                {k: value(v, env, f"kwargs[{j}]") for j, (k, v) in enumerate(kwargs)})
    n = ops.arity(target)
    if len(args) != n or kwargs:
        raise Bad("args", f"{target} takes {n} positional argument{'s' if n != 1 else ''} and no "
                          f"keywords, got {len(args)} and {len(kwargs)}")
    if kind == "index":
        out = [node(args[0], env, "args[0]"), index(args[1], env, "args[1]")]
        if n == 3:
            out.append(number(args[2], env, "args[2]"))
        return tuple(out), {}
    return tuple(number(a, env, f"args[{j}]") for j, a in enumerate(args)), {}

"""Check a report's JSON against its dataclass before it is loaded.

``from_dict`` trusts its input; a hand-edited or foreign ``build.json`` / ``report.json`` (a list
where the taps go, a string where a count goes) would otherwise fail deep inside a view or a
comparison. :func:`check_fields` names the first field of the wrong type and its file instead.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, get_args, get_origin

from .dc import init_fields, union_members

from .errors import UnusableInput

_MAX_DEPTH = 12


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


#: per annotation that is a scalar type or a union of them (and None): the exact Python types JSON
#: gives that it accepts; None for any other annotation. Checked first: a report has ~70 scalar
#: fields a row, and the typing introspection per value was most of checking it.
_SCALARS: dict[Any, frozenset | None] = {}
_SCALAR_TYPES = {bool: frozenset((bool,)), int: frozenset((int,)), float: frozenset((int, float)),
                 str: frozenset((str,))}


def _scalar_types(tp: Any) -> frozenset | None:
    try:
        return _SCALARS[tp]
    except KeyError:
        pass
    except TypeError:           # unhashable: the general path
        return None
    args = union_members(tp)
    got = frozenset().union(*(_SCALAR_TYPES[a] for a in args)) if args and all(
        a in _SCALAR_TYPES for a in args) else None
    _SCALARS[tp] = got
    return got


def _problem(tp: Any, value: Any, depth: int = 0) -> str | None:
    """Why ``value`` is not a ``tp`` (None when it is). ``Any`` and unknown annotations accept anything."""
    if depth > _MAX_DEPTH or tp is Any or value is None:
        return None             # None: every field of a report may be null (missing, non-finite)
    ok = _scalar_types(tp)
    if ok is not None and type(value) in ok:
        return None
    origin = get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        probs = [_problem(a, value, depth + 1) for a in get_args(tp) if a is not type(None)]
        return None if any(p is None for p in probs) else probs[0]
    if origin in (list, tuple, set, frozenset):
        if not isinstance(value, list):
            return f"expected a list, got {type(value).__name__}"
        args = get_args(tp)
        if args and args[0] is not Ellipsis:
            plain = _scalar_types(args[0])
            if plain is not None and set(map(type, value)) <= plain:
                return None     # a list of plain numbers or strings (histogram counts): no call per item
            record = isinstance(args[0], type) and dataclasses.is_dataclass(args[0])
            for i, x in enumerate(value):
                if x is None and record:    # leapp_lab writes null for a number, never for a record
                    return f"item {i}: expected an object ({args[0].__name__}), got null"
                p = _problem(args[0], x, depth + 1)
                if p:
                    return f"item {i}: {p}"
        return None
    if origin is dict:
        if not isinstance(value, dict):
            return f"expected an object, got {type(value).__name__}"
        args = get_args(tp)
        if len(args) == 2:
            for k, v in value.items():
                p = _problem(args[1], v, depth + 1)
                if p:
                    return f"{k!r}: {p}"
        return None
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            return f"expected an object ({tp.__name__}), got {type(value).__name__}"
        return _fields_problem(tp, value, depth + 1)
    if tp is bool:
        return None if isinstance(value, bool) else f"expected true/false, got {type(value).__name__}"
    if tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else f"expected an integer, got {type(value).__name__}"
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else f"expected a number, got {type(value).__name__}"
    if tp is str:
        return None if isinstance(value, str) else f"expected a string, got {type(value).__name__}"
    return None


#: integer fields that count something: a negative value is no count, whatever its record (a
#: sample count of -1 sliced the arrays from the end and failed deep inside a rebuild)
_COUNTS = frozenset({"samples"})


def _fields_problem(cls: type, data: dict, depth: int) -> str | None:
    try:
        fields = init_fields(cls)
    except Exception:  # noqa: BLE001 - an annotation we cannot resolve checks nothing
        return None
    for name, tp in fields:
        if name in data:
            v = data[name]
            p = _problem(tp, v, depth)
            if p:
                return f"field {name!r}: {p}"
            if name in _COUNTS and type(v) is int and v < 0:
                return f"field {name!r}: a count, got {v}"
    return None


def check_fields(cls: type, data: Any, where: str) -> None:
    """Raise UnusableInput naming ``where`` and the first field of ``data`` whose type does not match
    ``cls``'s annotations."""
    if not isinstance(data, dict):
        raise UnusableInput(f"{where}: not a leapp_lab report (expected a JSON object, got "
                            f"{type(data).__name__})")
    p = _fields_problem(cls, data, 0)
    if p:
        raise UnusableInput(f"{where}: malformed {getattr(cls, 'kind', '') or _type_name(cls)} report, "
                            f"{p}; write it again with leapp_lab (or restore the file)")

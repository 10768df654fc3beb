"""Generic dataclass <-> plain dict conversion for report records (no pickling, no magic types)."""
from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, get_args, get_origin, get_type_hints


#: per annotation: "same" (JSON gives the value as it is: str, int, bool, Any, unions of them and
#: None), "float" (float, or float | None: ints become floats), "other" (the general path below).
#: A report has ~70 such fields a row: the typing introspection per value was most of a load.
_KIND: dict[Any, str] = {}
_SAME = (str, int, bool, Any)


def _kind(tp: Any) -> str:
    try:
        return _KIND[tp]
    except KeyError:
        pass
    except TypeError:           # an unhashable annotation: the general path
        return "other"
    args = union_members(tp)
    kind = "same" if all(a in _SAME for a in args) else "float" if args == (float,) else "other"
    _KIND[tp] = kind
    return kind


def union_members(tp: Any) -> tuple:
    """The members of a union annotation other than None (``(tp,)`` for any other annotation)."""
    if get_origin(tp) in (typing.Union, types.UnionType):
        return tuple(a for a in get_args(tp) if a is not type(None))
    return (tp,)


def _convert(tp: Any, data: Any) -> Any:
    if data is None:
        return None
    kind = _kind(tp)
    if kind == "same":
        return data
    if kind == "float":
        return float(data) if type(data) is int else data
    origin = get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        for a in (a for a in get_args(tp) if a is not type(None)):
            try:
                return _convert(a, data)
            except (TypeError, ValueError, KeyError, AttributeError):
                continue
        return data
    if origin in (list, tuple, set):
        args = get_args(tp)
        item = args[0] if args else Any
        kind = _kind(item)      # histogram counts and edges: no call per item
        if kind == "same":
            return list(data)
        if kind == "float":
            return [float(x) if type(x) is int else x for x in data]
        return [_convert(item, x) for x in data]
    if origin is dict:
        args = get_args(tp)
        return {k: _convert(args[1] if args else Any, v) for k, v in data.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise TypeError(f"{tp.__name__} expects an object, got {type(data).__name__}")
        return tp.from_dict(data) if hasattr(tp, "from_dict") else fields_from_dict(tp, data)
    if tp is float and isinstance(data, (int, float)) and not isinstance(data, bool):
        return float(data)
    return data


_HINTS: dict[type, dict[str, Any]] = {}


def type_hints(cls: type) -> dict[str, Any]:
    """``get_type_hints(cls)``, once per class: it evaluates every annotation string (compile() per
    field), which would otherwise cost more than reading a report."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = get_type_hints(cls)
    return hints


_INIT_FIELDS: dict[type, tuple] = {}


def init_fields(cls: type) -> tuple:
    """(name, annotation) of every ``init`` field of a dataclass, once per class."""
    got = _INIT_FIELDS.get(cls)
    if got is None:
        hints = type_hints(cls)
        got = _INIT_FIELDS[cls] = tuple((f.name, hints.get(f.name, Any)) for f in dataclasses.fields(cls)
                                        if f.init)
    return got


_DEFAULTED: dict[type, frozenset] = {}


def _null_means_default(cls: type) -> frozenset:
    """Fields whose annotation does not admit None but that have a default: a null there (a
    hand-edited file; leapp_lab writes null only where None is a value) loads as the default, so
    that no view meets a None where it counts on a number or a string."""
    got = _DEFAULTED.get(cls)
    if got is None:
        hints = type_hints(cls)
        got = _DEFAULTED[cls] = frozenset(
            f.name for f in dataclasses.fields(cls)
            if f.init and (f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)
            and not _admits_none(hints.get(f.name, Any)))
    return got


def _admits_none(tp: Any) -> bool:
    if tp is Any or tp is None or tp is type(None):
        return True
    return get_origin(tp) in (typing.Union, types.UnionType) and type(None) in get_args(tp)


def renamed(data: dict[str, Any], names: dict[str, str] | None) -> dict[str, Any]:
    """``data`` with each old key of ``names`` (old -> new) under its new name (a value under the
    new name wins): a field renamed since a report was written still loads."""
    if not names or not any(old in data for old in names):
        return data
    out = {names.get(k, k): v for k, v in data.items() if k not in names or names[k] not in data}
    return out


def fields_from_dict(cls: type, data: dict[str, Any]) -> Any:
    """``cls(**fields)`` from a plain dict: unknown keys are ignored; the old names of renamed fields
    (a class's ``RENAMED``, old -> new) load under their new ones."""
    data = renamed(data, getattr(cls, "RENAMED", None))
    defaulted = _null_means_default(cls)
    kwargs = {name: _convert(tp, data[name]) for name, tp in init_fields(cls)
              if name in data and not (data[name] is None and name in defaulted)}
    return cls(**kwargs)


class Plain:
    """Mixin for record dataclasses: ``to_dict`` / ``from_dict`` straight from the fields."""

    def to_dict(self) -> dict[str, Any]:
        from .jsonio import to_jsonable
        return to_jsonable(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        return fields_from_dict(cls, data)

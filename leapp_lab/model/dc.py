"""Generic dataclass <-> plain dict conversion for report records (no pickling, no magic types)."""
from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, get_args, get_origin, get_type_hints


_NUMBERS = frozenset((int, float))


def _convert(tp: Any, data: Any) -> Any:
    if data is None:
        return None
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
        if item in (int, str, bool) and set(map(type, data)) <= {item}:
            return list(data)               # histogram counts: no call per item
        if item is float and set(map(type, data)) <= _NUMBERS:
            return [float(x) for x in data]
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


def fields_from_dict(cls: type, data: dict[str, Any]) -> Any:
    hints = type_hints(cls)
    kwargs = {f.name: _convert(hints.get(f.name, Any), data[f.name])
              for f in dataclasses.fields(cls) if f.init and f.name in data}
    return cls(**kwargs)


class Plain:
    """Mixin for record dataclasses: ``to_dict`` / ``from_dict`` straight from the fields."""

    def to_dict(self) -> dict[str, Any]:
        from .jsonio import to_jsonable
        return to_jsonable(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        return fields_from_dict(cls, data)

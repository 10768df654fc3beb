"""Version guard: leapp_lab reads LEAPP internals that are only verified for 0.7.x."""
from __future__ import annotations

from importlib import metadata

SUPPORTED = ((0, 7, 2), (0, 8, 0))  # [min, max)
SUPPORTED_SPEC = "leapp>=0.7.2,<0.8"
TESTED = "0.7.2"


class UnsupportedLeapp(ImportError):
    """LEAPP missing or outside the supported range: the user's environment, not a bug (CLI exit 2)."""


def _parse(v: str) -> tuple[int, ...]:
    parts = []
    for p in v.split(".")[:3]:
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts + [0] * (3 - len(parts)))


def leapp_version() -> str | None:
    try:
        return metadata.version("leapp")
    except metadata.PackageNotFoundError:
        return None


def check_leapp_version() -> None:
    v = leapp_version()
    if v is None:
        raise UnsupportedLeapp(f"leapp_lab needs LEAPP (PyPI '{SUPPORTED_SPEC}'), which is not "
                               f"installed: pip install '{SUPPORTED_SPEC}'")
    lo, hi = SUPPORTED
    if not (lo <= _parse(v) < hi):
        raise UnsupportedLeapp(
            f"LEAPP {v} is installed, but leapp_lab supports {SUPPORTED_SPEC.replace('leapp', 'LEAPP ')} "
            f"(tested with {TESTED}; it reads LEAPP internals that change between releases): "
            f"pip install '{SUPPORTED_SPEC}'")

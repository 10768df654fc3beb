"""Version guard: leapp_lab reads LEAPP internals that are only verified for 0.7.x."""
from __future__ import annotations

from importlib import metadata

SUPPORTED = ((0, 7, 2), (0, 8, 0))  # [min, max)


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
        raise ImportError("leapp_lab needs LEAPP (PyPI 'leapp>=0.7.2,<0.8'), which is not installed: "
                          "pip install 'leapp>=0.7.2,<0.8'")
    lo, hi = SUPPORTED
    if not (lo <= _parse(v) < hi):
        raise ImportError(
            f"leapp_lab supports LEAPP >=0.7.2,<0.8 (it reads LEAPP internals that change between "
            f"releases), but LEAPP {v} is installed: pip install 'leapp>=0.7.2,<0.8'")

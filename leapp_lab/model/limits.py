"""Size bounds a user can move with an environment variable (in MiB): how much one .npz may
inflate to (``inflate``), how large a JSON file leapp_lab parses (``safepaths.recognise``)."""
from __future__ import annotations

import os

from .errors import InvalidOption


def mib_limit(variable: str, default: int, what: str) -> int:
    """The bound in bytes: ``$variable`` MiB when set, else ``default``; a value that is not a
    positive number of MiB is refused naming the variable and ``what`` it bounds."""
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        mb = float(raw)
    except ValueError:
        mb = -1.0
    if not 0 < mb < float(1 << 40):
        raise InvalidOption(f"{variable}={raw!r}: expected a positive number of MiB ({what}; default "
                            f"{default >> 20})")
    return int(mb * (1 << 20))

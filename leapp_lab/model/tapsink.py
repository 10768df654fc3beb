"""The hook ``tap()`` calls outside prepare's modes, and the rules for a tap's name.

Shared by ``leapp_lab.taps`` (whose ``tap()`` calls the installed sink) and ``leapp_lab.trace``
(whose session installs one, to record which LEAPP node each tap fired in), so that neither leaf
imports the other. Plain Python: no torch, no LEAPP.
"""
from __future__ import annotations

import contextlib
import os
import unicodedata
from typing import Any, Callable, Iterator

#: ``sink(x, name, site) -> x``: sees every tap() reached outside prepare's modes
TapSink = Callable[[Any, str, Any], Any]
_SINK: TapSink | None = None


def current() -> TapSink | None:
    """The installed sink, or None."""
    return _SINK


@contextlib.contextmanager
def tap_sink(sink: TapSink) -> Iterator[None]:
    """Route every ``tap()`` reached outside prepare's modes to ``sink(x, name, site)`` while the
    block runs; ``tap()`` returns what the sink returns (a sink must return ``x`` itself)."""
    global _SINK
    previous, _SINK = _SINK, sink
    try:
        yield
    finally:
        _SINK = previous


#: Unicode categories a tap name may not hold: control characters (NUL, tab, newline, DEL, C1),
#: format characters (zero-width, bidi overrides: a name that prints as another), surrogates (not
#: UTF-8) and line / paragraph separators. A tap name becomes an ONNX output name, an .npz member name
#: (a zip name ends at a NUL) and a word in one-line messages; every other character is allowed.
FORBIDDEN_CATEGORIES = ("Cc", "Cf", "Cs", "Zl", "Zp")
#: names the reference npz holds besides outputs and taps (prepare's timings, taps/prepare.py): a
#: tap of that name would be overwritten by them and verify would call it a shape mismatch
RESERVED_NAMES = ("benchmark_timings_ms",)


def name_problem(name: str) -> str | None:
    """Why the string ``name`` cannot name a tap (or a model output), or None (docs/taps.md)."""
    if name in RESERVED_NAMES:
        return (f"is reserved: prepare stores its timings under {name!r} in the reference npz; "
                f"rename it")
    bad = next((c for c in name if unicodedata.category(c) in FORBIDDEN_CATEGORIES), None)
    if bad is None:
        return None
    what = unicodedata.name(bad, "control character")
    return (f"holds {what} {bad!r} (U+{ord(bad):04X}); a name may hold printable characters only "
            f"(no control, format or line-break character): rename it")


def short_path(path: str, base: str | os.PathLike | None = None) -> str:
    """``path`` relative to ``base`` (or the working directory) when it lies under it."""
    for root in (base, os.getcwd()):
        if root is None:
            continue
        try:
            rel = os.path.relpath(path, root)
        except ValueError:
            continue
        if not rel.startswith(".."):
            return rel
    return path

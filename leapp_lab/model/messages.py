"""An exception or a tool's log line as the one line of text a report or an error message quotes.

Shared below the leaves: LEAPP's log (``trace``), the exporters' and onnxruntime's messages
(``taps``), a deep check or the adapter check that raised (``deep``, ``trace``) all end up as a
reason in a report or a one-line error, and are cut and cleaned the same way.
"""
from __future__ import annotations

import os
import re
import traceback

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (they would garble a one-line reason)."""
    return _ANSI.sub("", text)


def error_text(exc: BaseException, limit: int = 600) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[:limit] + " …"


def failed_reason(what: str, exc: BaseException) -> str:
    """The reason of a section whose check raised: the error and where it came from."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno})" if tb else ""
    return f"{what} raised {error_text(exc)}{where}"


def headline(text: str | None) -> str:
    """The line of a multi-line error that says what failed: its first non-blank line, joined with
    the next one when it ends in ``:``. TorchScript's errors start with a newline, so LEAPP's
    ``Error compiling model X: `` is followed by the cause on the next line, not on the first."""
    lines = [x.strip() for x in strip_ansi(text or "").splitlines() if x.strip()]
    if not lines:
        return ""
    return f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]


def script_site(text: str | None) -> str | None:
    """The code line TorchScript marks ``<--- HERE`` in a compile error (the call it rejects)."""
    lines = strip_ansi(text or "").splitlines()
    for i, x in enumerate(lines):
        if "<--- HERE" in x and i > 0 and lines[i - 1].strip():
            return lines[i - 1].strip().split(";")[0]
    return None

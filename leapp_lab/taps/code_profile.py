"""Which code the eager run executed, and a digest of it for prepare's key.

``ExecutedCode`` is a ``sys.setprofile`` hook around the capture runs: it records every Python
code object that started (with the globals it ran in) and the module of every C function called.
It sees what ``forward()`` really ran, wherever it lives: a helper imported inside ``forward()``,
a function picked by ``importlib``, model code under a ``site-packages`` folder. A static walk
from MODEL.py's globals sees none of those.

``executed_digest`` keys that code: the bytes of every source file it came from, the code objects
themselves (code without a file, and a module edited since this process imported it, count as they
run), and the values of the globals that code reads. Files of the standard library and of the
packages the key holds by version (``state_key.excluded_roots``) are left out.

The hook is per thread (sys.setprofile), so a notebook kernel's own threads do not enter the key.
"""
from __future__ import annotations

import hashlib
import os
import sys
import types
from pathlib import Path
from typing import Any

from .content_key import Unhashable
from .state_key import Walk, code_bytes


class ExecutedCode:
    """Use as a context manager around each run to profile; ``codes`` and ``c_modules`` add up."""

    def __init__(self) -> None:
        self.codes: dict[types.CodeType, dict] = {}
        self.c_modules: set[str | None] = set()
        self.unavailable: str | None = None
        self._active = False

    def _hook(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            if code not in self.codes:
                self.codes[code] = frame.f_globals
        elif event == "c_call":
            self.c_modules.add(getattr(arg, "__module__", None))

    def __enter__(self) -> "ExecutedCode":
        if sys.getprofile() is not None:
            # another profiler owns the hook: what runs cannot be seen, so nothing may be reused
            self.unavailable = "another profiler is active (sys.setprofile), so the code that ran is unknown"
            return self
        sys.setprofile(self._hook)
        self._active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._active:
            sys.setprofile(None)
            self._active = False


def executed_digest(ran: ExecutedCode, excluded: tuple[str, ...], base: Path | None) -> tuple[str, list[str]]:
    """(digest, the source files keyed) of the code ``ran`` saw. A file under ``base`` (MODEL.py's
    folder) is named relative to it, so a project moved whole keeps its key. Raises Unhashable."""
    if ran.unavailable:
        raise Unhashable(ran.unavailable)
    w = Walk(excluded)
    entries = []
    shown_of: dict[str, str] = {}
    for code, g in ran.codes.items():
        f = code.co_filename
        if not w.is_excluded_file(f):
            if f not in shown_of:
                shown_of[f] = _shown(f, base)
            entries.append((shown_of[f], code.co_qualname, code.co_firstlineno, code, g))
    entries.sort(key=lambda e: e[:3])
    files: dict[str, str] = {}
    for shown, qual, _, code, g in entries:
        if shown not in files and shown != NO_FILE:
            files[shown] = _file_digest(code.co_filename)
        if code.co_name == "<module>":
            # a module's body runs once per process, on its first import: keyed by its file only,
            # so a forward() that imports it keys the same on the first and on a later run
            continue
        w.put(f"code {shown} {qual}")
        code_bytes(code, w.h)
        # nested code objects run as their own frames and are recorded themselves
        w.globals_read(code, g, f"{qual} ({shown})", nested=False)
    for name in sorted(m for m in ran.c_modules if isinstance(m, str)):
        if not w.is_excluded_module(name):
            f = getattr(sys.modules.get(name), "__file__", None)
            if f:
                files.setdefault(_shown(f, base), _file_digest(f))
    for shown in sorted(files):
        w.put(f"file {shown} {files[shown]}")
    return w.hexdigest(), sorted(files)


#: how code without a source file is named in the key: by its code alone, since such names hold
#: counters (``<ipython-input-7-…>``, ``<eval_with_key>.3``) that differ from run to run
NO_FILE = "<no file>"


def _shown(f: str, base: Path | None) -> str:
    if f.startswith("<") or not os.path.isfile(f):
        return NO_FILE
    if base is not None:
        rel = os.path.relpath(os.path.realpath(f), os.path.realpath(base))
        if not rel.startswith(".."):
            return rel
    return f


def _file_digest(path: str) -> str:
    try:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    except OSError as exc:
        raise Unhashable(f"{path} ran in forward() but cannot be read ({exc.strerror or exc})") from None

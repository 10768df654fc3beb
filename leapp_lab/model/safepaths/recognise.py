"""What leapp_lab wrote, recognised from the path alone: a build, an HTML report (:data:`HTML_MARKER`),
a ``--json`` file of each kind, a runs folder's ``latest`` pointer, a node-data file; and the
``Purpose`` of each output (``PURPOSES``): what it is for and which existing path may be replaced.
"""
from __future__ import annotations

import json
import re
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


#: written into the <head> of every HTML page leapp_lab renders, so it can recognise its own reports
HTML_MARKER = '<meta name="generator" content="leapp_lab">'
_HTML_LIMIT = 512 << 20          # a recogniser never reads a larger page to learn what it is
#: the most bytes of one JSON file leapp_lab parses (a report.json, build.json, a record): parsing
#: costs up to ~25x its size in memory ("[{},{},…]"), and what leapp_lab writes is well under 1 MiB
JSON_LIMIT = 64 << 20
#: an environment variable that raises (or lowers) it, in MiB, for a trusted larger file
JSON_LIMIT_VARIABLE = "LEAPP_LAB_JSON_LIMIT_MB"


def json_limit() -> int:
    """The bound in bytes: ``$LEAPP_LAB_JSON_LIMIT_MB`` MiB when set, else :data:`JSON_LIMIT`."""
    from ..limits import mib_limit
    return mib_limit(JSON_LIMIT_VARIABLE, JSON_LIMIT, "the largest JSON file leapp_lab reads")


_RUN_ID = re.compile(r"^[A-Za-z0-9._-]{1,200}$")


def _small_json(path: Path):
    """The JSON value of a regular file of at most json_limit() bytes, or None (never raises)."""
    try:
        if not path.is_file() or path.stat().st_size > json_limit():
            return None
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError, RecursionError):
        return None


def json_kind(path: Path) -> str | None:
    """The ``kind`` of a leapp_lab JSON file, or None when it is not one (never raises)."""
    d = _small_json(path)
    k = d.get("kind") if isinstance(d, dict) else None
    return k if isinstance(k, str) else None


def is_build(path: Path) -> bool:
    """A build ``leapp-lab compile`` wrote: a folder with build.json of kind build, or its .tgz."""
    if path.is_dir():
        return json_kind(path / "build.json") == "build"
    if not path.is_file():
        return False
    try:
        with tarfile.open(path, "r:*") as tf:
            for _ in range(16):          # build.json sorts first among the files compile archives
                m = tf.next()
                if m is None:
                    return False
                if m.name.lstrip("./") == "build.json" and m.isfile() and m.size <= json_limit():
                    fh = tf.extractfile(m)
                    d = json.loads(fh.read().decode("utf-8")) if fh else None
                    return isinstance(d, dict) and d.get("kind") == "build"
    except (tarfile.TarError, OSError, EOFError, ValueError, UnicodeDecodeError, RecursionError):
        return False
    return False


def is_html_report(path: Path) -> bool:
    """An HTML page leapp_lab rendered: the marker in its head (pages from before the marker: the
    renderer's view element)."""
    if not path.is_file():
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
            if HTML_MARKER.encode() in head:
                return True
            if not head.startswith(b'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'):
                return False
            if path.stat().st_size > _HTML_LIMIT:
                return False
            return b'<script type="application/json" id="leapp-view">' in head + fh.read()
    except OSError:
        return False


def is_latest_pointer(path: Path) -> bool:
    """A runs root's ``latest``: a small text file holding one run id."""
    try:
        if not path.is_file() or path.stat().st_size > 512:
            return False
        return bool(_RUN_ID.match(path.read_text(encoding="utf-8").strip()))
    except (OSError, UnicodeDecodeError):
        return False


def npz_has_member(path: Path, member: str) -> bool:
    try:
        with zipfile.ZipFile(path) as z:
            return f"{member}.npy" in z.namelist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return False


@dataclass(frozen=True)
class Purpose:
    """What an output is for: ``what`` (said in messages), ``folder`` (a folder rather than a file),
    ``ours(path)`` (an existing path leapp_lab wrote for this purpose, so it may be replaced),
    ``adds`` (a folder that new entries are only added to, never replacing one: it may hold an input,
    such as the runs folder holding the verify runs that ``diff`` compares)."""
    what: str
    folder: bool
    ours: Callable[[Path], bool]
    adds: bool = False


def is_node_data(path: Path) -> bool:
    """A Model Explorer node-data file ``report.to_model_explorer`` wrote: ``{graph id: {"results":
    ..., "thresholds": ...}}``."""
    d = _small_json(path)
    return (isinstance(d, dict) and bool(d)
            and all(isinstance(v, dict) and set(v) == {"results", "thresholds"} for v in d.values()))


PURPOSES: dict[str, Purpose] = {
    "build": Purpose("a build (folder or .tgz) written by leapp-lab compile", True, is_build),
    "html": Purpose("an HTML report written by leapp_lab", False, is_html_report),
    # one build writes a verify's rows, several builds a compare's: both are `verify --json`
    "verify-json": Purpose("a `leapp-lab verify --json` file", False,
                           lambda p: json_kind(p) in ("verify-rows", "compare-rows")),
    "compare-json": Purpose("a `leapp-lab diff --json` file", False, lambda p: json_kind(p) == "compare-rows"),
    "repair-json": Purpose("a `leapp-lab repair --json` file", False, lambda p: json_kind(p) == "repair"),
    "trace-json": Purpose("a `leapp-lab run --json` file", False, lambda p: json_kind(p) == "trace"),
    "latest": Purpose("a runs folder's 'latest' pointer", False, is_latest_pointer),
    "runs-dir": Purpose("a folder of leapp_lab runs", True, lambda p: p.is_dir(), adds=True),
    "repair-dir": Purpose("a folder of leapp-lab repair's kept builds", True, lambda p: p.is_dir(), adds=True),
    "node-data": Purpose("a Model Explorer node-data file written by leapp_lab", False, is_node_data),
    "prepare-report": Purpose("a prepare record folder (report.json of kind prepare)", True,
                              lambda p: json_kind(p / "report.json") == "prepare"),
    "out-dir": Purpose("a folder", True, lambda p: p.is_dir()),
}

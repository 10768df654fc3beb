"""Reusing a previous prepare or compile when nothing it depends on changed (docs/taps.md, "Re-running
an unchanged model").

A step computes a *content key*: the sha256 of named parts (``{"model source": digest, ...}``), each
itself a sha256 of what it covers. Beside its outputs it records ``cache.json``: the key, the parts
and the sha256 and size of every output file. A later run with the same key reuses the outputs only
when every recorded file is still there with the same size and sha256 (a file edited, truncated or
replaced since is a miss, and the step runs again). The record is JSON, written to a temporary
sibling and renamed into place; nothing is ever unpickled.

Standard library only: ``model`` sits below every leaf.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from .dc import Plain

#: the record's file name, in the prepare record folder (``<stem>.prepare/``) or the build folder
CACHE_FILE = "cache.json"
CACHE_KIND = "leapp-lab-cache"
#: bump when what a key covers changes meaning: every older record is then a miss
KEY_VERSION = 2
_CHUNK = 1 << 20


@dataclass
class CacheInfo(Plain):
    """How a prepare or compile used its cache. ``hit``: the previous outputs were reused (nothing
    was exported / built); ``key``: the content key (sha256); ``reason``: on a miss, why the step ran
    (``no previous run recorded``, ``--force``, ``changed: samples, state_dict``, an output file that
    no longer matches); ``reused_from``: on a hit, when the reused outputs were written;
    ``checked_s``: seconds spent computing the key and checking the outputs."""
    hit: bool = False
    key: str | None = None
    reason: str | None = None
    reused_from: str | None = None
    checked_s: float | None = None


def digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            b = fh.read(_CHUNK)
            if not b:
                return h.hexdigest()
            h.update(b)


def combine(parts: Mapping[str, str]) -> str:
    """The key of named part digests (order-independent: sorted by name)."""
    h = hashlib.sha256(f"leapp-lab-cache-v{KEY_VERSION}\0".encode())
    for name in sorted(parts):
        h.update(f"{name}\0{parts[name]}\0".encode())
    return h.hexdigest()


def file_entries(files: Iterable[str | os.PathLike], base: Path) -> dict[str, dict]:
    """``{path relative to base: {"sha256", "size"}}`` of output files just written."""
    out = {}
    for f in files:
        p = Path(f)
        out[os.path.relpath(os.path.abspath(p), os.path.abspath(base))] = {
            "sha256": digest_file(p), "size": p.stat().st_size}
    return out


def record_body(key: str, parts: Mapping[str, str], files: dict[str, dict], created: str | None) -> dict:
    return {"kind": CACHE_KIND, "key_version": KEY_VERSION, "key": key, "parts": dict(parts),
            "files": files, "created": created}


def write_record(path: str | os.PathLike, body: dict) -> None:
    """``cache.json`` at ``path``, written to a temporary sibling and renamed into place."""
    from .jsonio import write_json
    write_json(path, body)


def read_record(path: str | os.PathLike, any_version: bool = False) -> dict | None:
    """The record at ``path``, or None when there is none or it is not one (never an error: a bad
    record is a miss). ``any_version``: a record of an earlier key version too (its file digests
    still say what a build was made from, though its key no longer answers a cache look-up)."""
    p = Path(path)
    try:
        if not p.is_file() or p.stat().st_size > 16 << 20:
            return None
        with open(p, encoding="utf-8") as fh:
            d = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(d, dict) or d.get("kind") != CACHE_KIND:
        return None
    if d.get("key_version") != KEY_VERSION and not any_version:
        return None
    if not isinstance(d.get("key"), str) or not isinstance(d.get("files"), dict) or not d["files"]:
        return None
    return d


def changed_parts(record: dict | None, parts: Mapping[str, str]) -> list[str]:
    """The names of the parts whose digest differs from the record's (all of them without one)."""
    old = record.get("parts") if isinstance(record, dict) else None
    if not isinstance(old, dict):
        return sorted(parts)
    return sorted(k for k in set(parts) | set(old) if parts.get(k) != old.get(k))


def stale_file(record: dict, base: Path) -> str | None:
    """None when every recorded output is still as written; else a sentence naming the first one
    that is not (missing, another size, another sha256)."""
    for rel, entry in record["files"].items():
        if not isinstance(rel, str) or not isinstance(entry, dict):
            return "the cache record is malformed"
        p = base / rel
        try:
            st = p.stat()
        except OSError:
            return f"{p} is gone"
        if not p.is_file():
            return f"{p} is not a file"
        if st.st_size != entry.get("size"):
            return f"{p} changed since it was written (size)"
        if digest_file(p) != entry.get("sha256"):
            return f"{p} changed since it was written (sha256)"
    return None


def lookup(record_path: str | os.PathLike, key: str, parts: Mapping[str, str], base: Path
           ) -> tuple[dict | None, str]:
    """``(record, "")`` when the outputs recorded at ``record_path`` may be reused for ``key``; else
    ``(None, why not)``."""
    record = read_record(record_path)
    if record is None:
        return None, "no previous run recorded"
    if record["key"] != key:
        changed = changed_parts(record, parts)
        return None, ("changed: " + ", ".join(changed)) if changed else "the key changed"
    stale = stale_file(record, base)
    if stale is not None:
        return None, stale
    return record, ""


def versions(packages: Iterable[str]) -> dict[str, str]:
    """``{package: version}`` (``absent`` when not installed): the module's ``__version__`` when it is
    already imported, else the installed distribution's, without importing it."""
    import sys
    from importlib import metadata
    out = {}
    for name in packages:
        mod = sys.modules.get(name)
        v = getattr(mod, "__version__", None) if mod is not None else None
        if not isinstance(v, str):
            try:
                v = metadata.version(name)
            except metadata.PackageNotFoundError:
                v = "absent"
        out[name] = v
    return out


def code_digest() -> str:
    """sha256 of leapp_lab's own Python files (relative path and bytes): a leapp_lab edited in
    place, at the same version, is another leapp_lab."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def environment_digest(packages: Iterable[str]) -> str:
    """The part of a key that says which software made the outputs: Python, the packages'
    versions, leapp_lab's version and code."""
    import platform
    from leapp_lab import __version__
    body = {"python": platform.python_version(), "leapp_lab": __version__, "leapp_lab code": code_digest(),
            **versions(packages)}
    return digest_bytes(json.dumps(body, sort_keys=True).encode())

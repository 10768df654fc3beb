"""Run folders: ``<root>/leapp_lab/runs/<run id>/`` plus an atomically updated ``latest`` pointer.

A run is written into a hidden temporary folder next to its final place and renamed into place only
when it is complete, so a crash never leaves half a run where ``load`` would find it, and never
touches an earlier run. ``latest`` is a small text file holding the run id (a symlink would not
survive zip files, Windows and some sync tools).
"""
from __future__ import annotations

import datetime as _dt
import os
import re
import shutil
import uuid
from pathlib import Path

from .jsonio import atomic_write_text

RUNS_DIRNAME = "runs"
LATEST = "latest"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def lab_dir(graph_dir: str | os.PathLike) -> Path:
    """The leapp_lab folder that sits beside LEAPP's own artifacts of one graph."""
    return Path(graph_dir) / "leapp_lab"


def new_run_id(label: str = "") -> str:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    tail = uuid.uuid4().hex[:6]
    label = _SAFE.sub("-", label).strip("-")[:40]
    return f"{stamp}-{label}-{tail}" if label else f"{stamp}-{tail}"


class RunFolder:
    """A run being written. Use as a context manager::

        with RunFolder(root, label="trace") as run:
            write files into run.path
        # now at root/runs/<id>, and root/latest names it

    If the body raises, the partial folder is kept only when ``keep_on_error`` is true (the caller
    wrote an error report into it); otherwise it is removed. Earlier runs are never touched.
    """

    def __init__(self, root: str | os.PathLike, label: str = "", *, keep_on_error: bool = True):
        self.root = Path(root)
        self.run_id = new_run_id(label)
        self.final_path = self.root / RUNS_DIRNAME / self.run_id
        self.path = self.root / RUNS_DIRNAME / f".tmp-{self.run_id}"
        self.keep_on_error = keep_on_error
        self.committed = False

    def __enter__(self) -> "RunFolder":
        self.path.mkdir(parents=True, exist_ok=False)
        return self

    def commit(self) -> Path:
        if self.committed:
            return self.final_path
        os.replace(self.path, self.final_path)
        self.path = self.final_path
        set_latest(self.root, self.run_id)
        self.committed = True
        return self.final_path

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.committed:
            return
        if exc_type is None or (self.keep_on_error and any(self.path.iterdir())):
            self.commit()
        else:
            shutil.rmtree(self.path, ignore_errors=True)


def set_latest(root: str | os.PathLike, run_id: str) -> None:
    atomic_write_text(Path(root) / LATEST, run_id + "\n")


def latest_run(root: str | os.PathLike) -> Path | None:
    root = Path(root)
    p = root / LATEST
    if not p.exists():
        return None
    run_id = p.read_text(encoding="utf-8").strip()
    path = root / RUNS_DIRNAME / run_id
    return path if path.is_dir() else None


def list_runs(root: str | os.PathLike) -> list[Path]:
    d = Path(root) / RUNS_DIRNAME
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))

"""Run folders: ``<root>/leapp_lab/runs/<run id>/`` plus an atomically updated ``latest`` pointer.

A run is written into a hidden temporary folder next to its final place and renamed into place only
when it is complete, so a crash never leaves half a run where ``load`` would find it, and never
touches an earlier run. ``latest`` is a small text file holding the run id (a symlink would not
survive zip files, Windows and some sync tools).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Callable, Sequence

from leapp_lab.signals import commit_guard

from .jsonio import atomic_file, atomic_write_text
from .safepaths import check_replaceable, make_folders, remove_made, staged, writing

RUNS_DIRNAME = "runs"
REPORT_FILE = "report.json"       # base.REPORT_FILE (base imports this module lazily)
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

    The run is committed (renamed into place, ``latest`` moved) only when the body completes, that
    is after every file of it is completely written. If the body raises (a full disk, Ctrl-C, a bug)
    the temporary folder is removed and ``latest`` keeps naming the earlier run. With
    ``keep_on_error`` a run whose ``report.json`` was written completely (it is written last, by
    an atomic rename) is committed even when the body raised after it. Earlier runs are never touched.
    """

    def __init__(self, root: str | os.PathLike, label: str = "", *, keep_on_error: bool = False):
        self.root = Path(root)
        self.run_id = new_run_id(label)
        self.final_path = self.root / RUNS_DIRNAME / self.run_id
        self.path = self.root / RUNS_DIRNAME / f".tmp-{self.run_id}"
        self.keep_on_error = keep_on_error
        self.committed = False

    def __enter__(self) -> "RunFolder":
        # a file where the runs folder or 'latest' should be, or a 'latest' leapp_lab did not write
        check_replaceable(self.root / RUNS_DIRNAME, "runs-dir")
        check_replaceable(self.root / LATEST, "latest")
        self._made = make_folders(self.root / RUNS_DIRNAME)    # removed again if nothing commits
        with writing(self.path):
            self.path.mkdir(exist_ok=False)
        return self

    def commit(self) -> Path:
        if self.committed:
            return self.final_path
        moved = False
        # a Ctrl-C in here waits for the end: the run and its 'latest' move together, or neither
        with commit_guard():
            try:
                # 'latest' is written to its temporary sibling first (the step that can fill a
                # disk); then the two renames, which need no space
                with atomic_file(self.root / LATEST) as fh:
                    fh.write((self.run_id + "\n").encode("utf-8"))
                    fh.flush()
                    os.replace(self.path, self.final_path)
                    moved = True
            except BaseException:
                if moved and self.final_path.is_dir():
                    os.replace(self.final_path, self.path)     # the caller removes it; latest unchanged
                raise
            self.path = self.final_path
            self.committed = True
        return self.final_path

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.committed:
            return
        done = exc_type is None or (self.keep_on_error and issubclass(exc_type, Exception)
                                    and (self.path / REPORT_FILE).is_file())
        try:
            if done:
                self.commit()
        finally:
            if not self.committed:
                shutil.rmtree(self.path, ignore_errors=True)
                remove_made(getattr(self, "_made", []))
        if isinstance(exc, OSError) and exc.errno is not None and str(self.path) in str(exc.filename):
            # the hidden temporary folder is gone: name the runs folder the user can look at
            raise OSError(exc.errno, exc.strerror, str(self.final_path.parent)) from exc


def save_run_with(report, root: str | os.PathLike | None, label: str,
                  files: Sequence[tuple[str | os.PathLike | None, Callable[[Path], object]]] = ()) -> None:
    """Save ``report`` as a new run under ``root`` (None: no run) together with ``files``: ``(path,
    write)`` pairs (a None path is skipped), ``write(tmp)`` writing that file (a --json, an --html)
    to the temporary sibling it is given, once ``report.path`` names the run. Everything is written
    first; only then does the run commit (``latest`` moves) and each file get renamed into place, so
    a full disk, an error or Ctrl-C before the end commits none of them (docs/safety.md, "Check,
    then work, then commit")."""
    files = [(Path(f), write) for f, write in files if f is not None]
    with staged([f for f, _ in files]) as tmps:
        if root is None:
            for (_, write), tmp in zip(files, tmps):
                write(tmp)
            return
        with RunFolder(root, label=label) as run:
            report.save(run.path)
            report.path = run.final_path
            for (_, write), tmp in zip(files, tmps):
                write(tmp)


def set_latest(root: str | os.PathLike, run_id: str) -> None:
    atomic_write_text(Path(root) / LATEST, run_id + "\n")


def latest_run(root: str | os.PathLike) -> Path | None:
    root = Path(root)
    p = root / LATEST
    if not p.is_file() or p.stat().st_size > 4096:   # never open a FIFO or a device named latest
        return None
    try:
        run_id = p.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not run_id or "/" in run_id or run_id in (".", ".."):
        return None
    path = root / RUNS_DIRNAME / run_id
    return path if path.is_dir() else None


def list_runs(root: str | os.PathLike) -> list[Path]:
    d = Path(root) / RUNS_DIRNAME
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB pieces (artifacts can be large)."""
    from .safepaths import open_input
    h = hashlib.sha256()
    with open_input(path) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

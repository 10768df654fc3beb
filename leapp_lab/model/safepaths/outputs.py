"""Outputs never destroy an input or anything leapp_lab did not write (docs/safety.md).

An output path that *is* one of the command's inputs, *contains* one (a folder above it), or *lies
inside* an input file or folder is refused, naming both; so is one inside any build (the next compile
deletes it) and one where no file can be created (checked by a probe, before any work). An existing
path is replaced only when leapp_lab wrote it for the same purpose (``recognise.PURPOSES``).
"""
from __future__ import annotations

import contextlib
import os
import stat
import uuid
from pathlib import Path
from typing import Iterable, Sequence

from ..errors import UnsafeOutput
from .inputs import kind_of, real_path
from .recognise import PURPOSES, Purpose, json_kind


def _same(a: Path, b: Path) -> bool:
    if real_path(a) == real_path(b):
        return True
    try:
        return os.path.samefile(a, b)      # a hard link to an input is that input
    except OSError:
        return False


def _inside(child: Path, parent: Path) -> bool:
    c, p = real_path(child), real_path(parent)
    return c != p and p in c.parents


def _empty(p: Path) -> bool:
    try:
        if p.is_dir():
            return not any(os.scandir(p))
        return p.is_file() and p.stat().st_size == 0
    except OSError:
        return False


def check_replaceable(path: str | os.PathLike, purpose: str | Purpose, flag: str | None = None) -> Path:
    """``path`` may be written for ``purpose``: absent (its nearest existing parent a folder), empty,
    or something leapp_lab wrote for that purpose. Else UnsafeOutput saying what to do."""
    p = Path(path)
    pur = PURPOSES[purpose] if isinstance(purpose, str) else purpose
    name = f"{flag} {p}" if flag else str(p)
    for parent in p.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise UnsafeOutput(f"{name}: {parent} is a file, not a folder, so nothing can be "
                                   f"written inside it; choose another location")
            break
    if not (p.exists() or p.is_symlink()):
        return p
    try:
        st = os.stat(p)
    except OSError:
        raise UnsafeOutput(f"{name}: exists but cannot be examined (a dangling link?); remove it or "
                           f"choose another path") from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise UnsafeOutput(f"{name}: is {kind_of(st)}; leapp_lab writes only regular files and "
                           f"folders: choose another path")
    if stat.S_ISDIR(st.st_mode) and not pur.folder:
        raise UnsafeOutput(f"{name}: is a folder, but {pur.what} is a file: pass the path of a file "
                           f"to write")
    if not (_empty(p) or pur.ours(p)):
        raise UnsafeOutput(f"{name}: already exists and is not {pur.what}; leapp_lab replaces only what "
                           f"it wrote itself for the same purpose: remove it or choose another path")
    return p


def check_writable(path: str | os.PathLike, purpose: str | Purpose) -> None:
    """The OSError (naming ``path``) of creating a file where ``path`` will be written: in the folder
    ``path`` itself (an existing folder output, written into) or its nearest existing parent (the
    output is a renamed sibling, or folders made there). Checked before the work, so that a
    read-only place (a read-only mount, an immutable folder, /proc) fails the command before it
    builds or saves anything, not after. A probe, not access(2): root passes access() where
    creating fails."""
    p = Path(path)
    pur = PURPOSES[purpose] if isinstance(purpose, str) else purpose
    where = p if _written_into(pur) and p.is_dir() else next((q for q in p.parents if q.exists()), Path("."))
    probe = where / f".leapp-lab-probe-{uuid.uuid4().hex[:8]}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as exc:         # the machine's error: the CLI's one line (oserror_line), exit 2
        raise OSError(exc.errno, exc.strerror or str(exc), str(p)) from None
    with contextlib.suppress(OSError):
        probe.unlink()


def _written_into(pur: Purpose) -> bool:
    # a folder that entries are written into (a runs folder, demo's --out), not one replaced whole
    # by renaming a new one over it (a build, a prepare record)
    return pur.folder and pur.what not in (PURPOSES["build"].what, PURPOSES["prepare-report"].what)


def enclosing_build(path: str | os.PathLike, into: bool = False) -> Path | None:
    """The build folder (``leapp-lab compile``'s, with its build.json) that ``path`` lies inside
    (``into``: or is, for an output folder written into), or None: the next compile of that engine
    replaces the whole folder, and what was written into it with it."""
    r = real_path(Path(path))
    return next((q for q in ((r, *r.parents) if into else r.parents)
                 if json_kind(q / "build.json") == "build"), None)


def check_outputs(outputs: Iterable[tuple[str | os.PathLike | None, str | Purpose, str]],
                  inputs: Iterable[tuple[str | os.PathLike | None, str]] = (), *,
                  inside_ok: Sequence[str | os.PathLike] = ()) -> None:
    """Refuse before anything is written: an output that is, contains or lies inside an input (an
    input folder named in ``inside_ok`` may hold outputs), two outputs on one path, or an existing
    path leapp_lab did not write for that purpose. ``outputs``: ``(path, purpose, flag)``;
    ``inputs``: ``(path, what)``; None paths are skipped."""
    ins = [(Path(i), what) for i, what in inputs if i is not None]
    ok = [real_path(Path(i)) for i in inside_ok]
    seen: dict[Path, str] = {}
    for path, purpose, flag in outputs:
        if path is None:
            continue
        p = Path(path)
        pur = PURPOSES[purpose] if isinstance(purpose, str) else purpose
        name = f"{flag} {p}" if flag else str(p)
        r = real_path(p)
        if r in seen:
            raise UnsafeOutput(f"{name}: the same path is also given as {seen[r]}; every output needs its "
                               f"own path")
        seen[r] = name
        for i, what in ins:
            if _same(p, i):
                raise UnsafeOutput(f"{name}: is the input {i} ({what}); writing it would destroy it: "
                                   f"choose another output path")
            if _inside(i, p) and not pur.adds:
                raise UnsafeOutput(f"{name}: contains the input {i} ({what}); writing it would destroy "
                                   f"that input: choose another output path")
            if _inside(p, i) and real_path(i) not in ok:
                if i.is_file():     # a folder output's latest or runs/ under an input file: name the folder
                    raise UnsafeOutput(f"{flag + ' ' if flag else ''}{i}: is the input {i} ({what}), a file; "
                                       f"choose an output folder outside the inputs")
                raise UnsafeOutput(f"{name}: lies inside the input {i} ({what}); choose an output path "
                                   f"outside it")
        b = enclosing_build(p, into=_written_into(pur))
        if b is not None:
            raise UnsafeOutput(f"{name}: lies inside the build {b}; the next `leapp-lab compile` of that "
                               f"engine replaces the whole folder and deletes it: choose a path outside "
                               f"the build (such as {b.parent / 'leapp_lab'})")
        check_replaceable(p, pur, flag)
        check_writable(p, pur)

"""Writing so that a failure leaves the previous outputs as they were: into a temporary sibling,
renamed over the final path only when complete (``writing``, ``staged``), folders made and removed
again, and the room a write needs checked before it starts.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from pathlib import Path
from typing import Iterator, Sequence

from leapp_lab.signals import commit_guard, transaction


@contextlib.contextmanager
def writing(path: str | os.PathLike, *, rename: bool = False) -> Iterator[None]:
    """Name ``path`` in an OSError that does not say which file it hit (a write() that fills the
    disk raises ENOSPC without a file name); ``rename``: name ``path`` instead of whatever file the
    error names (a hidden temporary sibling means nothing to the user)."""
    try:
        yield
    except OSError as exc:
        if exc.errno is not None and (exc.filename is None or rename):
            raise OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(path)) from exc
        raise


def room_problem(folder: Path, nbytes: int) -> OSError | None:
    """The OSError that writing ``nbytes`` into ``folder`` raises (a full disk, a file size limit, a
    read-only location), or None when it fits. Used after a tool failed vaguely while writing there
    (onnxruntime saving a model reports only "serialization failed")."""
    probe = folder / f".leapp-lab-room-{uuid.uuid4().hex[:8]}"
    try:
        with open(probe, "wb") as fh:
            left, chunk = nbytes, b"\0" * min(max(nbytes, 1), 1 << 20)
            while left > 0:
                fh.write(chunk[:left])
                left -= len(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        return None
    except OSError as exc:
        return exc
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()


def no_room_error(exc: BaseException, where: str | os.PathLike, probe: Path | None = None,
                  nbytes: int = 1 << 20) -> OSError | None:
    """``exc`` as the OSError of a write that found no room, naming the file it names or else
    ``where`` (the output the user knows: never a hidden ``.NAME.tmp-*`` sibling), or None when it
    is something else. ``probe``: a folder
    to try writing ``nbytes`` into when ``exc`` says nothing about the disk (onnxruntime reports a
    full disk as "serialization failed" or a protobuf error): no room there is the cause."""
    from .oserrors import NO_ROOM_ERRNOS, no_room
    full = no_room(exc)
    if full is None and probe is not None and isinstance(exc, Exception) and not isinstance(exc, OSError):
        while not probe.is_dir() and probe != probe.parent:
            probe = probe.parent
        full = room_problem(probe, nbytes)
        if full is not None and full.errno not in NO_ROOM_ERRNOS:
            full = None
    if full is None:
        return None
    named = full.filename
    if named is None or any(part.startswith(".") and ".tmp" in part for part in Path(str(named)).parts):
        named = str(where)
    return OSError(full.errno, full.strerror or os.strerror(full.errno), named)


def make_folders(path: str | os.PathLike) -> list[Path]:
    """``mkdir -p path``; returns the folders it made, innermost first (for :func:`remove_made`)."""
    p = Path(path)
    made = [q for q in (p, *p.parents) if not (q.exists() or q.is_symlink())]
    with writing(p):
        p.mkdir(parents=True, exist_ok=True)
    return made


def remove_made(made: Sequence[Path]) -> None:
    """Undo :func:`make_folders` after a failure: each folder it made is removed when empty (the
    innermost first), so a failed command leaves no empty folder of its own behind."""
    for q in made:
        with contextlib.suppress(OSError):
            q.rmdir()


def remove_path(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    elif p.exists() or p.is_symlink():
        with contextlib.suppress(OSError):
            p.unlink()


def replace_path(tmp: Path, final: Path) -> None:
    """Rename ``tmp`` over ``final`` (a file or a folder); an old folder is moved aside first and
    removed only once the new one is in place."""
    if final.is_dir() and not final.is_symlink():
        old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(final, old)
        try:
            os.replace(tmp, final)
        except BaseException:
            os.replace(old, final)
            raise
        remove_path(old)
    else:
        os.replace(tmp, final)


def stage_path(final: str | os.PathLike) -> Path:
    """A hidden temporary sibling of ``final`` (same folder, so the last rename is atomic)."""
    f = Path(final)
    return f.with_name(f".{f.name}.tmp-{uuid.uuid4().hex[:8]}")


@contextlib.contextmanager
def staged(finals: Sequence[str | os.PathLike]) -> Iterator[list[Path]]:
    """Temporary siblings for several outputs written together. They are renamed into place only
    when the block completes, after every one of them is written; on any error (or Ctrl-C) they
    are removed and every final path is left as it was."""
    finals = [Path(f) for f in finals]
    for f in finals:
        f.parent.mkdir(parents=True, exist_ok=True)
    tmps = [stage_path(f) for f in finals]
    try:
        with transaction():     # a run folder committed in the block holds Ctrl-C to its end
            yield tmps
            with commit_guard():    # every output renamed, or none: a Ctrl-C here waits for the last
                for t, f in zip(tmps, finals):
                    if t.exists():
                        replace_path(t, f)
    except OSError as exc:
        for t, f in zip(tmps, finals):     # name the output the user asked for, not its temp sibling
            if exc.errno is not None and exc.filename is not None and str(t) in str(exc.filename):
                raise OSError(exc.errno, exc.strerror, str(f)) from exc
        raise
    finally:
        for t in tmps:
            remove_path(t)

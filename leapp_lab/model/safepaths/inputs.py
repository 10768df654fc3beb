"""Inputs are read only when they are regular files (or folders where a folder is meant): ``/dev/zero``,
a FIFO, a socket, a device, a dangling link or a folder where a file belongs is refused, naming the
file and what it is, before a byte is read (docs/safety.md, "Every file is checked before it is opened").

Every file leapp_lab reads from a run folder or a build goes through one of :func:`check_input_file`
(a path handed to a library that opens it itself: onnx, onnxruntime, safetensors, LEAPP),
:func:`optional_input` (a file a run or build may lack) or :func:`open_input` (the checked open).
"""
from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path
from typing import IO

from ..errors import NotAFile, UnusableInput


def kind_of(st: os.stat_result) -> str:
    m = st.st_mode
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(m):
            return name
    return "not a regular file"


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB"


def _refuse_stat(p: Path, st: os.stat_result, what: str, limit: int | None, limit_hint: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise NotAFile(f"{p}: is a folder, not {what}")
    if not stat.S_ISREG(st.st_mode):
        raise NotAFile(f"{p}: is {kind_of(st)}, not {what}; leapp_lab reads only regular files "
                            f"(copy the data into a file first)")
    if limit is not None and st.st_size > limit:
        raise NotAFile(f"{p}: {_mib(st.st_size)}, more than the {_mib(limit)} leapp_lab reads as "
                            f"{what}; not read{limit_hint}")


def check_input_file(path: str | os.PathLike, what: str = "file", limit: int | None = None,
                     limit_hint: str = "") -> Path:
    """``path`` as a Path when it is an existing regular file (symlinks followed) of at most
    ``limit`` bytes; else UnusableInput saying what it is instead (missing, a dangling link and
    where it points, a folder, a FIFO, a device, too large). Nothing is opened, so a FIFO or
    ``/dev/zero`` never blocks or floods."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        if os.path.islink(p):
            raise NotAFile(f"{p}: is a link to {os.readlink(p)}, which does not exist (a dangling "
                                f"link), not {what}") from None
        raise UnusableInput(f"{p}: no such file (expected {what})") from None
    except NotADirectoryError:
        raise UnusableInput(f"{p}: no such file (a part of the path is a file, not a folder)") from None
    except OSError as exc:
        raise UnusableInput(f"{p}: cannot be read ({exc.strerror})") from None
    _refuse_stat(p, st, what, limit, limit_hint)
    return p


def present(path: str | os.PathLike) -> bool:
    """Anything at ``path``: a file, a folder, a FIFO, a device, or a link, dangling or not. A file
    a run may lack is absent only when nothing is there; whatever else is there is checked."""
    return os.path.lexists(path)


def optional_input(path: str | os.PathLike, what: str = "file", limit: int | None = None) -> Path | None:
    """None when nothing at all is at ``path`` (a file a run or build may lack); else
    :func:`check_input_file`'s Path, or its refusal (a dangling link is not "absent")."""
    if not present(path):
        return None
    return check_input_file(path, what, limit)


def open_input(path: str | os.PathLike, what: str = "file", mode: str = "rb", limit: int | None = None,
               limit_hint: str = "") -> IO:
    """The checked open: ``path`` opened for reading only once it is a regular file within
    ``limit``. It is opened without blocking and checked again on the open descriptor, so a FIFO or
    a device swapped in after the first check is refused too, never read."""
    p = check_input_file(path, what, limit, limit_hint)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UnusableInput(f"{p}: cannot be read ({exc.strerror}; expected {what})") from None
    try:
        _refuse_stat(p, os.fstat(fd), what, limit, limit_hint)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        if "b" in mode:
            return os.fdopen(fd, "rb")
        return os.fdopen(fd, "r", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def read_input_bytes(path: str | os.PathLike, what: str = "file", limit: int | None = None) -> bytes:
    with open_input(path, what, "rb", limit) as fh:
        return fh.read()


def read_input_text(path: str | os.PathLike, what: str = "file", limit: int | None = None) -> str:
    """The file's text (UTF-8); a file that is not UTF-8 is UnusableInput naming it."""
    data = read_input_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnusableInput(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}; expected {what})") from None


def check_input_path(path: str | os.PathLike, what: str = "file or folder") -> Path:
    """A regular file or a folder (a run, a build); anything else is refused like check_input_file."""
    p = Path(path)
    if p.is_dir():
        return p
    return check_input_file(p, what)


def real_path(p: Path) -> Path:
    return Path(os.path.realpath(p))


def is_file_name(name: object) -> bool:
    """``name`` is one file name inside a folder, as leapp_lab and LEAPP write them: a non-empty
    string with no path separator and no NUL, not ``.`` or ``..``. A name read from a file someone
    else may have edited (build.json's artifact, a node name in report.json, a .tgz member) is
    joined to a folder only if it is one; else it could reach outside that folder."""
    return isinstance(name, str) and name not in ("", ".", "..") and not any(c in name for c in "/\\\0")

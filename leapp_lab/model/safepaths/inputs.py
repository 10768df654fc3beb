"""Inputs are read only when they are regular files (or folders where a folder is meant): ``/dev/zero``,
a FIFO, a socket or a device is refused before a byte is read (docs/safety.md).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import UnusableInput


def kind_of(st: os.stat_result) -> str:
    m = st.st_mode
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(m):
            return name
    return "not a regular file"


def check_input_file(path: str | os.PathLike, what: str = "file") -> Path:
    """``path`` as a Path when it is an existing regular file (symlinks followed); else UnusableInput
    saying what it is instead. Nothing is opened, so a FIFO or ``/dev/zero`` never blocks or floods."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise UnusableInput(f"{p}: no such file (expected {what})") from None
    except NotADirectoryError:
        raise UnusableInput(f"{p}: no such file (a part of the path is a file, not a folder)") from None
    except OSError as exc:
        raise UnusableInput(f"{p}: cannot be read ({exc.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise UnusableInput(f"{p}: is a folder, not {what}")
    if not stat.S_ISREG(st.st_mode):
        raise UnusableInput(f"{p}: is {kind_of(st)}, not {what}; leapp_lab reads only regular files "
                            f"(copy the data into a file first)")
    return p


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

"""One line for an OSError: the path, the reason and what to do (the CLI's and the magics' exit 2)."""
from __future__ import annotations

import errno


_HINTS = {
    errno.ENOSPC: "free some space or choose another location",
    errno.EDQUOT: "free some space (disk quota) or choose another location",
    errno.EFBIG: "the file size limit was reached: free space, raise the limit or choose another location",
    errno.EROFS: "the location is read-only: choose a writable one",
    errno.EACCES: "check the permissions or choose another location",
    errno.EPERM: "check the permissions or choose another location",
    errno.EISDIR: "a folder is where a file is needed: choose another path",
    errno.ENOTDIR: "a file is where a folder is needed: choose another path",
    errno.EEXIST: "something is already there: choose another path",
    errno.ENOENT: "check the path",
    errno.ENAMETOOLONG: "use a shorter path",
    errno.ELOOP: "the path loops through symbolic links",
    errno.EXDEV: "choose an output on the same file system",
    errno.EIO: "the device reported an I/O error",
}
#: errnos that describe the machine (disk, permissions, paths), never a bug: exit 2, one line
ENVIRONMENT_ERRNOS = frozenset(_HINTS)
#: a write that found no room: a full disk, a quota, the file size limit (``ulimit -f``)
NO_ROOM_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def no_room(exc: BaseException | None) -> OSError | None:
    """The OSError of a write that found no room, in ``exc`` or in what caused it (a library that
    wraps it in an error of its own keeps it as the cause or the context); None when there is none.
    Such an error is the machine's, never a finding about a model: callers that record a failed
    step as a result re-raise it (exit 2 naming the path)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in NO_ROOM_ERRNOS:
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def oserror_line(exc: OSError) -> str:
    """One line for an OSError: the path, the reason and what to do."""
    where = exc.filename if exc.filename is not None else None
    if getattr(exc, "filename2", None):
        where = f"{exc.filename} -> {exc.filename2}"
    reason = exc.strerror or str(exc)
    hint = _HINTS.get(exc.errno, "")
    head = f"{where}: " if where is not None else ""
    return f"{head}{reason}" + (f"; {hint}" if hint else "")

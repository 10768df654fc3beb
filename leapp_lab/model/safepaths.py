"""The two rules every command and API function applies to the paths it is given (docs/safety.md).

**Inputs** are read only when they are regular files (or folders where a folder is meant):
``/dev/zero``, a FIFO, a socket or a device is refused before a byte is read.

**Outputs** never destroy an input or anything leapp_lab did not write. An output path that *is* one
of the command's inputs, *contains* one (a folder above it), or *lies inside* an input file or folder
is refused, naming both; so is one inside any build (the next compile deletes it) and one
where no file can be created (checked by a probe, before any work). An existing path is replaced
only when leapp_lab wrote it for the same purpose (a build folder with its ``build.json``, an HTML
report carrying :data:`HTML_MARKER`, a ``verify --json`` file, ...), and only by renaming a completely written temporary sibling over it.

Both raise :class:`~leapp_lab.model.errors.UserError` subclasses: the CLI prints the message on one
line and exits 2.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import stat
import tarfile
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from .errors import UnsafeOutput, UnusableInput

#: written into the <head> of every HTML page leapp_lab renders, so it can recognise its own reports
HTML_MARKER = '<meta name="generator" content="leapp_lab">'
_JSON_LIMIT = 512 << 20          # a recogniser never reads a larger JSON file to learn its kind
_RUN_ID = re.compile(r"^[A-Za-z0-9._-]{1,200}$")


# -- inputs ----------------------------------------------------------------------------------------

def _kind_of(st: os.stat_result) -> str:
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
        raise UnusableInput(f"{p}: is {_kind_of(st)}, not {what}; leapp_lab reads only regular files "
                            f"(copy the data into a file first)")
    return p


def check_input_path(path: str | os.PathLike, what: str = "file or folder") -> Path:
    """A regular file or a folder (a run, a build); anything else is refused like check_input_file."""
    p = Path(path)
    if p.is_dir():
        return p
    return check_input_file(p, what)


# -- what leapp_lab wrote ----------------------------------------------------------------------------

def _small_json(path: Path):
    """The JSON value of a regular file of at most _JSON_LIMIT bytes, or None (never raises)."""
    try:
        if not path.is_file() or path.stat().st_size > _JSON_LIMIT:
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
                if m.name.lstrip("./") == "build.json" and m.isfile() and m.size < _JSON_LIMIT:
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
            if path.stat().st_size > _JSON_LIMIT:
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


#: beside report.json in ``<onnx dir>/<stem>.prepare/``: the files prepare wrote, as paths relative to
#: that folder (so the record still holds when the whole project folder is moved or copied)
PREPARE_WRITTEN = "written.json"


def _recorded_prepare_outputs(record_dir: Path) -> dict[str, set[Path]]:
    """What the prepare record ``<onnx dir>/<stem>.prepare/`` says prepares of this ONNX wrote:
    ``{"onnx"|"npz"|"reference": real paths}``, from its written.json and its report.json."""
    record_dir = Path(os.path.abspath(record_dir))
    out = _legacy_record(record_dir)
    f = record_dir / PREPARE_WRITTEN
    if json_kind(f) != "prepare-written":
        return out
    try:
        with open(f, encoding="utf-8") as fh:
            d = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return out
    for k in ("onnx", "npz", "reference"):
        v = d.get(k)
        out.setdefault(k, set()).update(_real(record_dir / x) for x in (v if isinstance(v, list) else [])
                                        if isinstance(x, str) and x)
    return out


def _legacy_record(record_dir: Path) -> dict[str, set[Path]]:
    """A record from before written.json: report.json holds the paths as they were typed, relative to
    the folder prepare ran in, found again from where the onnx sits (the current folder is tried too)."""
    f = record_dir / "report.json"
    if json_kind(f) != "prepare":
        return {}
    try:
        with open(f, encoding="utf-8") as fh:
            d = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return {}
    bases = [Path.cwd()]
    onnx = d.get("onnx")
    if isinstance(onnx, str) and not Path(onnx).is_absolute() and ".." not in Path(onnx).parts:
        base = record_dir.parent
        for _ in Path(onnx).parent.parts:
            base = base.parent
        bases.append(base)
    out: dict[str, set[Path]] = {}
    for key in ("onnx", "npz", "reference"):
        v = d.get(key)
        if isinstance(v, str) and v:
            pv = Path(v)
            out[key] = {_real(pv)} if pv.is_absolute() else {_real(b / pv) for b in bases}
    return out


def prepare_written(record_dir, onnx, npz, reference) -> dict:
    """The body of written.json: the files this prepare wrote, plus those earlier prepares of the
    same ONNX wrote that still exist (so switching --npz-out back and forth keeps both replaceable)."""
    rec = Path(os.path.abspath(record_dir))
    old = _recorded_prepare_outputs(rec)
    body: dict = {"kind": "prepare-written"}
    for k, new in (("onnx", onnx), ("npz", npz), ("reference", reference)):
        paths = [_real(Path(new))] + sorted(p for p in old.get(k, set()) if p.is_file() and p != _real(Path(new)))
        body[k] = [os.path.relpath(p, _real(rec)) for p in paths]
    return body


def prepare_purposes(record_dir: str | os.PathLike | None) -> dict[str, Purpose]:
    """Purposes of prepare's three files: an existing file is replaced when the prepare record beside
    the ONNX names it as that same file (or, for the reference, when it holds prepare's timings)."""
    rec = _recorded_prepare_outputs(Path(record_dir)) if record_dir is not None else {}

    def recorded(key: str) -> Callable[[Path], bool]:
        return lambda p: _real(p) in rec.get(key, set())

    return {
        "onnx": Purpose("an ONNX model written by leapp-lab prepare", False, recorded("onnx")),
        "npz": Purpose("an input npz written by leapp-lab prepare", False, recorded("npz")),
        "reference": Purpose("a reference npz written by leapp-lab prepare", False,
                             lambda p: recorded("reference")(p)
                             or npz_has_member(p, "benchmark_timings_ms")),
    }


# -- outputs -------------------------------------------------------------------------------------

def _real(p: Path) -> Path:
    return Path(os.path.realpath(p))


def _same(a: Path, b: Path) -> bool:
    if _real(a) == _real(b):
        return True
    try:
        return os.path.samefile(a, b)      # a hard link to an input is that input
    except OSError:
        return False


def _inside(child: Path, parent: Path) -> bool:
    c, p = _real(child), _real(parent)
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
        raise UnsafeOutput(f"{name}: is {_kind_of(st)}; leapp_lab writes only regular files and "
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
    r = _real(Path(path))
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
    ok = [_real(Path(i)) for i in inside_ok]
    seen: dict[Path, str] = {}
    for path, purpose, flag in outputs:
        if path is None:
            continue
        p = Path(path)
        pur = PURPOSES[purpose] if isinstance(purpose, str) else purpose
        name = f"{flag} {p}" if flag else str(p)
        r = _real(p)
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
            if _inside(p, i) and _real(i) not in ok:
                raise UnsafeOutput(f"{name}: lies inside the input {i} ({what}); choose an output path "
                                   f"outside it")
        b = enclosing_build(p, into=_written_into(pur))
        if b is not None:
            raise UnsafeOutput(f"{name}: lies inside the build {b}; the next `leapp-lab compile` of that "
                               f"engine replaces the whole folder and deletes it: choose a path outside "
                               f"the build (such as {b.parent / 'leapp_lab'})")
        check_replaceable(p, pur, flag)
        check_writable(p, pur)


# -- writing -------------------------------------------------------------------------------------

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
        yield tmps
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


# -- one line for an OSError ---------------------------------------------------------------------

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


def oserror_line(exc: OSError) -> str:
    """One line for an OSError: the path, the reason and what to do."""
    where = exc.filename if exc.filename is not None else None
    if getattr(exc, "filename2", None):
        where = f"{exc.filename} -> {exc.filename2}"
    reason = exc.strerror or str(exc)
    hint = _HINTS.get(exc.errno, "")
    head = f"{where}: " if where is not None else ""
    return f"{head}{reason}" + (f"; {hint}" if hint else "")

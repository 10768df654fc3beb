"""JSON and npz on disk, with the two rules every report obeys.

* JSON never holds ``NaN``/``Infinity``: a non-finite float is written as ``null`` and counted, so a
  consumer in any language can parse the file and still learn that values were dropped.
* Arrays go to *uncompressed* ``.npz`` and are read back with ``allow_pickle=False``.

Every write goes to a temporary sibling first and is renamed into place, so a crash half-way never
leaves a truncated file where a good one stood.
"""
from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import math
import os
import tempfile
import zipfile
from pathlib import Path
from typing import IO, Any, Iterator, Mapping

import numpy as np

from .errors import UnusableInput
from .npzcheck import check_npz
from .safepaths import check_input_file, open_input, present, writing
from .safepaths.recognise import JSON_LIMIT_VARIABLE, json_limit


_FIELDS: dict[type, tuple[str, ...]] = {}


def _saved_fields(cls: type) -> tuple[str, ...]:
    """The fields of a record dataclass that JSON holds (not the transient ones), once per class."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls)
                                     if not f.metadata.get("transient"))
    return names


_INF = math.inf
_INT_TYPES = frozenset((int, bool))
_NUMBER_TYPES = frozenset((int, bool, float))


def to_jsonable(obj: Any, _counter: list[int] | None = None) -> Any:
    """Convert ``obj`` to plain JSON types; non-finite floats become ``None``.

    ``_counter`` (a one-element list) accumulates how many non-finite values were replaced.
    """
    if _counter is None:
        _counter = [0]
    # the common leaves first, by exact type: a report holds tens of thousands of them
    t = type(obj)
    if t is float:
        if -_INF < obj < _INF:
            return obj
        _counter[0] += 1
        return None
    if obj is None or t is str or t is bool or t is int:
        return obj
    if t is list or t is tuple:
        # lists of plain finite numbers (histogram counts and edges: most of a big report's leaves)
        # as they are, without a call per element
        kinds = set(map(type, obj))
        if kinds <= _INT_TYPES or (kinds <= _NUMBER_TYPES and all(-_INF < v < _INF for v in obj)):
            return list(obj)
        return [to_jsonable(v, _counter) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        d = {k: to_jsonable(getattr(obj, k), _counter) for k in _saved_fields(t)}
        extra = getattr(obj, "_json_extra", None)   # derived values a record adds for JSON readers
        if extra is not None:
            d.update(to_jsonable(extra(), _counter))
        return d
    if isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        if math.isfinite(f):
            return f
        _counter[0] += 1
        return None
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v, _counter) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v, _counter) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v, _counter) for v in obj.tolist()]
    raise TypeError(f"cannot write {type(obj).__name__} to JSON: {obj!r:.80}")


def dumps(obj: Any, *, indent: int | None = 1) -> tuple[str, int]:
    """Serialise to strict JSON; returns ``(text, number of non-finite values replaced by null)``."""
    counter = [0]
    plain = to_jsonable(obj, counter)
    return json.dumps(plain, indent=indent, allow_nan=False, ensure_ascii=False), counter[0]


def _umask_mode() -> int:
    # mkstemp creates 0600 files; a report is meant to be shared, so give it the mode a plain
    # open() would have given it. Linux reports the umask in /proc without changing it; the
    # os.umask() round trip below briefly sets it to 0 for every thread, so it is the fallback.
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """A binary file handle on a temporary sibling of ``path``, renamed into place only when the
    block completes; on any error the temporary file is removed and ``path`` is untouched."""
    path = Path(path)
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
    with writing(path, rename=True):
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with writing(path):
            with os.fdopen(fd, "wb") as fh:
                yield fh
        with writing(path, rename=True):
            os.chmod(tmp, _umask_mode())
            os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    with atomic_file(path) as fh:
        fh.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike, obj: Any) -> int:
    """Write strict JSON atomically; returns the number of non-finite values written as null."""
    text, n = dumps(obj)
    atomic_write_text(path, text + "\n")
    return n


def read_json(path: str | os.PathLike) -> Any:
    path = Path(path)
    if not present(path):
        raise FileNotFoundError(f"{path}: no such file")
    check_input_file(path, "a JSON file")
    size, limit = path.stat().st_size, json_limit()
    if size > limit:
        raise UnusableInput(f"{path}: {size / (1 << 20):,.1f} MiB of JSON, more than the {limit / (1 << 20):,.1f} "
                            f"MiB leapp_lab parses from one file (what it writes is well under 1 MiB); not "
                            f"read. For a trusted larger file set {JSON_LIMIT_VARIABLE}=<MiB>")
    try:
        with open_input(path, "a JSON file", "r", limit,
                        f"; for a trusted larger file set {JSON_LIMIT_VARIABLE}=<MiB>") as fh:
            return json.load(fh)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:   # ValueError: also a 5,000-digit int
        raise UnusableInput(f"{path}: not valid JSON ({type(exc).__name__}: {str(exc)[:200]})") from None


def save_npz(path: str | os.PathLike, arrays: Mapping[str, Any]) -> Path:
    """Write an uncompressed npz atomically. Keys are kept verbatim (they may contain '/')."""
    clean = {}
    for k, v in arrays.items():
        a = np.asarray(v)
        if a.dtype == object:
            raise TypeError(f"array {k!r} has dtype object; only numeric arrays are stored")
        clean[str(k)] = a
    with atomic_file(path) as fh:
        np.savez(fh, **clean)
    return Path(path)


def load_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Load every array of an npz without ever unpickling. Errors name the file."""
    path = Path(path)
    if not present(path):
        raise FileNotFoundError(f"{path}: no such file")
    stored = _stored_members(path)
    if stored is not None:
        return _load_stored(path, stored)
    headers = check_npz(path)   # every header sane and within the file before numpy allocates anything
    from .inflate import check_inflate, read_compressed
    from .npzcheck import open_zip
    out: dict[str, np.ndarray] = {}
    with open_zip(path) as zf:
        infos = zf.infolist()
        check_inflate(path, infos)     # compressed members: their declared sizes within the bound first
        for info in infos:
            key = info.filename[:-4]
            if info.compress_type != zipfile.ZIP_STORED:
                out[key] = read_compressed(path, info, headers[key])   # inflated in bounded pieces
                continue
            try:                       # stored: its bytes are in the file, so bounded by its size
                with zf.open(info) as fh:
                    out[key] = np.lib.format.read_array(fh, allow_pickle=False)
            except ValueError as exc:
                raise UnusableInput(f"{path}: holds an object array, which is never unpickled ({exc})") from None
            except Exception as exc:  # zipfile.BadZipFile, EOFError, OSError: a truncated or foreign file
                raise UnusableInput(f"{path}: not a readable .npz file ({type(exc).__name__}: {exc})") from None
    return out


def _stored_members(path: Path) -> list | None:
    """The members of an npz written uncompressed (``np.savez``, ``save_npz``), or None (any
    compressed member, or not a readable zip: ``load_npz``'s general path says what is wrong)."""
    import zipfile

    from .npzcheck import open_zip
    from .safepaths import check_input_file
    check_input_file(path, "an .npz file")
    try:
        with open_zip(path) as zf:
            infos = zf.infolist()
    except UnusableInput:
        return None
    if not infos or any(i.compress_type != zipfile.ZIP_STORED for i in infos):
        return None
    return infos


def _load_stored(path: Path, infos: list) -> dict[str, np.ndarray]:
    """Every member of an uncompressed npz, each header checked and parsed in place (numpy's
    parser reads a header with ``ast.literal_eval``: for the 2,000 row histograms of a large run
    that was most of opening it), then copied out of one read-only map of the file."""
    import mmap

    from .npzcheck import check_member, mapped_member_header, mapped_view
    out: dict[str, np.ndarray] = {}
    with open_input(path, "an .npz file") as fh:
        try:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise UnusableInput(f"{path}: not a readable .npz file ({exc})") from None
    try:
        for info in infos:
            check_member(info, len(mm), path)
            h = mapped_member_header(mm, info, path)
            out[info.filename[:-4]] = mapped_view(mm, h, f"{path}: array {info.filename[:-4]!r}").copy(order="K")
    finally:
        try:
            mm.close()
        except BufferError:     # a view still alive (an exception mid-way): the map closes with it
            pass
    return out

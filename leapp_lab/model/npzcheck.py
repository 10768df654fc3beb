"""Check an ``.npz`` before anything is read from it: every member a sane ``.npy`` header whose declared
shape fits in the bytes the member holds.

A corrupt or hostile header (a negative dimension, a shape whose byte size overflows 64 bits or is
larger than the file, a dtype of pickled objects) is refused here with :class:`UnusableInput` naming
the file and the member, before numpy allocates or memory-maps anything.
"""
from __future__ import annotations

import io
import os
import re
import struct
import tokenize
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from .errors import UnusableInput
from .safepaths import check_input_file


@dataclass
class NpyHeader:
    shape: tuple[int, ...]
    fortran: bool
    dtype: np.dtype
    nbytes: int          # what the shape and dtype declare
    header_len: int = 0  # bytes of the .npy header: the data start this far into the member
    data_offset: int = 0  # where the data start in the file (a stored member; compare.npzio)


def read_npy_header(fh: IO[bytes], where: str) -> NpyHeader:
    """Read and check a ``.npy`` header at ``fh``'s position; ``where`` names the file and member."""
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    except (ValueError, EOFError, SyntaxError, TypeError, struct.error, OverflowError,
            MemoryError, RecursionError, UnicodeDecodeError, tokenize.TokenError, KeyError,
            IndexError, AttributeError) as exc:   # numpy's parser, on a corrupt header (fuzzed)
        raise UnusableInput(f"{where} is not a valid .npy array ({type(exc).__name__}: "
                            f"{str(exc)[:200]})") from None
    if dtype.hasobject:
        raise UnusableInput(f"{where} has dtype object (pickled Python objects), which is never "
                            f"unpickled; save numeric arrays only")
    if not isinstance(shape, tuple) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise UnusableInput(f"{where} declares an impossible shape {shape!r}")
    n = 1
    for d in shape:
        n *= d                     # Python ints: a hostile shape cannot overflow here
    return NpyHeader(tuple(shape), bool(fortran), dtype, n * dtype.itemsize)


def check_fits(h: NpyHeader, available: int, where: str) -> None:
    """The declared bytes must be present: a larger shape is a truncated or corrupt file."""
    if h.nbytes > available:
        raise UnusableInput(f"{where} declares shape {h.shape} of {h.dtype} ({h.nbytes} bytes) but holds "
                            f"only {max(available, 0)} bytes of data: the file is truncated or corrupt; "
                            f"write it again")


def open_zip(path: Path) -> zipfile.ZipFile:
    """The npz as a zip, or UnusableInput naming it (a truncated file has lost its directory)."""
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
            NotImplementedError) as exc:    # NotImplementedError: a corrupt "version needed" field
        raise UnusableInput(f"{path}: not an .npz file (not a readable zip archive: {exc}); it may be "
                            f"truncated: write it again") from None
    try:
        check_unique(zf, path)
    except UnusableInput:
        zf.close()
        raise
    return zf


def check_unique(zf: zipfile.ZipFile, path: Path) -> None:
    """One member per name: zipfile's lookup (and so np.load and every reader here) silently keeps
    the last of two members of one name, so a file with two would be read as the other array."""
    if len(zf.NameToInfo) == len(zf.filelist):
        return
    seen: set[str] = set()
    for info in zf.filelist:
        if info.filename in seen:
            raise UnusableInput(f"{path}: member {info.filename!r} appears more than once (array "
                                f"{info.filename.removesuffix('.npy')!r}); an .npz holds one array per "
                                f"name and a reader would silently use the last one; write the file "
                                f"again with each array once")
        seen.add(info.filename)


def member_header(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path) -> NpyHeader:
    """The checked header of one member; the declared size must fit the member's uncompressed size."""
    where = f"{path}: array {info.filename[:-4]!r}"
    try:
        with zf.open(info) as fh:
            h = read_npy_header(fh, where)
            header_len = fh.tell()
    except UnusableInput:
        raise
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, zlib.error,
            RuntimeError) as exc:       # zlib.error: corrupt deflate data; RuntimeError: "encrypted"
        raise UnusableInput(f"{where} is unreadable ({type(exc).__name__}: {exc})") from None
    check_fits(h, info.file_size - header_len, where)
    h.header_len = header_len
    return h


def check_npz(path: str | os.PathLike) -> dict[str, NpyHeader]:
    """Check every member of the npz at ``path``; returns name -> header (names without ``.npy``)."""
    p = check_input_file(path, "an .npz file")
    out: dict[str, NpyHeader] = {}
    with open_zip(p) as zf:
        size = p.stat().st_size
        for info in zf.infolist():
            check_member(info, size, p)
            out[info.filename[:-4]] = member_header(zf, info, p)
    return out


def check_member(info: zipfile.ZipInfo, size: int, path: Path) -> None:
    """A member must be a ``.npy`` file and, stored, lie within the file's ``size`` bytes."""
    if not info.filename.endswith(".npy"):
        raise UnusableInput(f"{path}: not an .npz file (member {info.filename!r} is not .npy)")
    if info.compress_type == zipfile.ZIP_STORED and info.header_offset + info.file_size > size:
        raise UnusableInput(f"{path}: member {info.filename!r} runs past the end of the file: "
                            f"the file is truncated; write it again")


# numpy's own header layout (np.lib.format): {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
_HEADER = re.compile(r"\{'descr': '([<>|=]?[a-zA-Z][a-zA-Z0-9]*)', 'fortran_order': (True|False), "
                     r"'shape': \(((?:\d+, )*\d*|\d+,)\), \} *\n?\Z")


def _header_len(mm, start: int) -> int:
    """Bytes of the npy header at ``start`` (magic, version, length field and the header text)."""
    major = mm[start + 6] if start + 8 <= len(mm) else 0
    if major == 1:
        return 10 + struct.unpack_from("<H", mm, start + 8)[0]
    return 12 + struct.unpack_from("<I", mm, start + 8)[0]


def _parse_header(mm, start: int, end: int) -> NpyHeader | None:
    """The npy header at ``start`` when it is in numpy's usual layout (a plain dtype), else None
    (``read_npy_header`` then reads it, or says what is wrong)."""
    if start + 12 > end or mm[start:start + 6] != b"\x93NUMPY" or mm[start + 6] not in (1, 2, 3):
        return None
    hl = _header_len(mm, start)
    if start + hl > end or hl > 65_536 + 12:
        return None
    try:
        text = mm[start + (10 if mm[start + 6] == 1 else 12):start + hl].decode(
            "utf8" if mm[start + 6] == 3 else "latin1")
    except UnicodeDecodeError:
        return None
    got = _HEADER.match(text)
    if got is None:
        return None
    try:
        dtype = np.dtype(got.group(1))
    except TypeError:
        return None
    shape = tuple(int(d) for d in got.group(3).replace(",", " ").split())
    nbytes = dtype.itemsize
    for d in shape:
        nbytes *= d
    return NpyHeader(shape, got.group(2) == "True", dtype, nbytes, hl)


def mapped_member_header(mm, info: zipfile.ZipInfo, path: Path) -> NpyHeader:
    """The checked header of a stored member of the npz whose bytes (or memory map) are ``mm``, read
    in place: numpy's usual layout parsed here, any other by ``read_npy_header``. The same checks as
    ``member_header``; ``h.data_offset`` is where the member's data start in the file."""
    where = f"{path}: array {info.filename[:-4]!r}"
    off = info.header_offset
    if off + 30 > len(mm) or mm[off:off + 4] != b"PK\x03\x04":
        raise UnusableInput(f"{path}: member {info.filename[:-4]!r}: bad zip local header")
    n, m = struct.unpack_from("<HH", mm, off + 26)
    start = off + 30 + n + m
    end = min(start + info.file_size, len(mm))
    h = _parse_header(mm, start, end)
    if h is None:
        h = read_npy_header(io.BytesIO(mm[start:min(end, start + 65_536 + 12)]), where)
        h.header_len = _header_len(mm, start)
    elif h.dtype.hasobject:
        raise UnusableInput(f"{where} has dtype object (pickled Python objects), which is never "
                            f"unpickled; save numeric arrays only")
    check_fits(h, info.file_size - h.header_len, where)
    h.data_offset = start + h.header_len
    return h


def mapped_view(mm, h: NpyHeader, where: str) -> np.ndarray:
    """The data of a stored member whose header ``h`` ``mapped_member_header`` read, as a read-only
    view of ``mm`` (an empty array when it holds no element); ``where`` names file and member."""
    if h.data_offset + h.nbytes > len(mm):
        raise UnusableInput(f"{where} is truncated")
    if h.nbytes == 0:
        return np.empty(h.shape, dtype=h.dtype)
    flat = np.frombuffer(mm, dtype=h.dtype, count=h.nbytes // h.dtype.itemsize, offset=h.data_offset)
    return flat.reshape(h.shape, order="F" if h.fortran else "C")

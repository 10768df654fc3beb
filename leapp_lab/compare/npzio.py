"""Open an ``.npz`` for comparison without reading it whole, and without ever unpickling.

An uncompressed npz is a zip whose members are stored ``.npy`` files; a stored member's bytes are
contiguous in the file, so each array is a read-only view of one memory map of the whole file
(offset = the member's local header + its name and extra field + the npy header). Compressed
members (``np.savez_compressed``) are read normally. Every problem is a :class:`NpzInputError`
naming the file and what is wrong.

One map per file, plain ``ndarray`` views of it and headers parsed from the map: a verify opens
every member of two files, and one ``np.memmap`` per member (an mmap call, a subclass whose every
slice runs Python code) and numpy's header parser (``ast.literal_eval``) cost more than scoring a
small tap. The map is unmapped when the last array viewing it is gone.
"""
from __future__ import annotations

import io
import mmap
import os
import re
import struct
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from leapp_lab.model import npzcheck
from leapp_lab.model.errors import UnusableInput
from leapp_lab.model.safepaths import check_input_file


class NpzInputError(UnusableInput):
    """An input file verify cannot use (the message names the file and the problem)."""


def _checked(fn, *args):
    try:
        return fn(*args)
    except NpzInputError:
        raise
    except UnusableInput as exc:
        raise NpzInputError(str(exc)) from None


class NpzArrays(Mapping):
    """Read-only mapping name -> array (memory-mapped where the member is stored uncompressed)."""

    def __init__(self, path: str | os.PathLike, *, mmap: bool = True):
        self.path = Path(path)
        _checked(check_input_file, self.path, "an .npz file")
        self._zip = _checked(npzcheck.open_zip, self.path)
        self._info = {}
        for info in self._zip.infolist():
            if not info.filename.endswith(".npy"):
                raise NpzInputError(f"{self.path}: not an .npz file (member {info.filename!r} is not .npy)")
            self._info[info.filename[:-4]] = info
        self.mmap = mmap
        self._map = None            # the file's memory map, made at the first stored member read
        self._cache: dict[str, np.ndarray] = {}
        self._headers: dict[str, npzcheck.NpyHeader] = {}

    # -- Mapping -------------------------------------------------------------------------------
    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._cache:
            self._cache[key] = self._load(key)
        return self._cache[key]

    def __contains__(self, key) -> bool:
        return key in self._info        # (Mapping's would read the array)

    def __iter__(self):
        return iter(self._info)

    def __len__(self) -> int:
        return len(self._info)

    def close(self) -> None:
        self._cache.clear()
        self._zip.close()
        self._map = None                # arrays still viewing it keep it mapped

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- headers only (cheap) ------------------------------------------------------------------
    def header(self, key: str) -> tuple[tuple[int, ...], np.dtype]:
        """(shape, dtype) of a member without reading its data."""
        h = self._checked_header(key)
        return h.shape, h.dtype

    def _checked_header(self, key: str) -> npzcheck.NpyHeader:
        if key not in self._headers:
            # checked: a sane header whose declared bytes fit in the member (npzcheck); parsed once
            info = self._info[key]
            if self.mmap and info.compress_type == zipfile.ZIP_STORED:
                h = self._mapped_header(key, info)
            else:
                h = _checked(npzcheck.member_header, self._zip, info, self.path)
            self._headers[key] = h
        return self._headers[key]

    def _file_map(self):
        if self._map is None:
            try:
                with open(self.path, "rb") as f:
                    self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError) as exc:
                raise NpzInputError(f"{self.path}: cannot be memory-mapped ({exc})") from None
        return self._map

    def _mapped_header(self, key: str, info: zipfile.ZipInfo) -> npzcheck.NpyHeader:
        """A stored member's checked npy header, read from the map: (offset of the data is
        ``h.data_offset``). The same checks as ``npzcheck.member_header``."""
        mm = self._file_map()
        where = f"{self.path}: array {key!r}"
        off = info.header_offset
        if off + 30 > len(mm) or mm[off:off + 4] != b"PK\x03\x04":
            raise NpzInputError(f"{self.path}: member {key!r}: bad zip local header")
        n, m = struct.unpack_from("<HH", mm, off + 26)
        start = off + 30 + n + m
        end = min(start + info.file_size, len(mm))
        h = _parse_header(mm, start, end)
        if h is None:       # not numpy's usual layout (or not a header at all): numpy's parser says
            h = _checked(npzcheck.read_npy_header, io.BytesIO(mm[start:min(end, start + 65_536 + 12)]), where)
            h.header_len = _header_len(mm, start)
        elif h.dtype.hasobject:
            raise NpzInputError(f"{where} has dtype object (pickled Python objects), which is never "
                                f"unpickled; save numeric arrays only")
        _checked(npzcheck.check_fits, h, info.file_size - h.header_len, where)
        h.data_offset = start + h.header_len
        return h

    # -- data ----------------------------------------------------------------------------------
    def _load(self, key: str) -> np.ndarray:
        info = self._info[key]
        h = self._checked_header(key)   # refuses a corrupt header or a shape larger than the member
        if self.mmap and info.compress_type == zipfile.ZIP_STORED:
            shape, fortran, dtype = h.shape, h.fortran, h.dtype
            count = 1
            for d in shape:
                count *= d        # Python ints: never overflows
            mm = self._file_map()
            if h.data_offset + count * dtype.itemsize > len(mm):
                raise NpzInputError(f"{self.path}: array {key!r} is truncated")
            if count == 0:
                return np.empty(shape, dtype=dtype)
            flat = np.frombuffer(mm, dtype=dtype, count=count, offset=h.data_offset)
            return flat.reshape(shape, order="F" if fortran else "C")
        try:
            with self._zip.open(info) as fh:
                return np.lib.format.read_array(fh, allow_pickle=False)
        except ValueError as exc:
            raise NpzInputError(f"{self.path}: array {key!r} cannot be read without unpickling ({exc})") from None
        except MemoryError:
            raise NpzInputError(f"{self.path}: array {key!r} is too large to load into memory") from None
        except Exception as exc:  # noqa: BLE001 - truncated / corrupt member
            raise NpzInputError(f"{self.path}: array {key!r} is unreadable ({type(exc).__name__}: {exc})") from None


# numpy's own header layout (np.lib.format): {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
_HEADER = re.compile(r"\{'descr': '([<>|=]?[a-zA-Z][a-zA-Z0-9]*)', 'fortran_order': (True|False), "
                     r"'shape': \(((?:\d+, )*\d*|\d+,)\), \} *\n?\Z")


def _header_len(mm, start: int) -> int:
    """Bytes of the npy header at ``start`` (magic, version, length field and the header text)."""
    major = mm[start + 6] if start + 8 <= len(mm) else 0
    if major == 1:
        return 10 + struct.unpack_from("<H", mm, start + 8)[0]
    return 12 + struct.unpack_from("<I", mm, start + 8)[0]


def _parse_header(mm, start: int, end: int) -> npzcheck.NpyHeader | None:
    """The npy header at ``start`` when it is in numpy's usual layout (a plain dtype), else None
    (``npzcheck.read_npy_header`` then reads it, or says what is wrong)."""
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
    h = npzcheck.NpyHeader(shape, got.group(2) == "True", dtype, nbytes, hl)
    return h

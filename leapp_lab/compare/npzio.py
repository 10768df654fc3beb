"""Open an ``.npz`` for comparison without reading it whole, and without ever unpickling.

An uncompressed npz is a zip whose members are stored ``.npy`` files; a stored member's bytes are
contiguous in the file, so each array can be memory-mapped in place (offset = the member's local
header + its name and extra field + the npy header). Compressed members (``np.savez_compressed``)
are read normally. Every problem is a :class:`NpzInputError` naming the file and what is wrong.
"""
from __future__ import annotations

import os
import struct
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np


class NpzInputError(ValueError):
    """An input file verify cannot use (the message names the file and the problem)."""


class NpzArrays(Mapping):
    """Read-only mapping name -> array (memory-mapped where the member is stored uncompressed)."""

    def __init__(self, path: str | os.PathLike, *, mmap: bool = True):
        self.path = Path(path)
        if not self.path.exists():
            raise NpzInputError(f"{self.path}: no such file")
        if self.path.is_dir():
            raise NpzInputError(f"{self.path}: is a folder, not an .npz file")
        try:
            self._zip = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise NpzInputError(f"{self.path}: not an .npz file (not a zip archive: {exc})") from None
        self._info = {}
        for info in self._zip.infolist():
            if not info.filename.endswith(".npy"):
                raise NpzInputError(f"{self.path}: not an .npz file (member {info.filename!r} is not .npy)")
            self._info[info.filename[:-4]] = info
        self.mmap = mmap
        self._cache: dict[str, np.ndarray] = {}
        self._headers: dict[str, tuple] = {}

    # -- Mapping -------------------------------------------------------------------------------
    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._cache:
            self._cache[key] = self._load(key)
        return self._cache[key]

    def __iter__(self):
        return iter(self._info)

    def __len__(self) -> int:
        return len(self._info)

    def close(self) -> None:
        self._cache.clear()
        self._zip.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- headers only (cheap) ------------------------------------------------------------------
    def header(self, key: str) -> tuple[tuple[int, ...], np.dtype]:
        """(shape, dtype) of a member without reading its data."""
        if key not in self._headers:
            info = self._info[key]
            with self._zip.open(info) as fh:
                shape, fortran, dtype = self._read_header(fh, key)
            self._headers[key] = (shape, dtype)
        return self._headers[key]

    def _read_header(self, fh, key):
        try:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        except ValueError as exc:
            raise NpzInputError(f"{self.path}: member {key!r} is not a valid .npy array ({exc})") from None
        if dtype.hasobject:
            raise NpzInputError(f"{self.path}: array {key!r} has dtype object (pickled Python objects), "
                                f"which is never unpickled; save numeric arrays only")
        return tuple(shape), fortran, dtype

    # -- data ----------------------------------------------------------------------------------
    def _load(self, key: str) -> np.ndarray:
        info = self._info[key]
        if self.mmap and info.compress_type == zipfile.ZIP_STORED:
            with open(self.path, "rb") as f:
                f.seek(info.header_offset)
                local = f.read(30)
                if local[:4] != b"PK\x03\x04":
                    raise NpzInputError(f"{self.path}: member {key!r}: bad zip local header")
                n, m = struct.unpack("<HH", local[26:30])
                start = info.header_offset + 30 + n + m
                f.seek(start)
                shape, fortran, dtype = self._read_header(f, key)
                offset = f.tell()
            count = int(np.prod(shape, dtype=np.int64)) if shape else 1
            if offset + count * dtype.itemsize > start + info.file_size:
                raise NpzInputError(f"{self.path}: array {key!r} is truncated")
            if count == 0:
                return np.empty(shape, dtype=dtype)
            return np.memmap(self.path, dtype=dtype, mode="r", offset=offset, shape=shape,
                             order="F" if fortran else "C")
        try:
            with self._zip.open(info) as fh:
                return np.lib.format.read_array(fh, allow_pickle=False)
        except ValueError as exc:
            raise NpzInputError(f"{self.path}: array {key!r} cannot be read without unpickling ({exc})") from None
        except Exception as exc:  # noqa: BLE001 - truncated / corrupt member
            raise NpzInputError(f"{self.path}: array {key!r} is unreadable ({type(exc).__name__}: {exc})") from None

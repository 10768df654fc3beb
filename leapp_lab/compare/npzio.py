"""Open an ``.npz`` for comparison without reading it whole, and without ever unpickling.

An uncompressed npz is a zip whose members are stored ``.npy`` files; a stored member's bytes are
contiguous in the file, so each array is a read-only view of one memory map of the whole file
(offset = the member's local header + its name and extra field + the npy header). Compressed
members (``np.savez_compressed``) are inflated within a bound (``model.inflate``). Every problem
is a :class:`NpzInputError` naming the file and what is wrong.

One map per file, plain ``ndarray`` views of it and headers parsed from the map: a verify opens
every member of two files, and one ``np.memmap`` per member (an mmap call, a subclass whose every
slice runs Python code) and numpy's header parser (``ast.literal_eval``) cost more than scoring a
small tap. The map is unmapped when the last array viewing it is gone.
"""
from __future__ import annotations

import mmap
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from leapp_lab.model import npzcheck
from leapp_lab.model.errors import UnusableInput
from leapp_lab.model.inflate import check_inflate, read_compressed
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
        # compressed members: their declared inflated sizes within the bound before any is read
        _checked(check_inflate, self.path, self._info.values())
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
            if self.mmap and info.compress_type == zipfile.ZIP_STORED:   # read from the map
                h = _checked(npzcheck.mapped_member_header, self._file_map(), info, self.path)
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

    # -- data ----------------------------------------------------------------------------------
    def _load(self, key: str) -> np.ndarray:
        info = self._info[key]
        h = self._checked_header(key)   # refuses a corrupt header or a shape larger than the member
        if self.mmap and info.compress_type == zipfile.ZIP_STORED:
            return _checked(npzcheck.mapped_view, self._file_map(), h, f"{self.path}: array {key!r}")
        if info.compress_type != zipfile.ZIP_STORED:     # inflated in pieces, within its checked size
            return _checked(read_compressed, self.path, info, h)
        try:
            with self._zip.open(info) as fh:
                return np.lib.format.read_array(fh, allow_pickle=False)
        except ValueError as exc:
            raise NpzInputError(f"{self.path}: array {key!r} cannot be read without unpickling ({exc})") from None
        except MemoryError:
            raise NpzInputError(f"{self.path}: array {key!r} is too large to load into memory") from None
        except Exception as exc:  # noqa: BLE001 - truncated / corrupt member
            raise NpzInputError(f"{self.path}: array {key!r} is unreadable ({type(exc).__name__}: {exc})") from None


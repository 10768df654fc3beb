"""An npz written one sample at a time: every array has a leading sample axis, and each sample's
values go to their place in an ``.npy`` file on disk as they come, so writing N samples of T bytes
of taps holds one sample's values in memory, not N (and not twice, as stacking them did).

The ``.npy`` members are then copied into an uncompressed zip (what ``numpy.savez`` writes and
``numpy.load`` / ``compare.npzio`` read, member name = key + ``.npy``) in chunks.
"""
from __future__ import annotations

import shutil
import tempfile
import zipfile
from pathlib import Path

import numpy as np


class SampleNpzWriter:
    """``add(i, {key: array})`` for each sample ``i`` of ``n``; ``alias(new, old)``, ``drop(key)``;
    ``close(path)`` writes the npz. A key whose shape or dtype changes between samples raises
    ValueError naming it and both shapes."""

    def __init__(self, n: int, folder: Path):
        self.n = n
        self.dir = Path(tempfile.mkdtemp(prefix=".samples-", dir=folder))
        self.files: dict[str, Path] = {}
        self.meta: dict[str, tuple[tuple, np.dtype, int]] = {}   # shape, dtype, header length
        self.names: dict[str, str] = {}                            # npz key -> file key

    def add(self, i: int, values: dict) -> None:
        for k, v in values.items():
            a = np.ascontiguousarray(v)
            if k not in self.files:
                p = self.dir / f"{len(self.files)}.npy"
                with open(p, "wb") as fh:
                    np.lib.format.write_array_header_1_0(fh, {"descr": np.lib.format.dtype_to_descr(a.dtype),
                                                              "fortran_order": False,
                                                              "shape": (self.n, *a.shape)})
                    hlen = fh.tell()
                self.files[k], self.meta[k], self.names[k] = p, (a.shape, a.dtype, hlen), k
            shape, dtype, hlen = self.meta[k]
            if a.shape != shape or a.dtype != dtype:
                raise ValueError(f"output {k!r} changes shape across samples ({shape} {dtype} on the first, "
                                 f"{a.shape} {a.dtype} on sample {i}); samples must share shapes to be "
                                 f"stacked along the sample axis")
            with open(self.files[k], "r+b") as fh:
                fh.seek(hlen + i * a.nbytes)
                a.tofile(fh)

    def keys(self) -> list[str]:
        return list(self.names)

    def alias(self, new: str, old: str) -> None:
        self.names[new] = self.names[old]

    def drop(self, key: str) -> None:
        self.names.pop(key, None)

    def read(self, key: str, i: int) -> np.ndarray:
        """Sample ``i`` of ``key`` as written."""
        fk = self.names[key]
        shape, dtype, hlen = self.meta[fk]
        with open(self.files[fk], "rb") as fh:
            fh.seek(hlen + i * int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
            return np.fromfile(fh, dtype=dtype, count=int(np.prod(shape, dtype=np.int64))).reshape(shape)

    def close(self, path: Path) -> None:
        """Write the npz at ``path`` and remove the per-key files."""
        try:
            with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                for key, fk in self.names.items():
                    # a ZipInfo keeps the key verbatim (ZipFile.write would strip a leading "/" and
                    # normalise the path), as numpy.savez does
                    info = zipfile.ZipInfo(key + ".npy")
                    info.compress_type = zipfile.ZIP_STORED
                    with open(self.files[fk], "rb") as src, zf.open(info, "w", force_zip64=True) as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
        finally:
            self.discard()

    def discard(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

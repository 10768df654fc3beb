"""Read the compressed members of an ``.npz`` (``np.savez_compressed``) within a bound of memory.

A deflated member states its inflated size in the zip directory, and the zip does not enforce it:
1 GiB of zeros deflates to 1 MB, and a reader that trusts the stream allocates whatever comes out.
So before a byte is inflated, every compressed member of a file is checked here: its declared size
must be exactly what its ``.npy`` header's shape and dtype need, and all of them together must fit
in :func:`inflate_limit` (docs/safety.md, "size bounds"). The member is then inflated in pieces
into the one array that checked size allows; a stream that inflates to more than it declared is
refused as soon as the excess appears, never buffered. Stored members are not read here: their
bytes are in the file, so they are bounded by its size (and memory-mapped by the callers).
"""
from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path
from typing import Iterable

import numpy as np

from .errors import UnusableInput
from .limits import mib_limit
from .npzcheck import NpyHeader

#: the default bound on what the compressed members of one .npz may inflate to, together
INFLATE_LIMIT = 512 << 20
#: an environment variable that raises (or lowers) it, in MiB, for a trusted large compressed file
LIMIT_VARIABLE = "LEAPP_LAB_INFLATE_LIMIT_MB"
_CHUNK = 1 << 20          # compressed bytes read, and inflated bytes made, per step


def inflate_limit() -> int:
    """The bound in bytes: ``$LEAPP_LAB_INFLATE_LIMIT_MB`` MiB when set, else :data:`INFLATE_LIMIT`."""
    return mib_limit(LIMIT_VARIABLE, INFLATE_LIMIT, "the most a compressed .npz may inflate to")


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB"


def check_inflate(path: Path, infos: Iterable[zipfile.ZipInfo]) -> None:
    """Refuse an npz whose compressed members declare more inflated bytes, together, than the limit
    (named: the largest of them), before any of them is inflated. Stored members cost nothing here."""
    packed = [i for i in infos if i.compress_type != zipfile.ZIP_STORED]
    total = sum(i.file_size for i in packed)
    limit = inflate_limit()
    if total <= limit:
        return
    big = max(packed, key=lambda i: i.file_size)
    more = (f" (its {len(packed)} compressed members together: {_mib(total)})" if len(packed) > 1 else "")
    raise UnusableInput(f"{path}: array {big.filename[:-4]!r} is compressed and declares {_mib(big.file_size)} "
                        f"inflated{more}, more than the {_mib(limit)} leapp_lab inflates from one .npz "
                        f"(docs/safety.md, size bounds); nothing was inflated. Save it uncompressed "
                        f"(np.savez), or raise {LIMIT_VARIABLE} if you trust the file")


def read_compressed(path: Path, info: zipfile.ZipInfo, h: NpyHeader) -> np.ndarray:
    """The array of the deflated member ``info`` whose checked header is ``h`` (``npzcheck.
    member_header``), inflated in pieces into one allocation of its declared size. The caller has
    run :func:`check_inflate` on the file. Every problem is UnusableInput naming file and member."""
    where = f"{path}: array {info.filename[:-4]!r}"
    if info.flag_bits & 0x1:
        raise UnusableInput(f"{where} is encrypted; leapp_lab reads only plain .npz files")
    if info.compress_type != zipfile.ZIP_DEFLATED:
        raise UnusableInput(f"{where} is compressed with zip method {info.compress_type}, which "
                            f"leapp_lab does not read; save it with np.savez or np.savez_compressed")
    want = h.header_len + h.nbytes
    if info.file_size != want:
        raise UnusableInput(f"{where} declares {info.file_size} inflated bytes in the zip directory, but "
                            f"its header's shape {h.shape} of {h.dtype} needs {want}: the file is corrupt; "
                            f"write it again")
    if info.file_size > inflate_limit():       # check_inflate refused it already; never rely on that
        raise UnusableInput(f"{where} declares {_mib(info.file_size)} inflated, more than the "
                            f"{_mib(inflate_limit())} leapp_lab inflates from one .npz")
    out = np.empty(h.nbytes, np.uint8)         # the only allocation: the declared, checked size
    try:
        with open(path, "rb") as fh:
            _inflate_into(fh, info, out, h.header_len, where)
    except OSError as exc:
        raise UnusableInput(f"{where} is unreadable ({exc.strerror or exc})") from None
    except zlib.error as exc:
        raise UnusableInput(f"{where} is unreadable (broken deflate data: {exc}); the file is corrupt: "
                            f"write it again") from None
    if h.nbytes == 0:
        return np.empty(h.shape, dtype=h.dtype)
    return out.view(h.dtype).reshape(h.shape, order="F" if h.fortran else "C")


def _inflate_into(fh, info: zipfile.ZipInfo, out: np.ndarray, skip: int, where: str) -> None:
    """Inflate the member's raw deflate stream into ``out``: its first ``skip`` bytes (the npy
    header, read already) are dropped, and never more than ``info.file_size`` bytes are made."""
    fh.seek(info.header_offset)
    local = fh.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise UnusableInput(f"{where}: bad zip local header; the file is corrupt: write it again")
    n, m = struct.unpack_from("<HH", local, 26)
    fh.seek(info.header_offset + 30 + n + m)
    dec = zlib.decompressobj(-zlib.MAX_WBITS)
    view = memoryview(out)
    left, made, crc, pending = info.compress_size, 0, 0, b""
    while True:
        if not pending and left > 0:
            pending = fh.read(min(_CHUNK, left))
            if not pending:
                break                              # the file ends inside the member
            left -= len(pending)
        # max_length: at most one chunk more than the member may still make, so an excess shows
        # at once and is never held in memory
        piece = dec.decompress(pending, min(_CHUNK, info.file_size - made + 1))
        pending = dec.unconsumed_tail
        if piece:
            if made + len(piece) > info.file_size:
                raise UnusableInput(f"{where} inflates to more than the {info.file_size} bytes the zip "
                                    f"directory declares for it; the file is corrupt or hostile: write "
                                    f"it again")
            lo = max(skip - made, 0)
            if lo < len(piece):
                view[made + lo - skip:made + len(piece) - skip] = piece[lo:]
            crc = zlib.crc32(piece, crc)
            made += len(piece)
        if dec.eof or (not piece and not pending and left == 0):
            break
    if made != info.file_size or not dec.eof:
        raise UnusableInput(f"{where} inflates to only {made} of the {info.file_size} bytes it declares: "
                            f"the file is truncated or corrupt; write it again")
    if crc != info.CRC:
        raise UnusableInput(f"{where} fails its CRC check: the file is corrupt; write it again")

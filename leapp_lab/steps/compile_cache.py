"""compile's cache: an unchanged prepared ONNX, input npz, engine and options reuse the previous build.

The key covers the sha256 of the ONNX, of every external data file it names (weights saved beside
it: onnxruntime reads them at build time) and of the npz, the engine, ``keep_fp32`` and the naive
check, and the software (Python, onnx, onnxruntime, onnxruntime-extensions, numpy, leapp_lab's
version and code). The record is ``cache.json`` in the build folder; a hit needs the same key and every file of
the build as compile wrote it (size and sha256). An archive build (``--archive``) and the TensorRT
engines (a plan belongs to the GPU it was built on) are always built (docs/taps.md).
"""
from __future__ import annotations

import datetime as _dt
import json
import time
from dataclasses import dataclass
from pathlib import Path

from leapp_lab.model.reuse import (CACHE_FILE, CacheInfo, combine, digest_bytes, digest_file,
                                   environment_digest, file_entries, lookup, record_body, write_record)

PACKAGES = ("onnx", "onnxruntime", "onnxruntime-extensions", "onnxruntime_extensions", "numpy",
            "onnxconverter-common", "nvidia-modelopt")   # they write the typed ONNX (fp16, modelopt int8)


@dataclass
class Check:
    info: CacheInfo
    parts: dict[str, str] | None = None


def check(onnx_path: Path, npz_path: Path, out_path: Path, engine: str, archive: bool,
          keep_fp32, naive_check: bool, force: bool, quantizer: str | None = None) -> Check:
    """This compile's key, and whether the build at ``out_path`` may be reused."""
    t = time.perf_counter()
    if archive:
        return Check(CacheInfo(reason="not cached: an archive build (--archive) is always built"))
    if engine.startswith("trt"):
        return Check(CacheInfo(reason="not cached: a TensorRT engine is built for the GPU at hand"))
    keep = sorted({keep_fp32} if isinstance(keep_fp32, str) else set(map(str, keep_fp32 or ())))
    external = external_data_digest(onnx_path)
    if external is None:
        return Check(CacheInfo(reason=f"not cached: {onnx_path} cannot be read for the external data files "
                                      f"it names"))
    parts = {"onnx": digest_file(onnx_path), "external data": external, "npz": digest_file(npz_path),
             "engine": digest_bytes(engine.encode()),
             "options": digest_bytes(json.dumps({"keep_fp32": keep, "naive_check": bool(naive_check)}
                                                | ({"quantizer": quantizer} if quantizer not in (None, "ort") else {})
                                                ).encode()),
             "versions": environment_digest(PACKAGES)}
    key = combine(parts)
    if force:
        info = CacheInfo(key=key, reason="forced (--force)")
    else:
        rec, why = lookup(out_path / CACHE_FILE, key, parts, out_path)
        info = CacheInfo(hit=rec is not None, key=key, reason=why or None,
                         reused_from=rec.get("created") if rec else None)
    info.checked_s = round(time.perf_counter() - t, 4)
    return Check(info, parts)


def external_data_digest(onnx_path: Path) -> str | None:
    """sha256 of every external data file the ONNX names (its location, and its bytes or that it is
    missing); None when the ONNX cannot be parsed (the build then says what is wrong with it)."""
    from leapp_lab.onnxio.wire import external_data_locations
    try:
        locations = external_data_locations(onnx_path)
    except (OSError, ValueError):
        return None
    files = {}
    for loc in locations:
        p = onnx_path.parent / loc
        try:
            files[loc] = digest_file(p) if p.is_file() else "not a file"
        except OSError as exc:
            files[loc] = f"unreadable: {exc.strerror or exc}"
    return digest_bytes(json.dumps(files, sort_keys=True).encode())


def reuse(chk: Check, out_path: Path, onnx_path: Path, npz_path: Path, t_start: float):
    """The previous build's report, marked as reused (build.json says so too); None when it cannot be
    read (the build is made again)."""
    from leapp_lab.model.base import load
    from leapp_lab.model.errors import UserError

    try:
        report = load(out_path)
    except (UserError, OSError):
        return None
    if getattr(report, "kind", None) != "build":
        return None
    report.onnx, report.npz = str(onnx_path), str(npz_path)
    report.cache = chk.info
    report.timings_s = {"cache_check": chk.info.checked_s or 0.0,
                        "total": round(time.perf_counter() - t_start, 4)}
    report.save(out_path)
    report.path = out_path
    return report


def record(chk: Check | None, work: Path) -> None:
    """``cache.json`` in the staged build folder: the key, its parts, each file's sha256 and size."""
    if chk is None or chk.parts is None:
        return
    from leapp_lab.model.build import BUILD_FILE
    files = [p for p in sorted(work.iterdir()) if p.is_file() and p.name not in (BUILD_FILE, CACHE_FILE)]
    write_record(work / CACHE_FILE, record_body(chk.info.key, chk.parts, file_entries(files, work),
                                                _dt.datetime.now().isoformat(timespec="seconds")))


def hit_line(info: CacheInfo) -> str:
    return (f"unchanged since {info.reused_from or 'the last compile'} (cache key {info.key[:12]}): "
            f"reused the previous build; --force builds again")

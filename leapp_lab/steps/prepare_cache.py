"""prepare's cache: the content key of a model, and reusing the previous export when it is unchanged.

The key covers (docs/taps.md, "Re-running an unchanged model"): the MODEL.py bytes; the code the
eager run executed (every source file, found by profiling it: ``taps.code_profile``) and the files of
the user's own modules the model reaches (``taps.content_key``); every parameter and buffer; every
other value the model holds (``taps.state_key``); every sample, the tap options and the exporter,
the three output paths, and the software (Python, torch, onnx, onnxscript, onnxruntime, numpy,
leapp_lab's version and code). The record is ``cache.json`` in the prepare record folder
(``<onnx dir>/<onnx stem>.prepare/``), beside report.json; a hit needs the same key, the three
outputs still as they were written (size and sha256), and this run's eager references bit for bit
those in the reference file.
"""
from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leapp_lab.model.reuse import (CACHE_FILE, CacheInfo, combine, digest_bytes, digest_file,
                                   environment_digest, lookup, record_body, write_record)

#: the packages whose versions the key holds
PACKAGES = ("torch", "onnx", "onnxscript", "onnxruntime", "numpy")


@dataclass
class Check:
    """What the cache said: ``info`` (for the report), ``parts`` (None: the cache is not used this
    time, ``info.reason`` says why), ``record`` (the reusable record on a hit)."""
    info: CacheInfo
    parts: dict[str, str] | None = None
    record: dict | None = None


def check(src: Any, net: Any, samples: list[tuple], options: dict, exporter: str, outputs: list[Path],
          record_dir: Path, force: bool, ran: Any) -> Check:
    """The key of this prepare and whether the outputs in ``record_dir``'s record may be reused.
    ``ran``: the code the eager runs executed (``code_profile.ExecutedCode``)."""
    from leapp_lab.taps.code_profile import executed_digest
    from leapp_lab.taps.content_key import Unhashable, code_parts, samples_digest, weights_digest
    from leapp_lab.taps.state_key import module_state_digest

    t = time.perf_counter()
    try:
        excluded = _excluded()
        ran_digest, _ = executed_digest(ran, excluded, src.base_dir)
        reached = code_parts(src.namespace, net, src.base_dir)["user code"]
        state, held_code = module_state_digest(net, excluded)
        parts = {"model source": src.sha256 or "none",
                 "user code": combine({"reached": reached, "executed": ran_digest, "held": held_code}),
                 "state_dict": weights_digest(net),
                 "module state": state,
                 "samples": samples_digest(samples),
                 "tap options": digest_bytes(json.dumps(options, sort_keys=True).encode()),
                 "exporter": digest_bytes(exporter.encode()),
                 # where the outputs lie, from the record folder: a project moved whole keeps its key
                 "outputs": digest_bytes("\0".join(os.path.relpath(p, record_dir) for p in outputs).encode()),
                 "versions": environment_digest(PACKAGES)}
    except Unhashable as exc:
        return Check(CacheInfo(reason=f"not cached: {exc}", checked_s=round(time.perf_counter() - t, 4)))
    key = combine(parts)
    if force:
        info = CacheInfo(key=key, reason="forced (--force)")
        rec = None
    else:
        rec, why = lookup(record_dir / CACHE_FILE, key, parts, record_dir)
        info = CacheInfo(hit=rec is not None, key=key, reason=why or None,
                         reused_from=rec.get("created") if rec else None)
    info.checked_s = round(time.perf_counter() - t, 4)
    return Check(info, parts, rec)


@functools.lru_cache(maxsize=1)
def _excluded() -> tuple[str, ...]:
    from leapp_lab.taps.state_key import excluded_roots
    return excluded_roots(PACKAGES)


def reuse(chk: Check, src: Any, record_dir: Path, onnx_out, npz_out, reference_out, t_start: float,
          eager: Any, timings: dict[str, float]):
    """The previous prepare's report, marked as reused (and saved so: report.json says it); None when
    it cannot be reused, ``chk.info`` then says why (the references differ, the report is unreadable)."""
    from leapp_lab.model.base import load
    from leapp_lab.model.errors import UserError

    try:
        report = load(record_dir)
    except (UserError, OSError):
        report = None
    if getattr(report, "kind", None) != "prepare":
        return _miss(chk, f"{record_dir / 'report.json'} cannot be read as a prepare report")
    manual = [r.name for r in report.rows if r.kind == "manual"]
    differs = references_differ(eager, manual, Path(reference_out))
    if differs:
        return _miss(chk, f"changed: references ({differs})")
    # as this prepare was asked (a project moved or copied whole: its own paths)
    report.onnx, report.npz, report.reference = str(onnx_out), str(npz_out), str(reference_out)
    report.model, report.model_file = src.label, None if src.file is None else str(src.file)
    report.cache = chk.info
    report.timings_s = {"load": round(timings.get("load", 0.0), 4), "eager": round(timings.get("eager", 0.0), 4),
                        "cache_check": chk.info.checked_s or 0.0,
                        "total": round(time.perf_counter() - t_start, 4)}
    report.save(record_dir)
    report.path = record_dir
    return report


def _miss(chk: Check, reason: str) -> None:
    chk.info.hit, chk.info.reused_from, chk.info.reason = False, None, reason
    return None


def references_differ(eager: Any, manual: list[str], reference: Path) -> str | None:
    """None when every output and manual tap this run computed eagerly is bit for bit (dtype, shape,
    bytes) the one in ``reference``; else which one is not. The key covers what the model holds
    and runs; this catches what it cannot see (an environment variable, a file read in forward())."""
    import numpy as np

    fresh = {name: np.stack([s[j] for s in eager.outputs]) for j, name in enumerate(eager.output_names)}
    for name in manual:
        values = [s.get(name) for s in eager.taps]
        if any(v is None for v in values):
            return f"the tap {name!r} is no longer reached on every sample"
        fresh[name] = np.stack([v.detach().cpu().contiguous().numpy() for v in values])
    # only these members are read (op taps may hold far more): the file is the one this cache wrote,
    # its sha256 checked by lookup() just before, and no member is ever unpickled
    try:
        with np.load(reference, allow_pickle=False) as cached:
            for name, a in fresh.items():
                if name not in cached.files:
                    return f"{name!r} is not in {reference.name}"
                b = cached[name]
                if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != np.ascontiguousarray(b).tobytes():
                    return f"{name!r} is not bit for bit the one in {reference.name}"
    except Exception as exc:  # noqa: BLE001 - any unreadable file is a miss, never an error
        return f"{reference.name} cannot be read: {type(exc).__name__}"
    return None


def record(chk: Check | None, record_tmp: Path, record_dir: Path, written: list[tuple[Path, Path]]) -> None:
    """Write ``cache.json`` into the staged record folder: the key, its parts, and each output's
    sha256 and size (``written``: (final path, the staged file holding its bytes))."""
    if chk is None or chk.parts is None:
        return
    files = {}
    for final, staged_file in written:
        rel = os.path.relpath(Path(final).resolve(), Path(record_dir).resolve())
        files[rel] = {"sha256": digest_file(staged_file), "size": staged_file.stat().st_size}
    write_record(record_tmp / CACHE_FILE, record_body(chk.info.key, chk.parts, files,
                                                      _dt.datetime.now().isoformat(timespec="seconds")))


def from_trace(label: str) -> Check:
    """The record of a ``--from-trace`` prepare: never reused (no key lookup: the node's run folder
    is its own record), but it lists the three files it wrote, so that verify tells a build compiled
    before it from this one (compare/stale.py; a build of an earlier trace run was verified against
    this run's references without a word)."""
    parts = {"from trace": digest_bytes(label.encode())}
    return Check(CacheInfo(key="from-trace:" + combine(parts)), parts)


def say_hit(say, info: CacheInfo) -> None:
    say(f"unchanged since {info.reused_from or 'the last prepare'} (cache key {info.key[:12]}): "
        f"reused the previous export and references; --force exports again", 1.0)

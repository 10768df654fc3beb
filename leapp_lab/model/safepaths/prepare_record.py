"""The files a prepare wrote, recorded beside its report (``written.json``), so that a later prepare
replaces exactly those and nothing else (docs/safety.md).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

from .inputs import real_path
from .recognise import Purpose, json_kind, npz_has_member


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
        out.setdefault(k, set()).update(real_path(record_dir / x) for x in (v if isinstance(v, list) else [])
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
            out[key] = {real_path(pv)} if pv.is_absolute() else {real_path(b / pv) for b in bases}
    return out


def prepare_written(record_dir, onnx, npz, reference) -> dict:
    """The body of written.json: the files this prepare wrote, plus those earlier prepares of the
    same ONNX wrote that still exist (so switching --npz-out back and forth keeps both replaceable)."""
    rec = Path(os.path.abspath(record_dir))
    old = _recorded_prepare_outputs(rec)
    body: dict = {"kind": "prepare-written"}
    for k, new in (("onnx", onnx), ("npz", npz), ("reference", reference)):
        paths = [real_path(Path(new))] + sorted(p for p in old.get(k, set()) if p.is_file() and p != real_path(Path(new)))
        body[k] = [os.path.relpath(p, real_path(rec)) for p in paths]
    return body


def prepare_purposes(record_dir: str | os.PathLike | None) -> dict[str, Purpose]:
    """Purposes of prepare's three files: an existing file is replaced when the prepare record beside
    the ONNX names it as that same file (or, for the reference, when it holds prepare's timings)."""
    rec = _recorded_prepare_outputs(Path(record_dir)) if record_dir is not None else {}

    def recorded(key: str) -> Callable[[Path], bool]:
        return lambda p: real_path(p) in rec.get(key, set())

    return {
        "onnx": Purpose("an ONNX model written by leapp-lab prepare", False, recorded("onnx")),
        "npz": Purpose("an input npz written by leapp-lab prepare", False, recorded("npz")),
        "reference": Purpose("a reference npz written by leapp-lab prepare", False,
                             lambda p: recorded("reference")(p)
                             or npz_has_member(p, "benchmark_timings_ms")),
    }

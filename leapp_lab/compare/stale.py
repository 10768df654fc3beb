"""Is this build the one compiled from the ONNX that prepare wrote with this reference?

A prepare run again after a change to the model (weights, code, taps) writes a new ONNX and new
references; a build compiled before it still holds the old engine's values. verify of the two then
compares an old engine with new references: every row may diverge, for no reason in the engine.
This check reads two records, both JSON and both already written, and hashes nothing: compile's
``cache.json`` in the build folder (``parts.onnx`` / ``parts.npz``: the sha256 of the ONNX and
the input npz it built from) and prepare's ``<stem>.prepare/cache.json`` (the sha256 and size of
the ONNX, npz and reference it wrote together). When prepare's record lists this reference (same
file, same size) and its ONNX or npz is not the one the build was compiled from, the build is stale.
Archive and TensorRT builds have no compile record: nothing is said.
"""
from __future__ import annotations

import os
from pathlib import Path

from leapp_lab.model.build import prepared_onnx_candidates
from leapp_lab.model.finding_verify import STALE_PREFIX
from leapp_lab.model.reuse import CACHE_FILE, read_record

PREPARE_SUFFIX = ".prepare"


def _candidates(onnx: str | None, build_path: Path, ref_path: Path) -> list[Path]:
    """prepare records that may describe ``ref_path``: ``<stem>.prepare/cache.json`` beside each
    place the prepared ONNX may be (``prepared_onnx_candidates``)."""
    return [o.parent / f"{o.stem}{PREPARE_SUFFIX}" / CACHE_FILE
            for o in prepared_onnx_candidates(onnx, build_path, ref_path)]


def stale_build(build_folder: Path, build_path: Path, onnx: str | None, engine: str | None,
                ref_path: Path) -> str | None:
    """A warning (starting with ``STALE_PREFIX``) when the build at ``build_folder`` (as the user
    named it: ``build_path``) was compiled from another ONNX or npz than the ones prepare wrote with
    ``ref_path``; else None (also when either record is missing: nothing can be told)."""
    built = read_record(build_folder / CACHE_FILE, any_version=True)
    parts = built.get("parts") if built else None
    if not isinstance(parts, dict):
        return None
    try:
        ref_real, ref_size = os.path.realpath(ref_path), ref_path.stat().st_size
    except OSError:
        return None
    # the ONNX the build names, where it still is: a build compiled on purpose from another ONNX
    # (a hand-edited copy, an engine perturbed to test a layer) is not older than this reference.
    # Only a build whose ONNX is gone from where it was (a tree moved) is matched by file name.
    exact = os.path.realpath(onnx) if onnx and Path(onnx).is_file() else None
    for rec_path in _candidates(onnx, build_path, ref_path):
        rec = read_record(rec_path, any_version=True)
        if rec is None:
            continue
        files = {os.path.realpath(rec_path.parent / rel): (rel, e) for rel, e in rec["files"].items()
                 if isinstance(rel, str) and isinstance(e, dict)}
        entry = files.get(ref_real)
        if entry is None or entry[1].get("size") != ref_size:
            continue        # this prepare wrote another reference (or this one changed since)
        if exact is not None and exact not in {real for real, (rel, _) in files.items() if rel.endswith(".onnx")}:
            continue        # the build was compiled from another ONNX than this prepare's
        changed = []
        for real, (rel, e) in files.items():
            # the reference is this record's entry for ref_path, whatever its name (--reference-out
            # m.ref.npz): never the inputs npz the build was compiled from
            what = ("onnx" if rel.endswith(".onnx") else
                    "npz" if rel.endswith(".npz") and real != ref_real else None)
            if what and parts.get(what) and e.get("sha256") and e["sha256"] != parts[what]:
                changed.append(os.path.normpath(rec_path.parent / rel))
        if not changed:
            return None
        made = f"prepared {rec['created']}" if isinstance(rec.get("created"), str) else "prepared since"
        when = f", compiled {built['created']}" if isinstance(built.get("created"), str) else ""
        target = next((c for c in changed if c.endswith(".onnx")), onnx or "MODEL.onnx")
        default = Path(target).with_name(f"{Path(target).stem}.{engine}")
        out = "" if os.path.realpath(default) == os.path.realpath(build_path) else f" --out {build_path}"
        return (f"{STALE_PREFIX} {' and '.join(changed)} changed since {build_path} was compiled from "
                f"{'them' if len(changed) > 1 else 'it'} (the last prepare wrote {'them' if len(changed) > 1 else 'it'} "
                f"with {ref_path}: {made}{when}), so its rows compare an old engine with new references; "
                f"compile it again: leapp-lab compile {target} --engine {engine or 'ENGINE'}{out}")
    return None

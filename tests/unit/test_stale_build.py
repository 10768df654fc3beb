"""verify names a build compiled before the last prepare (compare/stale.py): the build's cache.json
says which ONNX and npz it was compiled from, prepare's cache.json which ones it wrote with the
reference; when they differ the warning and the finding say so and give the compile command.
Hand-written records and files (no torch, no onnxruntime)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from leapp_lab.compare.stale import STALE_PREFIX, stale_build
from viewfixtures import verify_report


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _project(tmp_path: Path, built_onnx: bytes, onnx: bytes = b"onnx-1", ref: str = "model.reference.npz") -> Path:
    """b/model.{onnx,npz,reference.npz} with prepare's record, b/model.ort with compile's record
    of a build compiled from ``built_onnx``."""
    b = tmp_path / "b"
    (b / "model.prepare").mkdir(parents=True)
    files = {"model.onnx": onnx, "model.npz": b"npz", ref: b"reference"}
    for name, data in files.items():
        (b / name).write_bytes(data)
    rec = {"kind": "leapp-lab-cache", "key_version": 1, "key": "k", "parts": {},
           "files": {f"../{n}": {"sha256": _sha(d), "size": len(d)} for n, d in files.items()},
           "created": "2026-12-06T10:09:29"}
    (b / "model.prepare" / "cache.json").write_text(json.dumps(rec))
    (b / "model.ort").mkdir()
    built = {"kind": "leapp-lab-cache", "key_version": 1, "key": "k2",
             "parts": {"onnx": _sha(built_onnx), "npz": _sha(b"npz")},
             "files": {"sample_outputs.npz": {"sha256": "x", "size": 1}}, "created": "2026-12-06T10:06:37"}
    (b / "model.ort" / "cache.json").write_text(json.dumps(built))
    return b


def test_a_build_compiled_before_the_last_prepare_is_named_with_the_command_that_fixes_it(tmp_path):
    b = _project(tmp_path, built_onnx=b"onnx-0")
    w = stale_build(b / "model.ort", b / "model.ort", str(b / "model.onnx"), "ort", b / "model.reference.npz")
    assert w is not None and w.startswith(STALE_PREFIX), w
    assert f"{b / 'model.onnx'} changed since {b / 'model.ort'} was compiled" in w
    assert f"leapp-lab compile {b / 'model.onnx'} --engine ort" in w and "--out" not in w
    # the finding leads with it, and still names the first divergent row after it
    r = verify_report()
    r.warnings.insert(0, w)
    assert r.finding.startswith("The build is older than the reference: ") and "tap_b is the first divergent" in r.finding


def test_a_fresh_build_or_missing_records_say_nothing(tmp_path):
    b = _project(tmp_path, built_onnx=b"onnx-1")
    args = (b / "model.ort", b / "model.ort", "b/model.onnx", "ort", b / "model.reference.npz")
    assert stale_build(*args) is None
    # another reference than the one prepare recorded (its size differs): nothing can be told
    (b / "model.onnx").write_bytes(b"onnx-2")
    (b / "model.reference.npz").write_bytes(b"another reference")
    assert stale_build(*args) is None
    (b / "model.reference.npz").write_bytes(b"reference")
    (b / "model.ort" / "cache.json").unlink()       # an archive or TensorRT build: no compile record
    assert stale_build(*args) is None


def test_a_build_compiled_on_purpose_from_another_onnx_is_not_called_older(tmp_path):
    """An engine built from a hand-edited copy of the ONNX (same file name, another folder) and
    verified against the original reference: a deliberate experiment, not a stale build."""
    b = _project(tmp_path, built_onnx=b"onnx-edited")
    edited = tmp_path / "edited" / "model.onnx"
    edited.parent.mkdir()
    edited.write_bytes(b"onnx-edited")
    assert stale_build(b / "model.ort", b / "model.ort", str(edited), "ort", b / "model.reference.npz") is None
    # the same build naming prepare's own ONNX is stale (that file changed since it was compiled)
    assert stale_build(b / "model.ort", b / "model.ort", str(b / "model.onnx"), "ort",
                       b / "model.reference.npz").startswith(STALE_PREFIX)


def test_a_reference_not_named_reference_npz_is_not_taken_for_the_inputs(tmp_path):
    # --reference-out m.ref.npz: the record's third .npz is the reference, not a changed inputs npz
    b = _project(tmp_path, built_onnx=b"onnx-1", ref="model.ref.npz")
    assert stale_build(b / "model.ort", b / "model.ort", str(b / "model.onnx"), "ort", b / "model.ref.npz") is None
    b = _project(tmp_path / "2", built_onnx=b"onnx-0", ref="model.ref.npz")      # really stale: still said
    w = stale_build(b / "model.ort", b / "model.ort", str(b / "model.onnx"), "ort", b / "model.ref.npz")
    assert w is not None and f"{b / 'model.onnx'} changed since" in w and "model.ref.npz changed" not in w

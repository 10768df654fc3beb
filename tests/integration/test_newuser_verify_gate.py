"""`verify --max-mape` must not PASS a model output it could not compare (a new user's CI gate ran
verify against the reference of another model and got exit 0)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np

CLI = [sys.executable, "-m", "leapp_lab.cli", "verify"]


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return path


def _build(tmp_path, **arrays):
    b = tmp_path / "model.ort"
    b.mkdir()
    _npz(b / "sample_outputs.npz", **arrays)
    return b


def run(*args):
    return subprocess.run([*CLI, *map(str, args), "--no-save"], capture_output=True, text=True)


def test_shape_mismatched_output_fails_the_gate(tmp_path):
    rng = np.random.default_rng(0)
    ref = _npz(tmp_path / "ref.npz", out=rng.normal(size=(2, 3, 6)).astype(np.float32))
    b = _build(tmp_path, out=rng.normal(size=(2, 2, 3)).astype(np.float32))
    assert run(ref, b).returncode == 0                      # no gate: reported, not fatal
    r = run(ref, b, "--max-mape", 5)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "not compared" in r.stdout and "out (shape-mismatch)" in r.stdout
    assert "PASS" not in r.stdout


def test_reference_output_missing_in_engine_fails_the_gate(tmp_path):
    a = np.linspace(1, 2, 12, dtype=np.float32).reshape(2, 6)
    ref = _npz(tmp_path / "ref.npz", out=a, value=a[:, :1])
    b = _build(tmp_path, out=a)
    r = run(ref, b, "--max-mape", 5, "--json", tmp_path / "v.json")
    assert r.returncode == 1
    import json
    doc = json.loads((tmp_path / "v.json").read_text())
    assert doc["exceeded"] == ["value"] and doc["exit_code"] == 1


def test_engine_only_names_and_exact_outputs_pass(tmp_path):
    a = np.linspace(1, 2, 12, dtype=np.float32).reshape(2, 6)
    ref = _npz(tmp_path / "ref.npz", out=a)
    b = _build(tmp_path, out=a, engine_extra=a)
    r = run(ref, b, "--max-mape", 5)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS" in r.stdout


def test_swapped_arguments_and_onnx_as_build_say_what_to_do(tmp_path):
    a = np.ones((2, 3), np.float32)
    ref = _npz(tmp_path / "model.reference.npz", out=a)
    b = _build(tmp_path, out=a)
    r = run(b, ref)
    assert r.returncode == 2 and "did you swap them?" in r.stderr
    onnx_file = tmp_path / "model.onnx"
    onnx_file.write_bytes(b"not really onnx")
    r = run(ref, onnx_file)
    assert r.returncode == 2 and f"leapp-lab compile {onnx_file} --engine ort" in r.stderr

"""``compile --engine ort-int8 --quantizer modelopt``: NVIDIA ModelOpt's ONNX PTQ writes the Q/DQ,
onnxruntime runs it, verify judges it end to end (skipped where ModelOpt is not installed: the
``modelopt`` extra)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

import leapp_lab
from leapp_lab.model.build import BuildReport
from tests.models.builds import prepared

CLI = [sys.executable, "-m", "leapp_lab.cli"]
pytestmark = pytest.mark.skipif(importlib.util.find_spec("modelopt") is None,
                                reason="nvidia-modelopt is not installed (pip install -e '.[modelopt]')")


@pytest.fixture(scope="module")
def net():
    return prepared("conv_net", taps=("all",))


def test_modelopt_int8_build_is_verified_end_to_end(net, tmp_path):
    out = tmp_path / "mo"
    r = subprocess.run(CLI + ["compile", str(net.onnx), "--engine", "ort-int8", "--quantizer", "modelopt",
                              "--out", str(out), "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    b = BuildReport.read(out)
    assert b.quantizer == "modelopt" and b.engine_onnx == "engine.onnx"
    assert "ModelOpt ONNX PTQ" in (out / "compile.log").read_text()
    # ModelOpt's Q/DQ is in the engine (it quantizes the layers its rules pick, not every one)
    k = b.observer.kernels_untapped
    assert sum(v for op, v in k.items() if "Quantize" in op or op.startswith(("QLinear", "QGemm"))) >= 1
    vj = tmp_path / "v.json"
    r = subprocess.run(CLI + ["verify", str(net.reference), str(out), "--max-mape", "100", "--json", str(vj)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(vj.read_text())
    out0 = next(x for x in doc["rows"] if x["kind"] == "output")
    assert 0 < out0["nrmse"] < 0.05                 # int8 rounding: present, small


def test_the_ort_quantizer_still_works_in_the_same_process_and_the_option_is_checked(net, tmp_path):
    mo = leapp_lab.compile(net.onnx, engine="ort-int8", quantizer="modelopt", out=tmp_path / "mo", naive_check=False)
    ort_b = leapp_lab.compile(net.onnx, engine="ort-int8", out=tmp_path / "ort", naive_check=False)
    assert mo.quantizer == "modelopt" and ort_b.quantizer == "ort"
    r = subprocess.run(CLI + ["compile", str(net.onnx), "--engine", "ort-fp16", "--quantizer", "modelopt",
                              "--out", str(tmp_path / "bad"), "--quiet"], capture_output=True, text=True)
    assert r.returncode == 2 and "--quantizer applies to the int8 engines" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "bad").exists()

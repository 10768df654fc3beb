"""fp16 headroom before any fp16 build: a model whose activation exceeds 65504 is named by prepare
and by verify (of an fp32 build) as an fp16 overflow, with the row and the --keep-fp32 line, and
that line builds."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys

import numpy as np
import onnx
import pytest

from leapp_lab.model import fp16range
from leapp_lab.model.jsonio import load_npz
from tests.models.builds import prepared

CLI = [sys.executable, "-m", "leapp_lab.cli"]


@pytest.fixture(scope="module")
def model():
    return prepared("fp16_overflow", taps=("all",))


def test_prepare_names_the_overflowing_row_with_its_keep_fp32_line(model):
    rep = model.report
    ref = load_npz(model.reference)
    rows = {r.name: r for r in rep.rows}
    big, small = rows["big"], rows["small"]
    assert big.range_max == float(np.abs(ref["big"].astype(np.float64)).max()) > fp16range.FP16_MAX
    assert big.fp16_headroom == pytest.approx(fp16range.FP16_MAX / big.range_max) and big.fp16_headroom < 1
    assert small.fp16_headroom > 1 and fp16range.risk(small.range_max) is None
    lines = [w for w in rep.warnings if w.startswith("fp16 overflow")]
    assert len(lines) == 1 and "'big'" in lines[0] and "--keep-fp32 " in lines[0]
    # nothing was built: the overflow is named from the reference alone
    assert not list(model.dir.glob("*.ort-fp16*")) and not list(model.dir.glob("*.trt-*"))
    # prepare.json holds the two fields per row
    doc = json.loads((model.dir / "model.prepare" / "prepare.json").read_text()) \
        if (model.dir / "model.prepare" / "prepare.json").is_file() else None
    if doc is not None:
        assert any(r.get("name") == "big" and r.get("fp16_headroom", 2) < 1 for r in doc["rows"])


def test_verify_of_an_fp32_build_names_it_too_and_the_keep_line_builds(model, tmp_path):
    b32 = tmp_path / "b32"
    subprocess.run(CLI + ["compile", str(model.onnx), "--out", str(b32), "--quiet"], check=True, capture_output=True)
    vj = tmp_path / "v.json"
    r = subprocess.run(CLI + ["verify", str(model.reference), str(b32), "--json", str(vj)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "fp16 overflow" in r.stdout and "'big'" in r.stdout
    doc = json.loads(vj.read_text())
    rows = {x["name"]: x for x in doc["rows"]}
    assert rows["big"]["range_max"] > 65504 and rows["big"]["fp16_headroom"] < 1
    assert rows["small"]["fp16_headroom"] > 1
    line = next(w for w in doc["warnings"] if "fp16 overflow" in w)
    keep = re.findall(r"--keep-fp32 (\S+)", line)
    g = onnx.load(str(model.onnx)).graph
    assert keep and all(k in {n.name for n in g.node} for k in keep)
    # the line as printed builds the mixed engine: those nodes float32 in its typed engine.onnx
    b16 = tmp_path / "b16"
    args = shlex.split(line.split("compile ", 1)[1])
    r = subprocess.run(CLI + ["compile", str(model.onnx), *args, "--out", str(b16), "--quiet"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    eg = onnx.load(str(b16 / "engine.onnx")).graph
    kept = [n for n in eg.node if n.name in keep]
    assert len(kept) == len(keep)
    casts = [n for n in eg.node if n.op_type == "Cast"]
    assert any(c.attribute[0].i == onnx.TensorProto.FLOAT16 for c in casts)


def test_headroom_numbers():
    assert fp16range.headroom(65504.0) == 1.0 and fp16range.headroom(0.0) is None
    assert fp16range.risk(70000.0) == "overflow" and fp16range.risk(600.0) == "beyond-autocast-limit"
    assert fp16range.risk(100.0) is None and fp16range.headroom(float("inf")) == 0.0

"""verify --expected fp16|bf16: torch eager in that dtype (the MODEL.py prepare recorded, re-run)
gives each row the drift precision alone causes; an fp16 engine sits within it, a broken layer is
beyond it; a model that cannot be re-run is reported, never fatal."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import leapp_lab
from leapp_lab.steps.verify import verify
from leapp_lab.steps.compile import compile
from leapp_lab.model.jsonio import load_npz
from leapp_lab.taps.marker import CaptureMode
from tests.models import model_path
from tests.models.builds import prepared
from test_verify_local import _stats, perturbed_build

CLI = [sys.executable, "-m", "leapp_lab.cli"]


@pytest.fixture(scope="module")
def conv_op():
    return prepared("conv_net", taps=("all",), op=True)


@pytest.fixture(scope="module")
def fp16_build(conv_op, tmp_path_factory):
    return compile(conv_op.onnx, "ort-fp16", out=tmp_path_factory.mktemp("fp16") / "b", naive_check=False)


@pytest.fixture(scope="module")
def fp16_expected(conv_op, fp16_build):
    """verify --expected fp16 of the fp16 build: one rerun of the model, read by two tests."""
    return verify(conv_op.reference, fp16_build.path, save=False, expected="fp16")


def _half_by_hand(ref):
    """conv_net.py run by hand in float16 (seeded like prepare): output, manual taps, and the op
    tap ``getitem`` (the stem's batch-norm output)."""
    from tests.models import conv_net
    torch.manual_seed(0)
    net = conv_net.Model().eval().half()
    torch.manual_seed(0)
    samples = conv_net.get_samples()
    out: dict[str, list] = {}
    with torch.no_grad():
        for (x,) in samples:
            with CaptureMode(expose=None) as cm:
                y = net(x.half())
            out.setdefault("output_0", []).append(y.float().numpy())
            for k, v in cm.values.items():
                out.setdefault(k, []).append(v.float().numpy())
            out.setdefault("getitem", []).append(net.stem[:2](x.half()).float().numpy())
    return {k: np.stack(v) for k, v in out.items()}


def test_fp16_engine_sits_within_expected_fp16_drift(conv_op, fp16_expected):
    v = fp16_expected
    assert v.expected is not None and v.expected.dtype == "fp16" and v.expected.factor == 4.0
    assert v.beyond_expected == [] and v.first_beyond_expected is None and not v.warnings
    rows = [r for r in v.rows if r.in_rule]
    assert len(rows) == 9 and {r.kind for r in rows} == {"manual", "op", "output"}
    for r in rows:      # op taps too (their values from the re-exported program's FX graph)
        assert r.expected_nrmse is not None and r.expected_note is None, r.name
        assert not r.beyond_expected
        assert 0.5 < r.nrmse / r.expected_nrmse < 2.0, r.name   # the engine rounds like torch .half()
    # expected_nrmse is the nrmse of torch half vs the reference: computed here independently
    ref = load_npz(conv_op.reference)
    half = _half_by_hand(ref)
    for name in ("stem", "block1", "block2", "pooled", "output_0"):
        assert v.row(name).expected_nrmse == pytest.approx(_stats(half[name], ref[name])[0], rel=1e-6), name
    # the op tap's value comes from the exported program's FX graph run in fp16: the same as eager
    assert v.row("getitem").expected_nrmse == pytest.approx(_stats(half["getitem"], ref["getitem"])[0], rel=1e-6)


def test_a_broken_layer_is_beyond_expected_where_the_fixed_rule_sees_nothing(tmp_path):
    b = prepared("conv_net", taps=("all",))
    rep = perturbed_build(b, "ort-fp16", "block1.0.weight", tmp_path / "a", scale=0.02)
    v = verify(b.reference, rep.path, out=tmp_path / "runs", expected="fp16", json_path=tmp_path / "v.json")
    assert v.first_divergent is None                 # every row under the 1 % nrmse rule ...
    assert v.first_beyond_expected == "block1"       # ... but far beyond what fp16 explains
    assert not v.row("stem").beyond_expected
    r = v.row("block1")
    assert r.beyond_expected and r.nrmse > v.expected.limit(r.expected_nrmse)
    assert v.beyond_expected == ["block1", "block2", "pooled"]     # as docs/verify.md says
    assert all(v.row(n).beyond_expected for n in v.beyond_expected) and not v.row("output_0").beyond_expected
    text = str(v)
    assert "expected NRMSE" in text and "beyond expected fp16 drift" in text
    line = next(x for x in text.splitlines() if " block1 " in x and " manual " in x)   # its table row
    assert "yes" in line
    back = leapp_lab.load(v.path)
    assert back.expected == v.expected and back.beyond_expected == v.beyond_expected
    rows = json.loads((tmp_path / "v.json").read_text())
    assert rows["first_beyond_expected"] == "block1" and rows["expected"]["factor"] == 4.0
    assert next(x for x in rows["rows"] if x["name"] == "block1")["beyond_expected"] is True
    from leapp_lab.views.viewdict import build_view
    view = build_view(back)
    assert {"expected_nrmse", "beyond_expected"} <= {c["key"] for c in view["table"]["columns"]}
    assert any(x["label"] == "beyond expected fp16" and "block1" in str(x["value"]) for x in view["badges"])
    assert "expected_nrmse" in [s["key"] for s in view["profile"]["series"]]


def test_bf16_drift_is_larger_than_fp16(conv_op, fp16_build, fp16_expected):
    f = fp16_expected
    b = verify(conv_op.reference, fp16_build.path, save=False, expected="bf16")
    assert b.expected.floor == 2.0 ** -8
    for r in f.rows:
        if r.in_rule:
            assert b.row(r.name).expected_nrmse > 3 * r.expected_nrmse, r.name


def _prepare_copy(d: Path, edit=lambda s: s) -> tuple[Path, object]:
    d.mkdir()
    (d / "net.py").write_text(edit(model_path("conv_net").read_text()))
    leapp_lab.prepare(d / "net.py", d / "model.onnx", d / "model.npz", d / "model.reference.npz",
                      debug_taps=["all"])
    return d / "net.py", compile(d / "model.onnx", "ort-fp16", naive_check=False)


def test_a_model_that_cannot_be_rerun_is_reported_never_fatal(tmp_path):
    """What the model cannot give (here: an op without a float16 kernel), or a reference without a
    prepare record, leaves the rows without expected drift and says why; the verify goes on. (A
    MODEL.py that is missing, changed or ends the process is refused: test_safety_exec.py.)"""
    net, rep = _prepare_copy(tmp_path / "m", lambda s: s.replace(
        "    def forward(self, x):\n",
        "    def forward(self, x):\n        if x.dtype == torch.float16:\n"
        "            raise NotImplementedError('\"my_op\" not implemented for \\'Half\\'')\n"))
    ref = tmp_path / "m" / "model.reference.npz"
    plain = verify(ref, rep.path, save=False)

    def check(fragment):
        v = verify(ref, rep.path, save=False, expected="fp16")
        assert v.exit_code == 0 and v.beyond_expected == []
        assert any("no expected fp16 drift" in w and fragment in w for w in v.warnings), v.warnings
        assert all(r.expected_nrmse is None and fragment in r.expected_note for r in v.rows if r.in_rule)
        assert [r.nrmse for r in v.rows] == [r.nrmse for r in plain.rows]
    check("not implemented for 'Half'")
    shutil.rmtree(tmp_path / "m" / "model.prepare")
    check("no prepare report")


def test_cli_expected_flag(conv_op, fp16_build, tmp_path):
    r = subprocess.run([*CLI, "verify", conv_op.reference, fp16_build.path, "--expected", "fp16",
                        "--local", "--no-save", "--json", tmp_path / "v.json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # with --local the rule judges each row's own error against its teacher-forced torch fp16 value
    assert ("beyond expected fp16 drift (local excess = local nrmse / max(expected fp16 local nrmse, "
            "0.000488) > 4; rows without a local value: nrmse > 4 x max(expected fp16 nrmse, 0.000488)): "
            "none") in r.stdout
    d = json.loads((tmp_path / "v.json").read_text())
    assert d["expected"]["dtype"] == "fp16" and d["local"] is True and d["expected"]["local"] is True
    assert all(x["expected_nrmse"] is not None and x["local_nrmse"] is not None for x in d["rows"])
    # manual taps and the output are forced in torch eager; op taps are not (their rows say so)
    for x in d["rows"]:
        assert (x["expected_local_nrmse"] is not None) == (x["kind"] in ("manual", "output")), x["name"]


def test_local_expected_fp16_is_torch_teacher_forced_and_ranks_the_broken_layer(tmp_path):
    """--local --expected fp16: each row's expected local error is torch eager in fp16 with the
    taps --local cut forced to their reference (checked by hand on block2 and pooled); a layer
    broken by 0.02 std of noise is the only row beyond (the rows after it inherit, they are no
    longer beyond as cumulatively), and it has the largest local excess."""
    b = prepared("conv_net", taps=("all",))
    rep = perturbed_build(b, "ort-fp16", "block1.0.weight", tmp_path / "a", scale=0.02)
    v = verify(b.reference, rep.path, save=False, local=True, expected="fp16")
    assert v.expected.local and "local excess" in v.expected.text
    assert v.beyond_expected == ["block1"] and v.first_beyond_expected == "block1" and v.worst_local == "block1"
    ref = load_npz(b.reference)
    from tests.models import conv_net
    torch.manual_seed(0)
    net = conv_net.Model().eval().half()
    with torch.no_grad():
        blk2 = [net.block2(torch.from_numpy(ref["block1"][i]).half()).float().numpy() for i in range(2)]
        pooled = [torch.from_numpy(ref["block2"][i]).half().mean(dim=(2, 3)).float().numpy() for i in range(2)]
    assert v.row("block2").expected_local_nrmse == pytest.approx(_stats(np.stack(blk2), ref["block2"])[0], rel=1e-9)
    assert v.row("pooled").expected_local_nrmse == pytest.approx(_stats(np.stack(pooled), ref["pooled"])[0], rel=1e-9)
    for r in v.rows:
        if r.in_rule and r.name != "block1":
            assert r.local_excess < 1.5, (r.name, r.local_excess)
    assert v.row("block1").local_excess > 4
    assert v.row("block2").nrmse > 4 * v.row("block2").expected_nrmse     # cumulatively it would be beyond

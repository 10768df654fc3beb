"""prepare (H3's real pipeline on the shared tests/models) -> compile -> verify, end to end."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from leapp_lab.steps.verify import verify
from leapp_lab.engines.base import CompileError
from leapp_lab.steps.compile import compile
from leapp_lab.model.jsonio import load_npz
from leapp_lab.onnxio.manifest import read_manifest
from tests.models.builds import prepared


@pytest.mark.parametrize("name", ["mlp_policy", "conv_net", "sequential_taps"])
def test_prepared_models_verify_clean_under_ort(name, tmp_path):
    b = prepared(name, taps=("all",))
    rep = compile(b.onnx, "ort", out=tmp_path / "b", naive_check=False)
    v = verify(b.reference, rep.path, max_mape=0.01, max_mape_taps=True, save=False)
    man = read_manifest(b.onnx)
    assert [r.name for r in v.rows] == [x.name for x in man.rows()]  # manifest model order
    assert all(r.status == "compared" for r in v.rows)
    assert v.first_divergent is None and v.exit_code == 0 and not v.warnings
    assert all(r.source for r in v.rows if r.is_tap)


def test_conv_net_int8_first_divergent_and_no_observer_effect(tmp_path):
    b = prepared("conv_net", taps=("all",))
    rep = compile(b.onnx, "ort-int8", out=tmp_path / "b")
    assert rep.observer.outputs_agree and rep.observer.kernels_differ == []
    assert rep.observer.kernels_untapped.get("QLinearConv", 0) >= 1
    # taps exposed before conversion would have changed the kernels (an extra Q/DQ pair per tap)
    assert rep.observer.naive.kernels_differ
    v = verify(b.reference, rep.path, save=False)
    assert v.first_divergent == "stem"  # the first quantized layer
    # every tap shows what the next layer consumes: close to torch (cosine), not the raw float
    assert all(r.cosine > 0.999 for r in v.rows)


def test_plugin_taps_with_a_real_custom_op(tmp_path):
    b = prepared("custom_op_model", taps=("all",), plugin=True)
    rep = compile(b.onnx, "ort", out=tmp_path / "b", naive_check=False)
    assert any("FastTanh" in k for k in rep.custom_ops)
    v = verify(b.reference, rep.path, save=False)
    plugin = [r for r in v.rows if r.kind == "plugin"]
    assert plugin and all(r.status == "compared" for r in plugin)
    # the plugin output's reference came from onnxruntime fp32: ort compared with itself, flagged
    selfc = [r for r in plugin if r.reference_source == "onnxruntime"]
    assert all(r.self_compare and not r.diverged for r in selfc)
    if selfc:
        assert v.self_compare_note


def test_custom_op_without_kernel_fails_compile_naming_it(tmp_path):
    b = prepared("custom_op_nokernel_model", plugin=True)
    with pytest.raises(CompileError, match="MysteryGate"):
        compile(b.onnx, "ort", out=tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_op_taps_fused_away_are_reported_and_self_compared_rows_flagged(tmp_path):
    b = prepared("conv_net", op=True)
    rep = compile(b.onnx, "ort", out=tmp_path / "b", naive_check=False)
    unbound = [t for t in rep.taps if t.binding == "unbound"]
    bound = [t for t in rep.taps if t.binding != "unbound"]
    assert bound
    v = verify(b.reference, rep.path, save=False, verbose=True)
    assert v.exit_code == 0
    for t in unbound:
        row = v.row(t.name)
        assert row.status in ("not-in-engine", "no-reference") and "no longer exists" in (row.note or "")
    if unbound:
        assert any("missing in the sample output" in w for w in v.warnings)


def test_cli_prepare_compile_verify(tmp_path):
    from tests.models import model_path
    py = [sys.executable, "-m", "leapp_lab.cli"]
    d = tmp_path / "build"
    r = subprocess.run(py + ["prepare", str(model_path("mlp_policy")), "--onnx-out", str(d / "model.onnx"),
                             "--npz-out", str(d / "model.npz"), "--reference-out", str(d / "model.reference.npz"),
                             "--debug-taps", "all", "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(py + ["compile", str(d / "model.onnx"), "--engine", "ort-fp16", "--quiet"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(py + ["verify", str(d / "model.reference.npz"), str(d / "model.ort-fp16"),
                             "--max-mape", "50", "--json", str(tmp_path / "v.json")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    outs = load_npz(d / "model.ort-fp16" / "sample_outputs.npz")
    ref = load_npz(d / "model.reference.npz")
    assert set(outs) == set(ref) - {"benchmark_timings_ms"}
    # fp16 emulation really rounds: the outputs differ from torch fp32, by fp16-sized amounts
    d16 = max(float(np.abs(outs[k].astype(np.float64) - ref[k]).max()) for k in outs)
    assert 1e-5 < d16 < 0.1

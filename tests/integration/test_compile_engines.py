"""compile on real models through real onnxruntime: build folders, engines that really diverge, the
observer-effect record, custom ops, fault localisation, every compile error case."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

import verify_models as vm
from leapp_lab.steps.verify import verify
from leapp_lab.engines.base import CompileError, EngineUnavailable
from leapp_lab.steps.compile import compile
from leapp_lab.model.build import BuildReport
from leapp_lab.model.jsonio import load_npz

CLI = [sys.executable, "-m", "leapp_lab.cli"]


def run_cli(*args, cwd=None):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    return vm.shared_net(tmp_path_factory)


# -- the build folder ----------------------------------------------------------------------------
def test_ort_build_folder_has_every_output_and_tap_like_the_reference(tmp_path_factory, net):
    model, paths = net
    rep = vm.shared_build(tmp_path_factory, "ort")
    folder = Path(rep.path)
    assert folder == paths["onnx"].with_name("model.ort")
    for f in ("engine.onnx", "engine.untapped.onnx", "sample_outputs.npz", "compile.log", "build.json"):
        assert (folder / f).is_file(), f
    outs = load_npz(folder / "sample_outputs.npz")
    ref = load_npz(paths["reference"])
    ref.pop("benchmark_timings_ms")
    assert set(outs) == set(ref)
    for k in ref:
        assert outs[k].shape == ref[k].shape and outs[k].dtype == ref[k].dtype, k
    # the tapped engine graph really carries the taps; the untapped one does not
    tapped = {o.name for o in onnx.load(str(folder / "engine.onnx")).graph.output}
    untapped = {o.name for o in onnx.load(str(folder / "engine.untapped.onnx")).graph.output}
    assert untapped == {"output_0", "output_1"}
    assert set(model.tap_names()) - {"fc4"} <= tapped  # fc4 is output_0's own value (an alias)
    b = BuildReport.read(folder)
    assert b.engine == "ort" and b.samples == 3
    from leapp_lab import load
    assert isinstance(load(folder), BuildReport) and load(folder).taps == b.taps
    assert [t.name for t in b.taps] == model.tap_names()
    assert all(t.binding == "bound" for t in b.taps)
    assert b.tap("fc4").via == "alias" and b.tap("conv0").via == "direct"
    log = (folder / "compile.log").read_text()
    assert "observer effect" in log and "ran 3 samples" in log


def test_progress_hook_sees_every_sample(tmp_path, net):
    _, paths = net
    seen = []
    compile(paths["onnx"], "ort", out=tmp_path / "b", naive_check=False,
            progress=lambda stage, done, total: seen.append((stage, done, total)))
    assert [s for s in seen if s[0] == "run"] == [("run", 1, 3), ("run", 2, 3), ("run", 3, 3)]


def test_cli_compile_default_npz_and_archive(tmp_path, net):
    _, paths = net
    d = tmp_path / "build"
    d.mkdir()
    for f in ("model.onnx", "model.npz", "model.reference.npz"):
        shutil.copy(paths["onnx"].with_name(f), d / f)
    r = run_cli("compile", d / "model.onnx", "--engine", "ort", "--archive")
    assert r.returncode == 0, r.stderr
    tgz = d / "model.ort.tgz"
    assert tgz.is_file()
    with tarfile.open(tgz) as tf:
        assert {"engine.onnx", "sample_outputs.npz", "compile.log", "build.json"} <= set(tf.getnames())
    assert "[leapp-lab compile] run 3/3" in r.stderr  # progress lines
    # verify on the .tgz gives exactly what verify on a folder build gives
    folder = compile(d / "model.onnx", "ort", out=d / "folder", naive_check=False)
    a = verify(d / "model.reference.npz", tgz, save=False)
    b = verify(d / "model.reference.npz", folder.path, save=False)
    assert [(r.name, r.mape, r.max_abs, r.cosine) for r in a.rows] == \
           [(r.name, r.mape, r.max_abs, r.cosine) for r in b.rows]


# -- errors --------------------------------------------------------------------------------------
def test_missing_npz_is_named(tmp_path, net):
    _, paths = net
    onnx_copy = tmp_path / "lonely.onnx"
    shutil.copy(paths["onnx"], onnx_copy)
    with pytest.raises(FileNotFoundError, match=r"lonely\.npz"):
        compile(onnx_copy)
    r = run_cli("compile", onnx_copy)
    assert r.returncode == 2 and str(tmp_path / "lonely.npz") in r.stderr


def test_missing_onnx_and_unknown_engine(tmp_path, net):
    _, paths = net
    r = run_cli("compile", tmp_path / "nope.onnx")
    assert r.returncode == 2 and "nope.onnx" in r.stderr
    with pytest.raises(ValueError, match="unknown engine 'ort-int4'"):
        compile(paths["onnx"], engine="ort-int4")


def test_npz_without_the_model_input_is_named(tmp_path, net):
    _, paths = net
    bad = tmp_path / "bad.npz"
    np.savez(bad, y=np.zeros((3, 1, 3, 16, 16), np.float32))
    with pytest.raises(CompileError, match=r"bad\.npz: has no array for model input\(s\) \['x'\]"):
        compile(paths["onnx"], npz=bad, out=tmp_path / "o")
    assert not (tmp_path / "o").exists()


def _custom_op_model(path: Path, domain: str, op: str) -> Path:
    g = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], domain=domain, name="plugin_0"),
         helper.make_node("Relu", ["y"], ["z"], name="relu_0")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)])
    onnx.save(m, str(path))
    x = np.stack([np.eye(3, dtype=np.float32) * (i + 2) for i in range(2)])
    np.savez(path.with_suffix(".npz"), x=x)
    return path


def test_custom_op_served_by_onnxruntime_extensions(tmp_path):
    p = _custom_op_model(tmp_path / "inv.onnx", "ai.onnx.contrib", "Inverse")
    rep = compile(p, naive_check=False)
    assert rep.custom_ops == {"ai.onnx.contrib::Inverse": "plugin_0"}
    z = load_npz(Path(rep.path) / "sample_outputs.npz")["z"]
    np.testing.assert_allclose(z[1], np.eye(3) / 3, rtol=1e-6)


def test_custom_op_library_is_registered_without_importing_onnxruntime_extensions(tmp_path):
    """A session finds the extensions' library without importing the package (whose __init__
    imports torch: about a second per process), and its kernels serve the custom op."""
    p = _custom_op_model(tmp_path / "inv.onnx", "ai.onnx.contrib", "Inverse")
    code = (
        "import sys, numpy as np\n"
        "from leapp_lab.engines.ort_session import make_session\n"
        f"s = make_session(open({str(p)!r}, 'rb').read(), optimize=False)\n"
        "z = s.run(None, {'x': np.eye(3, dtype=np.float32) * 4})[0]\n"
        "assert np.allclose(z, np.eye(3) / 4), z\n"
        "print(sorted(m for m in ('torch', 'onnxruntime_extensions') if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "[]"


def test_custom_op_onnxruntime_cannot_run_fails_naming_it_and_keeps_previous_build(tmp_path):
    good = _custom_op_model(tmp_path / "m.onnx", "ai.onnx.contrib", "Inverse")
    out = tmp_path / "m.ort"
    compile(good, out=out, naive_check=False)
    before = (out / "build.json").read_bytes()
    bad = _custom_op_model(tmp_path / "bad.onnx", "my.plugins", "FancyNorm")
    with pytest.raises(CompileError, match=r"custom op my\.plugins::FancyNorm \(node 'plugin_0'\)"):
        compile(bad, out=out, naive_check=False)
    assert (out / "build.json").read_bytes() == before  # the failed build destroyed nothing
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".m.ort")]  # no temp leftovers
    r = run_cli("compile", bad, "--out", out)
    assert r.returncode == 1 and "my.plugins::FancyNorm" in r.stderr


def test_tensorrt_engines_fail_clearly_without_tensorrt(net):
    _, paths = net
    try:
        import tensorrt  # noqa: F401
        pytest.skip("tensorrt is importable here: the guard is exercised by test_tensorrt_build")
    except Exception:  # noqa: BLE001
        pass
    for eng in ("trt-fp32", "trt-fp16", "trt-int8"):
        with pytest.raises(EngineUnavailable, match=r"'tensorrt' Python package, version 11.*NVIDIA GPU"):
            compile(paths["onnx"], engine=eng)
    r = run_cli("compile", paths["onnx"], "--engine", "trt-fp16")
    assert r.returncode == 2 and "tensorrt" in r.stderr
    # repair names the engines it can repair here (plain ort has no reduced precision to repair)
    from leapp_lab.steps.repair import repair
    with pytest.raises(EngineUnavailable, match=r"repair: ort-fp16 or ort-int8"):
        repair(paths["reference"], paths["onnx"], engine="trt-fp16", save=False)


def test_trt_int8_is_offered_and_built_from_the_qdq_onnx_where_tensorrt_exists(net):
    """trt-int8 builds the Q/DQ ONNX (a strongly typed TensorRT 11 network); here, without
    TensorRT, it says what it needs (exit 2), like trt-fp32 and trt-fp16."""
    from leapp_lab.engines import ENGINE_NAMES, NOT_IMPLEMENTED
    _, paths = net
    assert "trt-int8" in ENGINE_NAMES and not NOT_IMPLEMENTED
    try:
        import tensorrt  # noqa: F401
        pytest.skip("tensorrt is importable here: trt-int8 is built by tests/integration/test_tensorrt11.py")
    except Exception:  # noqa: BLE001
        pass
    r = run_cli("compile", paths["onnx"], "--engine", "trt-int8", "--quantizer", "ort")
    assert r.returncode == 2 and "tensorrt" in r.stderr and "version 11" in r.stderr


def test_tensorrt_build(tmp_path, net):
    pytest.importorskip("tensorrt", reason="TensorRT is not installable on this machine "
                        "(NVIDIA's package index is unreachable); runs where 'tensorrt' and a GPU exist")
    if not torch.cuda.is_available():
        pytest.skip("TensorRT needs a CUDA GPU visible to torch; none here")
    _, paths = net
    rep = compile(paths["onnx"], engine="trt-fp32", out=tmp_path / "trt")
    v = verify(paths["reference"], rep.path, save=False)
    assert v.row("output_0").mape < 0.1


# -- taps on tensors the engine fuses away ------------------------------------------------------
def _with_extra_tap(src: Path, dst_dir: Path, kind: str, tensor: str | None = None) -> Path:
    """Add a tap on conv0's pre-activation (onnxruntime fuses Conv+Relu, so it disappears), or on
    ``tensor`` when given."""
    dst_dir.mkdir()
    for f in ("model.npz", "model.reference.npz"):
        shutil.copy(src.with_name(f), dst_dir / f)
    m = onnx.load(str(src))
    conv = next(n for n in m.graph.node if n.op_type == "Conv")
    name = conv.output[0]
    m.graph.output.append(onnx.ValueInfoProto(name=name))
    meta = next(p for p in m.metadata_props if p.key == "leapp_lab.manifest")
    man = json.loads(meta.value)
    man["taps"].insert(0, {"name": name, "kind": kind, "order": 0, "tensor": tensor or name,
                           "producer_op": "Conv", "reference_source": "torch", "source": "x.py:1"})
    meta.value = json.dumps(man)
    onnx.save(m, str(dst_dir / "model.onnx"))
    return dst_dir / "model.onnx"


def test_tap_on_a_fused_tensor_is_exposed_and_the_engine_change_recorded(tmp_path, net):
    _, paths = net
    p = _with_extra_tap(paths["onnx"], tmp_path / "m", "manual")
    rep = compile(p, naive_check=False)
    t = rep.tap("/convs.0/Conv_output_0")
    assert t.binding == "bound" and t.via == "unfused" and "fuses" in t.binding_reason
    ob = rep.observer
    # onnxruntime fuses Conv+Relu into FusedConv; exposing the Conv output prevents that once
    assert ob.kernels_differ and any(k.op == "Conv" and k.tapped > k.untapped for k in ob.kernels_differ)
    assert ob.checked and isinstance(ob.outputs_agree, bool)
    assert any("fuses away" in w for w in rep.warnings)
    pre = load_npz(Path(rep.path) / "sample_outputs.npz")["/convs.0/Conv_output_0"]
    assert (pre < 0).any()  # really the pre-activation, not the Relu output


def test_manual_tap_the_engine_cannot_bind_fails_naming_it(tmp_path, net):
    _, paths = net
    p = _with_extra_tap(paths["onnx"], tmp_path / "m", "manual", tensor="no_such_value")
    with pytest.raises(CompileError, match=r"tap '/convs\.0/Conv_output_0' \(manual, x\.py:1\).*no_such_value"):
        compile(p, naive_check=False)


def test_op_tap_the_engine_cannot_bind_is_reported_not_fatal(tmp_path, net):
    _, paths = net
    p = _with_extra_tap(paths["onnx"], tmp_path / "m", "op", tensor="no_such_value")
    rep = compile(p, naive_check=False)
    t = rep.tap("/convs.0/Conv_output_0")
    assert t.binding == "unbound" and "no longer exists in the engine" in t.binding_reason
    assert any("unbound" in w for w in rep.warnings)
    v = verify(paths["reference"], rep.path, save=False, verbose=True)
    assert v.exit_code == 0 and v.row("conv0").status == "compared"


# -- engines that really diverge -----------------------------------------------------------------
def test_fp16_typed_engine_error_is_of_the_order_of_torch_half(tmp_path_factory):
    model, samples, paths = vm.shared_mlp(tmp_path_factory)
    fp16 = compile(paths["onnx"], "ort-fp16", naive_check=False)
    fp32 = compile(paths["onnx"], "ort", naive_check=False)
    ref = load_npz(paths["reference"])["output_0"].astype(np.float64)
    e16 = load_npz(Path(fp16.path) / "sample_outputs.npz")["output_0"].astype(np.float64)
    e32 = load_npz(Path(fp32.path) / "sample_outputs.npz")["output_0"].astype(np.float64)
    with torch.no_grad():
        half = model.half()
        th = np.stack([half(x.half())[0].float().numpy() for x in samples]).astype(np.float64)
        model.float()
    err16, err32, errh = (float(np.abs(a - ref).max()) for a in (e16, e32, th))
    assert err16 > 20 * err32          # it really diverges from fp32
    assert 0.2 < err16 / errh < 5.0    # like torch .half() does
    # the engine is the typed fp16 ONNX: float16 weights, float32 inputs and outputs
    assert fp16.engine_onnx == "engine.onnx" == fp16.artifact
    g = onnx.load(str(Path(fp16.path) / "engine.onnx")).graph
    kinds = {i.data_type for i in g.initializer}
    assert onnx.TensorProto.FLOAT16 in kinds and onnx.TensorProto.FLOAT not in kinds
    assert {v.type.tensor_type.elem_type for v in [*g.input, *g.output] if v.name in ("input_0", "output_0")} \
        == {onnx.TensorProto.FLOAT}


def test_int8_diverges_at_its_first_quantized_layer_and_taps_do_not_change_it(tmp_path_factory):
    _, paths = vm.shared_net(tmp_path_factory)
    rep = vm.shared_build(tmp_path_factory, "ort-int8")
    ob = rep.observer
    assert ob.checked and ob.outputs_agree and ob.kernels_differ == []
    assert ob.kernels_untapped.get("QLinearConv", 0) == 6 == ob.kernels_tapped.get("QLinearConv")
    # the naive way (taps as outputs before quantizing) would have built other kernels (with signed
    # int8 kept, onnxruntime still fuses the convolutions, but not the Q/DQ pairs around the taps)
    assert ob.naive is not None
    assert ob.naive.kernels_differ and ob.naive.kernels_tapped != ob.kernels_untapped
    assert all(max(v or 0.0, 0.0) == 0.0 for v in ob.max_abs_diff.values())
    assert {t.via for t in rep.taps} >= {"dequantize"}
    v8 = verify(paths["reference"], rep.path, save=False)
    v32 = verify(paths["reference"], vm.shared_build(tmp_path_factory, "ort").path, save=False)
    assert v32.first_divergent is None
    # int8 noise on this net is ~1 % nrmse at every layer (conv0: 0.98 %), right at the default
    # threshold: the default rule marks the first row above it, and nothing before it crosses
    first = v8.row(v8.first_divergent)
    assert first.is_tap and first.nrmse > 0.01
    assert all(r.nrmse <= 0.01 and r.cosine >= 0.999 for r in v8.rows
               if r.in_rule and r.order < first.order)
    # a fixed threshold below the int8 noise trips at the first quantized layer; fp32 stays clean
    v8s = verify(paths["reference"], rep.path, save=False, div_nrmse=0.5)
    assert v8s.first_divergent == "conv0"
    assert verify(paths["reference"], vm.shared_build(tmp_path_factory, "ort").path, save=False,
                  div_nrmse=0.5).first_divergent is None
    assert v8.row("output_0").mape > 100 * v32.row("output_0").mape
    assert v8.worst_tap is not None and v8.largest_jump is not None
    prof = v8.profile()
    assert [p.name for p in prof] == [r.name for r in v8.rows if r.status == "compared"]


# -- fault localisation: perturb one layer, the first divergent row is its tap ----------------------
LAYERS = vm.TappedNet().tap_names()


@pytest.mark.parametrize("tap", LAYERS)
def test_fault_localisation(tmp_path, net, tap):
    model, paths = net
    weight = model.layer_weights()[tap]
    m = onnx.load(str(paths["onnx"]))
    init = next(i for i in m.graph.initializer if i.name == weight)
    w = numpy_helper.to_array(init).copy()
    rng = np.random.default_rng(LAYERS.index(tap))
    w += rng.standard_normal(w.shape).astype(np.float32) * np.float32(w.std() * 0.5)
    init.CopyFrom(numpy_helper.from_array(w, weight))
    onnx.save(m, str(tmp_path / "model.onnx"))
    shutil.copy(paths["npz"], tmp_path / "model.npz")
    rep = compile(tmp_path / "model.onnx", "ort", naive_check=False)
    v = verify(paths["reference"], rep.path, save=False)
    assert v.first_divergent == tap
    before = [r for r in v.rows if r.order is not None and r.order < v.row(tap).order]
    assert len(before) >= LAYERS.index(tap) and not any(r.diverged for r in before)


def test_unreadable_onnx_bad_manifest_and_ragged_inputs_are_named(tmp_path, net):
    _, paths = net
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"definitely not protobuf \x00\xff")
    np.savez(tmp_path / "junk.npz", x=np.zeros((1, 1, 3, 16, 16), np.float32))
    with pytest.raises(ValueError, match=r"junk\.onnx: not a readable ONNX model"):
        compile(junk)
    m = onnx.load(str(paths["onnx"]))
    next(p for p in m.metadata_props if p.key == "leapp_lab.manifest").value = "{not json"
    onnx.save(m, str(tmp_path / "badman.onnx"))
    shutil.copy(paths["npz"], tmp_path / "badman.npz")
    with pytest.raises(ValueError, match=r"badman\.onnx: metadata 'leapp_lab.manifest' is not valid JSON"):
        compile(tmp_path / "badman.onnx")
    shutil.copy(paths["onnx"], tmp_path / "two.onnx")
    g = onnx.load(str(paths["onnx"]))
    g.graph.input.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [1]))
    onnx.save(g, str(tmp_path / "two.onnx"))
    m2 = onnx.load(str(tmp_path / "two.onnx"))
    meta = next(p for p in m2.metadata_props if p.key == "leapp_lab.manifest")
    man = json.loads(meta.value)
    man["inputs"] = ["x", "y"]
    meta.value = json.dumps(man)
    onnx.save(m2, str(tmp_path / "two.onnx"))
    np.savez(tmp_path / "two.npz", x=np.zeros((3, 1, 3, 16, 16), np.float32), y=np.zeros((2, 1), np.float32))
    with pytest.raises(CompileError, match=r"two\.npz: inputs have different sample counts"):
        compile(tmp_path / "two.onnx")
    np.savez(tmp_path / "none.npz", x=np.zeros((0, 1, 3, 16, 16), np.float32))
    with pytest.raises(CompileError, match=r"none\.npz: holds zero samples"):
        compile(paths["onnx"], npz=tmp_path / "none.npz", out=tmp_path / "n")


def test_tap_without_reference_is_uncompared_but_its_engine_value_kept(tmp_path, net):
    """The guide: a plugin boundary with no reference is reported, its engine value still lands in
    sample_outputs.npz, and verify warns that outputs are missing in the reference."""
    _, paths = net
    d = tmp_path / "m"
    d.mkdir()
    m = onnx.load(str(paths["onnx"]))
    meta = next(p for p in m.metadata_props if p.key == "leapp_lab.manifest")
    man = json.loads(meta.value)
    for t in man["taps"]:
        if t["name"] == "conv3":
            t.update(kind="plugin", reference_source=None, uncompared_reason="fused into one torch kernel")
    meta.value = json.dumps(man)
    onnx.save(m, str(d / "model.onnx"))
    shutil.copy(paths["npz"], d / "model.npz")
    with np.load(paths["reference"]) as z:
        np.savez(d / "model.reference.npz", **{k: z[k] for k in z.files if k != "conv3"})
    rep = compile(d / "model.onnx", naive_check=False)
    t = rep.tap("conv3")
    assert t.binding == "uncompared" and t.binding_reason == "fused into one torch kernel"
    assert "conv3" in load_npz(Path(rep.path) / "sample_outputs.npz")
    v = verify(d / "model.reference.npz", rep.path, save=False)
    assert ("[model.ort]: 1 output is missing in the reference, this can occur when plugin taps "
            "with no tensor outputs are enabled") in v.warnings[0]
    assert "conv3" not in [r.name for r in v.table()]
    row = v.row("conv3")
    assert row.status == "no-reference" and row.note == "fused into one torch kernel"
    assert "conv3" in [r.name for r in v.table(verbose=True)]
    assert v.exit_code == 0 and v.first_divergent is None

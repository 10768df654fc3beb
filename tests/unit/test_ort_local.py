"""engines/ort_local: the teacher-forced graph on small hand-made engine graphs, run by real
onnxruntime; the weights pass-through (protobuf merge) gives back the very same model."""
from __future__ import annotations

import dataclasses
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from leapp_lab.engines.base import EngineUnavailable
from leapp_lab.onnxio.split import split_model
from leapp_lab.engines.ort_local import LOCAL_PREFIX, check_engine, teacher_forced
from leapp_lab.model.tap import TapEntry
from leapp_lab.onnxio.manifest import IDENTITY_PREFIX

F = TensorProto.FLOAT


def _model(nodes, outputs, inits=()):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 3])],
                          [helper.make_tensor_value_info(o, F, None) for o in outputs], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _run(lg, feed):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(lg.serialized(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(None, feed)))


def _tap(name, **kw):
    return TapEntry(name=name, kind="manual", reference_source="torch", **{"binding": "bound", **kw})


def test_direct_tap_consumers_read_the_reference_the_tap_keeps_the_engine_value():
    w = numpy_helper.from_array(np.full((2, 3), 3.0, np.float32), "w")
    m = _model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Mul", ["a", "w"], ["b"]),
                helper.make_node("Identity", ["a"], ["t"], name=IDENTITY_PREFIX + "t")], ["b", "t"], [w])
    lg = teacher_forced(m, [_tap("t", tensor="a", bound_to="a", via="direct", order=0)],
                        {"t": (np.dtype(np.float32), (2, 3))})
    assert [c.name for c in lg.cuts] == ["t"] and lg.cuts[0].tensor == "a" and not lg.reasons
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    a_ref = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = _run(lg, {"x": x, LOCAL_PREFIX + "t": a_ref})
    np.testing.assert_array_equal(out["t"], np.maximum(x, 0))   # the engine's own value of the tap
    np.testing.assert_array_equal(out["b"], a_ref * 3)          # computed from the reference
    assert m.graph.node[1].input[0] == "a"                        # the engine graph is untouched


def test_dequantize_tap_consumers_read_the_quantized_reference():
    s = numpy_helper.from_array(np.array(0.1, np.float32), "s")
    z = numpy_helper.from_array(np.array(0, np.int8), "z")
    m = _model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
                helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
                helper.make_node("Relu", ["d"], ["y"]),
                helper.make_node("DequantizeLinear", ["q", "s", "z"], ["t"], name=IDENTITY_PREFIX + "t")],
               ["y", "t"], [s, z])
    lg = teacher_forced(m, [_tap("t", tensor="x_q", bound_to="q", via="dequantize", order=0)],
                        {"t": (np.dtype(np.float32), (2, 3))})
    assert lg.cuts[0].quantize and lg.cuts[0].tensor == "q"
    x = np.zeros((2, 3), np.float32)
    ref = np.array([[0.26, -0.34, 1.0], [-20.0, 0.05, 0.15]], np.float32)
    out = _run(lg, {"x": x, LOCAL_PREFIX + "t": ref})
    want = np.clip(np.rint(ref / np.float32(0.1)), -128, 127) * np.float32(0.1)  # round half to even
    np.testing.assert_allclose(out["y"], np.maximum(want, 0), rtol=1e-6)
    np.testing.assert_array_equal(out["t"], np.zeros((2, 3), np.float32))


def test_taps_that_cannot_be_cut_get_a_reason_and_alias_outputs_map():
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    m = _model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Mul", ["a", "w"], ["y"]),
                helper.make_node("Identity", ["a"], ["noref"], name=IDENTITY_PREFIX + "noref"),
                helper.make_node("Identity", ["w"], ["const"], name=IDENTITY_PREFIX + "const")],
               ["y", "noref", "const"], [w])
    taps = [_tap("gone", binding="unbound", binding_reason="fused away", order=0),
            _tap("noref", tensor="a", bound_to="a", via="direct", order=0),
            _tap("const", tensor="w", bound_to="w", via="direct", order=0),
            _tap("alias", tensor="y", bound_to="y", via="alias", order=1)]
    lg = teacher_forced(m, taps, {"const": (np.dtype(np.float32), (2, 3)), "alias": (np.dtype(np.float32), (2, 3))})
    assert "unbound" in lg.reasons["gone"] and "fused away" in lg.reasons["gone"]
    assert "no reference to feed" in lg.reasons["noref"]
    assert "constant" in lg.reasons["const"]
    assert lg.outputs["alias"] == "y" and [c.name for c in lg.cuts] == ["alias"]
    assert "gone" not in lg.outputs


def test_weights_pass_through_gives_the_same_model(tmp_path):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), f"w{i}") for i in range(3)]
    nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"h{i}", f"w{i}"], [f"h{i + 1}"]) for i in range(3)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 64])],
                          [helper.make_tensor_value_info("h3", F, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    data = m.SerializeToString()
    split = split_model(data)
    skel, pieces, names = split.model, split.weights, split.initializer_names
    assert names == {"w0", "w1", "w2"} and not skel.graph.initializer
    assert split.serialized() == b"".join([skel.SerializeToString(), *pieces])
    assert len(skel.SerializeToString()) < len(data) // 20
    back = onnx.ModelProto()
    back.ParseFromString(b"".join([skel.SerializeToString(), *pieces]))
    assert back == m
    p = tmp_path / "engine.onnx"
    onnx.save(m, str(p))
    lg = teacher_forced(p, [], {})
    again = teacher_forced(split, [], {})      # a shared split: teacher forcing edits a copy
    assert again.serialized() == lg.serialized() and split.model == skel
    x = rng.standard_normal((2, 64)).astype(np.float32)
    want = x @ numpy_helper.to_array(inits[0]) @ numpy_helper.to_array(inits[1]) @ numpy_helper.to_array(inits[2])
    np.testing.assert_allclose(_run(lg, {"x": x})["h3"], want, rtol=1e-4, atol=1e-4)


def test_check_engine_refuses_what_it_cannot_cut():
    check_engine("ort-int8")
    for e in ("trt-fp16", None):
        with pytest.raises(EngineUnavailable, match="local error needs the engine's graph"):
            check_engine(e)


def test_large_weights_are_read_in_place_from_the_engine_file(tmp_path):
    """Split from a file, the large weights become external data at their own offsets in that
    file (the small ones stay inline: onnxruntime reads some while inferring shapes); the runner
    gives the values of the in-bytes model, and falls back to bytes where the file is not there."""
    from leapp_lab.onnxio.split import EXTERNAL_MIN_BYTES, load_split
    rng = np.random.default_rng(1)
    big = numpy_helper.from_array(rng.standard_normal((3, 512)).astype(np.float32), "big")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "big"], ["h"]),
                           helper.make_node("ReduceMean", ["h", "axes"], ["y"], keepdims=1)], "g",
                          [helper.make_tensor_value_info("x", F, [2, 3])], [helper.make_tensor_value_info("y", F, None)],
                          [big, axes])
    p = tmp_path / "engine.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), str(p))
    split = load_split(p)
    assert split.folder == tmp_path and split.external
    skel = onnx.ModelProto()
    skel.ParseFromString(b"".join([split.model.SerializeToString(), *split.external]))
    kinds = {i.name: i.data_location for i in skel.graph.initializer}
    assert kinds == {"big": TensorProto.EXTERNAL, "axes": TensorProto.DEFAULT}
    assert big.ByteSize() > EXTERNAL_MIN_BYTES
    x = rng.standard_normal((2, 3)).astype(np.float32)
    lg = teacher_forced(split, [], {})
    want = _run(lg, {"x": x})["y"]
    np.testing.assert_allclose(want, (x @ numpy_helper.to_array(big)).mean(axis=1, keepdims=True), rtol=1e-5)
    from leapp_lab.engines.base import CompileError
    from leapp_lab.engines.ort_session import make_session
    ext = b"".join([lg.model.SerializeToString(), *lg.source.external])
    make_session(ext, optimize=False, external_folder=tmp_path)        # the in-place path loads
    with pytest.raises(CompileError):
        make_session(ext, optimize=False, external_folder=tmp_path / "elsewhere")
    with lg.runner() as r:
        np.testing.assert_array_equal(r.run({"x": x}, ["y"])["y"], want)
    lg.source = dataclasses.replace(lg.source, folder=tmp_path / "elsewhere")   # not found there: from bytes
    with lg.runner() as r:
        np.testing.assert_array_equal(r.run({"x": x}, ["y"])["y"], want)


def test_replay_tap_probe_reads_a_dequantized_tap_under_its_own_name(tmp_path, monkeypatch):
    """An int8 tap bound 'via dequantize' has ``bound_to`` = the quantized tensor inside the graph,
    its output is the tap's name: the replay's probe took bound_to for the output and dropped every
    such tap ('taps not exposed by the ort-int8 engine or the fp32 ONNX')."""
    from types import SimpleNamespace

    from leapp_lab.steps import replay_taps
    m = _model([helper.make_node("Relu", ["x"], ["h1"]), helper.make_node("Neg", ["h1"], ["y"])], ["y", "h1"])
    onnx.save(m, tmp_path / "engine.onnx")
    onnx.save(m, tmp_path / "node.onnx")
    onnx.save(_model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["y"])], ["y"]),
              tmp_path / "engine.untapped.onnx")
    monkeypatch.setattr(replay_taps, "tapped_build", lambda *a, **k: (
        tmp_path, tmp_path / "node.onnx", {"h1": "val_4_QuantizeLinear_Output"}))
    node = SimpleNamespace(name="actor", taps=[SimpleNamespace(name="h1")])
    _, probe = replay_taps.tap_probe(None, node, "ort", tmp_path, ["x"], "a", 0.01, print)
    assert probe.taps == ["h1"] and probe.result.note is None and probe.bound == {"h1": "h1"}
    # a tap on an output under the output's name (prepare exposes it once, as the output)
    node.taps.append(SimpleNamespace(name="y"))
    _, probe = replay_taps.tap_probe(None, node, "ort", tmp_path, ["x"], "a", 0.01, print)
    assert probe.taps == ["h1", "y"] and probe.result.note is None

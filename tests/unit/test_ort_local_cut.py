"""engines/ort_local (+ ort_local_cut): a tap that is a side branch of what the engine's next layer
reads. A layout chain (Transpose, Reshape ...) is cut above it, its consumers fed the reference taken
back through the inverse; a cut that still rewires nothing leaves the rows after it without a local
value (a reason instead), unless what they read was cut anyway or the tapped value is only watched."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from leapp_lab.engines.ort_local import LOCAL_PREFIX, teacher_forced
from leapp_lab.model.tap import TapEntry
from leapp_lab.onnxio.manifest import IDENTITY_PREFIX

F = TensorProto.FLOAT
W = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, "w")
X = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)


def _model(nodes, outputs, inits=(W,)):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 3])],
                          [helper.make_tensor_value_info(o, F, None) for o in outputs], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _tap(name, tensor, order=0):
    return TapEntry(name=name, kind="manual", reference_source="torch", binding="bound", tensor=tensor,
                    bound_to=tensor, via="unfused", order=order)


def _run(lg, feed):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(lg.serialized(), so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feed)))


def _tap_node(tensor, name):
    return helper.make_node("Identity", [tensor], [name], name=IDENTITY_PREFIX + name)


def test_the_consumer_of_the_tensor_a_tapped_transpose_reads_gets_the_reference_back_through_it():
    # the engine folded Transpose -> Transpose: MatMul reads y, the tap shows Transpose(y) (GRU -> LSTM)
    m = _model([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("MatMul", ["y", "w"], ["out"]),
                helper.make_node("Transpose", ["y"], ["ty"], perm=[1, 0]), _tap_node("ty", "t")], ["out", "t"])
    lg = teacher_forced(m, [_tap("t", "ty")], {"t": (np.dtype(np.float32), (3, 2))})
    assert lg.cuts[0].through == ["y"] and lg.cuts[0].rewired == 1 and not lg.reasons
    ref = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = _run(lg, {"x": X, LOCAL_PREFIX + "t": ref})
    np.testing.assert_array_equal(out["t"], np.maximum(X, 0).T)        # the engine's own value
    np.testing.assert_allclose(out["out"], ref.T @ numpy_helper.to_array(W), rtol=1e-6)  # from the reference


def test_a_reshape_then_transpose_chain_is_undone_in_order_whatever_the_node_order():
    # y (2,3) -> Reshape (3,2) -> Transpose (2,3) -> tap; the MatMul comes first in the node list
    shape = numpy_helper.from_array(np.array([3, 2], np.int64), "shape")
    m = _model([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("MatMul", ["y", "w"], ["out"]),
                helper.make_node("Reshape", ["y", "shape"], ["r"]),
                helper.make_node("Transpose", ["r"], ["tr"], perm=[1, 0]), _tap_node("tr", "t")],
               ["out", "t"], [W, shape])
    lg = teacher_forced(m, [_tap("t", "tr")], {"t": (np.dtype(np.float32), (2, 3))})
    assert lg.cuts[0].through == ["r", "y"]
    ref = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = _run(lg, {"x": X, LOCAL_PREFIX + "t": ref})
    y_ref = ref.T.reshape(2, 3)                                         # Transpose^-1, then Reshape^-1
    np.testing.assert_allclose(out["out"], y_ref @ numpy_helper.to_array(W), rtol=1e-6)
    np.testing.assert_array_equal(out["t"], np.maximum(X, 0).reshape(3, 2).T)


def _side_branch(extra_taps=()):
    """The engine computes the tapped Neg(a) for the tap only; its next layer reads a (a fusion)."""
    engine = _model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["tv"]),
                     helper.make_node("MatMul", ["a", "w"], ["y"]), _tap_node("tv", "t"),
                     *[_tap_node("a", n) for n in extra_taps]], ["y", "t", *extra_taps])
    return engine


def _prepared(feeds_on=True):
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["tv"]), _tap_node("tv", "t"),
             _tap_node("a", "s")]
    nodes.append(helper.make_node("MatMul", ["tv" if feeds_on else "a", "w"], ["y"]))
    return _model(nodes, ["y", "t", "s"])


def test_a_cut_that_rewires_nothing_of_a_value_read_on_gives_the_rows_after_it_no_local_value():
    f = {"t": (np.dtype(np.float32), (2, 3)), "s": (np.dtype(np.float32), (2, 3))}
    lg = teacher_forced(_side_branch(), [_tap("t", "tv")], f, prepared=_prepared())
    assert lg.cuts[0].rewired == 0
    assert "y" not in lg.outputs and "not isolated" in lg.reasons["y"] and "no local error past t" in lg.reasons["y"]
    assert "t" in lg.outputs and "reads this value through another tensor (a)" in lg.notes["t"]
    # the prepared model is read only when needed, and may be missing: the value stays (as before)
    assert "y" in teacher_forced(_side_branch(), [_tap("t", "tv")], f, prepared=lambda: None).outputs
    # a value only watched (nothing reads it in the model) leaks nothing
    assert "y" in teacher_forced(_side_branch(), [_tap("t", "tv")], f, prepared=_prepared(False)).outputs
    # what the engine reads instead was cut itself (another tap on a): y is isolated after all
    lg = teacher_forced(_side_branch(["s"]), [_tap("s", "a"), _tap("t", "tv", 1)], f, prepared=_prepared())
    assert "y" in lg.outputs and not lg.notes and "y" not in lg.reasons

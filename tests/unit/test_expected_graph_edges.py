"""verify --expected int8's graph of three chains (engines/ort_fakequant.expected_graph) on the
edges a new user's recurrent policy has: an output that is a constant (an initializer no node makes)
and an integer tap (a mask count). Before, onnxruntime refused the graph ("Graph output
leapp_lab_expected_local/output_1 does not exist") and the int64 tap was cut with a float32 feed;
verify --expected int8 ended as an internal error (exit 3)."""
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from leapp_lab.engines.int8_grids import Grid, Int8Grids
from leapp_lab.engines.ort_fakequant import expected_graph


def _model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    outs = [helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 3]),        # a float tap
            helper.make_tensor_value_info("count", TensorProto.INT64, [2]),       # an integer tap
            helper.make_tensor_value_info("y", TensorProto.INT64, [2]),           # reads the count
            helper.make_tensor_value_info("logstd", TensorProto.FLOAT, [3])]      # a constant output
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Greater", ["r", "zero"], ["pos"]),
             helper.make_node("Cast", ["pos"], ["posi"], to=TensorProto.INT64),
             helper.make_node("ReduceSum", ["posi", "axes"], ["count"], keepdims=0),
             helper.make_node("Add", ["count", "one"], ["y"])]
    inits = [numpy_helper.from_array(np.zeros(1, np.float32), "zero"),
             numpy_helper.from_array(np.array([1], np.int64), "axes"),
             numpy_helper.from_array(np.ones(1, np.int64), "one"),
             numpy_helper.from_array(np.full(3, -0.5, np.float32), "logstd")]
    g = helper.make_graph(nodes, "g", [x], outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_a_constant_output_and_an_integer_tap_give_a_graph_onnxruntime_runs():
    grids = Int8Grids(activations={"r": Grid(np.array(0.05, np.float32), np.array(0, np.uint8))})
    eg = expected_graph(_model(), grids, cuts={"r": "r", "count": "count"}, local=True)
    # the constant is the same value in every chain; the integer tap is never cut
    assert eg.fp32["logstd"] == eg.local["logstd"] == "logstd"
    assert [tap for _, tap in eg.feeds] == ["r"]
    sess = ort.InferenceSession(eg.model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.array([[0.31, -1.0, 2.0], [0.0, 0.5, -0.2]], np.float32)
    feed = {"x": x, eg.feeds[0][0]: np.maximum(x, 0)}
    names = [o.name for o in sess.get_outputs()]
    got = dict(zip(names, sess.run(None, feed)))
    np.testing.assert_array_equal(got[eg.local["logstd"]], np.full(3, -0.5, np.float32))
    np.testing.assert_array_equal(got[eg.local["y"]], np.array([3, 2]))
    # the cumulative chain rounds r to its grid (0.31 -> 0.30)
    assert abs(got[eg.cumulative["r"]][0, 0] - 0.30) < 1e-6

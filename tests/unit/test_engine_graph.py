"""The engine graph a verify report stores (leapp_lab.compare.engine_graph): real ONNX files, real
verify runs on small data (no torch, no onnxruntime)."""
import onnx
import pytest
from onnx import TensorProto, helper

from leapp_lab.compare.engine_graph import graph_of
from leapp_lab.model.base import load
from leapp_lab.model.verify import VerifyRow
from leapp_lab.onnxio.manifest import IDENTITY_PREFIX
from tests.models.scale_verify import make_scale_run


def _int8_like_graph() -> onnx.GraphProto:
    """x -> MatMul(x, DequantizeLinear(w_q)) -> FusedRelu (named after the fused op) -> y, the way
    an int8 engine looks: a weight-only DequantizeLinear, a value renamed ``__float`` by a tap, a
    custom-domain op, an unnamed node, two nodes sharing a name, and a tap-exposure Identity."""
    inits = [helper.make_tensor("w_q", TensorProto.INT8, [2, 2], [1, 2, 3, 4]),
             helper.make_tensor("w_s", TensorProto.FLOAT, [], [0.1])]
    nodes = [helper.make_node("DequantizeLinear", ["w_q", "w_s"], ["w"], name="w_DequantizeLinear"),
             helper.make_node("MatMul", ["x", "w"], ["mm"], name="node_mm"),
             helper.make_node("FusedRelu", ["mm"], ["relu__float"], name="node_mm_fused", domain="com.microsoft"),
             helper.make_node("Neg", ["relu__float"], ["neg"], name=""),
             helper.make_node("Abs", ["neg"], ["y"], name="dup"),
             helper.make_node("Identity", ["y"], ["y2"], name="dup"),
             helper.make_node("Identity", ["relu__float"], ["relu"], name=IDENTITY_PREFIX + "relu")]
    return helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                             [helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1, 2]),
                              helper.make_tensor_value_info("relu", TensorProto.FLOAT, [1, 2])], inits)


def test_rows_are_placed_on_the_node_that_computes_them():
    rows = [VerifyRow(name="relu", kind="op", tensor="relu", producer_node="node_relu"),     # fused away
            VerifyRow(name="mm", kind="op", tensor="mm", producer_node="node_mm"),
            VerifyRow(name="late", kind="manual", tensor="gone", producer_node=None, bound_to="neg"),
            VerifyRow(name="lost", kind="op", tensor="mm", producer_node="node_mm", status="not-in-engine"),
            VerifyRow(name="y2", kind="output", tensor="y2", producer_node="dup")]
    g = graph_of(_int8_like_graph(), rows, file="engine.onnx")
    by = {n.name: n for n in g.nodes}
    # the weight-only DequantizeLinear and the tap exposure are left out, and say so
    assert list(by) == ["node_mm", "node_mm_fused", "Neg_3", "dup", "dup#2"]
    assert g.left_out == {"tap exposure": 1, "constant": 1} and g.total_nodes == 7
    assert by["node_mm_fused"].op == "com.microsoft::FusedRelu"
    # the renamed "__float" value finds the fused node; bound_to places a row whose tensor is gone;
    # a row the engine does not have is on no node; the producer node's name wins for an output
    assert by["node_mm"].rows == ["mm"] and by["node_mm_fused"].rows == ["relu"]
    assert by["Neg_3"].rows == ["late"] and by["dup"].rows == ["y2"]
    assert g.node_of("lost") is None and g.node_of("relu").name == "node_mm_fused"
    # edges: only tensors of stored nodes and graph inputs (weights and the exposure are not)
    assert by["node_mm"].inputs == ["x"] and by["node_mm_fused"].inputs == ["mm"]
    assert g.inputs == ["x"] and g.outputs == ["y2"]          # "relu" is a tap, not a model output


def test_a_huge_graph_is_not_stored_and_says_why():
    g = graph_of(_int8_like_graph(), [], file="build/model.ort/engine.onnx", max_nodes=3)
    assert g.nodes == [] and g.total_nodes == 7
    assert "5 nodes" in g.note and "more than the 3" in g.note and "engine.onnx" in g.note and "Netron" in g.note


def test_verify_stores_the_graph_with_scopes_and_it_reloads(tmp_path):
    rep = make_scale_run(tmp_path, rows=60, nodes=30)
    g = rep.graph
    assert g.source == "engine" and g.file.endswith("engine.onnx") and g.note is None
    assert len(g.nodes) == 31 and g.left_out == {"tap exposure": 29}        # 30 nodes + the output Identity
    # every row with an engine value is on the node whose output is its tensor (model order)
    for r in rep.rows:
        n = g.node_of(r.name)
        assert n is not None and r.tensor in n.outputs, r.name
        assert n.scope == r.scope or (r.kind == "output" and n.scope is None)
    assert [n.scope for n in g.nodes[:3]] == ["stem", "stem", "blocks.0.attn"]
    assert g.nodes[3].inputs == g.nodes[2].outputs                      # a chain
    again = load(rep.path)
    assert again.graph == g


@pytest.mark.parametrize("broken", ["missing", "garbage"])
def test_no_graph_is_a_note_not_a_failure(tmp_path, broken):
    import leapp_lab
    rep = make_scale_run(tmp_path, rows=40, nodes=30)
    build = tmp_path / "model.ort"
    for p in (build / "engine.onnx", tmp_path / "model.onnx"):
        if broken == "missing":
            p.unlink()
        else:
            p.write_bytes(b"not an onnx file")
    again = leapp_lab.verify(tmp_path / "model.reference.npz", build, save=False)
    assert again.graph.nodes == [] and [r.name for r in again.rows] == [r.name for r in rep.rows]
    if broken == "missing":
        assert "no ONNX graph found" in again.graph.note
    else:
        assert "engine.onnx" in again.graph.note and "not a readable ONNX model" in again.graph.note

"""``leapp_lab.onnxio.wire``, the graph reader verify uses instead of ``import onnx``, against
onnx's own parse of the same bytes: real ONNX files written by onnx (a 300-node scopes graph and its
engine with every tap exposed, and a model with every field the reader must skip or keep), the
accuracy graph built from either parse, and truncated or foreign bytes."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from leapp_lab.compare.engine_graph import graph_of
from leapp_lab.onnxio.wire import parse_graph, read_graph
from leapp_lab.model.verify import VerifyRow
from leapp_lab.onnxio.manifest import IDENTITY_PREFIX, NAME_SCOPES_KEY
from tests.models.scale_verify import make_graph


def _view(g) -> dict:
    """Every field the reader returns, from an onnx.GraphProto or an onnx_wire.Graph alike."""
    return {"node": [(n.name, n.op_type, n.domain, list(n.input), list(n.output),
                      [(p.key, p.value) for p in n.metadata_props]) for n in g.node],
            "input": [i.name for i in g.input], "output": [o.name for o in g.output],
            "initializer": [i.name for i in g.initializer]}


def _everything() -> onnx.ModelProto:
    """A model with what the reader skips (attributes of every kind, an If with subgraphs, weights
    inline / packed / raw / external / sparse, value_info, doc strings, model metadata, a local
    function) and what it keeps (non-ASCII names, an empty optional input, domains, node metadata)."""
    big = numpy_helper.from_array(np.arange(5000, dtype=np.float32).reshape(50, 100), "w_raw")
    packed = helper.make_tensor("w_packed", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
    ints = helper.make_tensor("shape", TensorProto.INT64, [2], [1, -1])
    strs = helper.make_tensor("labels", TensorProto.STRING, [2], [b"a", "é".encode()])
    ext = helper.make_tensor("w_ext", TensorProto.FLOAT, [4], [0.0] * 4)
    ext.ClearField("float_data")
    ext.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", "16")):
        ext.external_data.add(key=k, value=v)
    sparse = helper.make_sparse_tensor(helper.make_tensor("sp_values", TensorProto.FLOAT, [2], [1.0, 2.0]),
                                       helper.make_tensor("sp_idx", TensorProto.INT64, [2], [0, 3]), [4])
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t_out"], name="then_node")], "then",
                               [], [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e_out"], name="else_node")], "else",
                               [], [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)])
    conv = helper.make_node("Conv", ["x", "w_raw", ""], ["conv_é"], name="conv_é", kernel_shape=[3, 3],
                            pads=[1, 1, 1, 1], alpha=0.5, mode="same", doc_string="a doc string",
                            value=numpy_helper.from_array(np.ones(3, np.float32)))
    conv.metadata_props.add(key=NAME_SCOPES_KEY, value=repr(["", "stem", "stem.conv", "conv"]))
    conv.metadata_props.add(key="other", value="ünïcode")
    nodes = [conv,
             helper.make_node("FusedRelu", ["conv_é"], ["relu"], name="fused", domain="com.microsoft"),
             helper.make_node("Reshape", ["relu", "shape"], ["flat"], name=""),
             helper.make_node("Greater", ["flat", "w_packed"], ["cond"], name="gt"),
             helper.make_node("If", ["cond"], ["branch"], name="if", then_branch=then_g, else_branch=else_g),
             helper.make_node("Identity", ["branch"], ["tap"], name=IDENTITY_PREFIX + "tap")]
    g = helper.make_graph(nodes, "everything", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3]),
                                                helper.make_tensor_value_info("w_raw", TensorProto.FLOAT, [50, 100])],
                          [helper.make_tensor_value_info("branch", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("tap", TensorProto.FLOAT, None)],
                          [big, packed, ints, strs, ext], sparse_initializer=[sparse],
                          value_info=[helper.make_tensor_value_info("relu", TensorProto.FLOAT, [1, 3])],
                          doc_string="graph doc")
    fn = helper.make_function("local", "fn", ["a"], ["b"], [helper.make_node("Abs", ["a"], ["b"], name="fn_node")],
                              [helper.make_opsetid("", 17)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
                          functions=[fn], doc_string="model doc", producer_name="test")
    m.metadata_props.add(key="leapp_lab.manifest", value='{"version": 1}')
    return m


def _models() -> dict[str, bytes]:
    scale, _ = make_graph(300)
    engine = onnx.ModelProto()
    engine.CopyFrom(scale)
    for t in ("matmul_3", "relu_2", "add_1"):
        engine.graph.node.append(helper.make_node("Identity", [t], [f"probe_{t}"], name=IDENTITY_PREFIX + t))
        engine.graph.output.append(onnx.ValueInfoProto(name=f"probe_{t}"))
    second = onnx.ModelProto(graph=helper.make_graph([helper.make_node("Relu", ["branch"], ["late"], name="late")],
                                                     "merged", [], [helper.make_tensor_value_info("late", 1, None)]))
    everything = _everything().SerializeToString()
    return {"scale": scale.SerializeToString(), "engine": engine.SerializeToString(), "everything": everything,
            # a graph field twice: protobuf merges them (repeated fields appended, the last name wins)
            "merged": everything + second.SerializeToString(), "empty": b""}


@pytest.mark.parametrize("name", ["scale", "engine", "everything", "merged", "empty"])
def test_the_wire_reader_reads_what_onnx_parses(tmp_path, name):
    data = _models()[name]
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(data)
    ref = onnx.load_from_string(data).graph
    wire = read_graph(path)
    assert _view(wire) == _view(ref)
    if name == "everything":       # the subgraphs' and the function's nodes are not the graph's
        assert [n.name for n in wire.node] == ["conv_é", "fused", "", "gt", "if", IDENTITY_PREFIX + "tap"]
        assert wire.node[0].input == ["x", "w_raw", ""] and wire.initializer[-1].name == "w_ext"
    # the accuracy graph verify stores is the same from either parse
    rows = [VerifyRow(name=o, kind="op", tensor=o, producer_node=n.name) for n in ref.node for o in n.output][::2]
    assert graph_of(wire, rows, file=str(path)) == graph_of(ref, rows, file=str(path))


def test_truncated_or_foreign_bytes_fail_where_onnx_fails():
    data = _models()["everything"]
    cuts = sorted({int(len(data) * k / 97) for k in range(1, 97)} | {1, 2, 3, len(data) - 1})
    failed = 0
    for cut in cuts:
        try:
            ref = onnx.load_from_string(data[:cut]).graph
        except Exception:      # DecodeError
            with pytest.raises(ValueError):
                parse_graph(data[:cut])
            failed += 1
        else:                  # a cut on a field boundary is a valid (shorter) message for both
            assert _view(parse_graph(data[:cut])) == _view(ref), cut
    assert failed > len(cuts) // 2
    with pytest.raises(ValueError, match="wire type"):
        parse_graph(b"not an onnx file")


def _external(name: str, location: str) -> onnx.TensorProto:
    t = helper.make_tensor(name, TensorProto.FLOAT, [4], [0.0] * 4)
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "16")):
        t.external_data.add(key=k, value=v)
    return t


def test_external_data_locations_are_those_onnx_finds_at_any_depth(tmp_path):
    """compile's key covers every external data file: an initializer's, a sparse initializer's, a
    node attribute's, one inside an If's subgraph and one in a local function, as onnx lists them."""
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    from leapp_lab.onnxio.wire import external_data_locations

    m = _everything()
    m.graph.sparse_initializer[0].values.CopyFrom(_external("sp_values", "sparse.bin"))
    if_node = next(n for n in m.graph.node if n.op_type == "If")
    if_node.attribute[0].g.initializer.append(_external("deep", "deep/branch.bin"))
    m.graph.node[0].attribute.append(helper.make_attribute("ext_t", _external("attr_t", "attr.bin")))
    m.functions[0].node[0].attribute.append(helper.make_attribute("fn_t", _external("fn_t", "fn.bin")))
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    found = external_data_locations(path)
    assert found == ["attr.bin", "deep/branch.bin", "fn.bin", "sparse.bin", "weights.bin"]
    listed = {e.value for t in _get_all_tensors(onnx.load_from_string(path.read_bytes())) if uses_external_data(t)
              for e in t.external_data if e.key == "location"}
    assert listed <= set(found)          # onnx's own walk (it skips functions and sparse tensors)
    assert external_data_locations(tmp_path / "m.onnx") == found
    (tmp_path / "cut.onnx").write_bytes(path.read_bytes()[:-7])
    with pytest.raises(ValueError):
        external_data_locations(tmp_path / "cut.onnx")

"""The tap manifest on hand-built ONNX graphs: marker removal, renames, strip / expose, read / write."""
from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper

from leapp_lab.onnxio import graph_edit as ge
from leapp_lab.engines.ort_taps import bind_taps
from leapp_lab.model.tap import BINDING_FIELDS, Manifest, TapEntry
from leapp_lab.onnxio.manifest import MANIFEST_KEY, ManifestError, read_manifest, strip_taps, write_manifest


def _marker(src: str, dst: str, tap_name: str) -> onnx.NodeProto:
    n = helper.make_node("Tap", [src], [dst], domain="leapp_lab", name=f"m_{tap_name}")
    n.attribute.append(helper.make_attribute("name", tap_name))
    return n


def _graph_with_markers() -> onnx.ModelProto:
    """x -> Relu -> [Tap a] -> [Tap b] -> Neg -> y ; and Tap c on the output itself."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        _marker("r", "t1", "a"),
        _marker("t1", "t2", "b"),
        helper.make_node("Neg", ["t2"], ["n"], name="neg"),
        _marker("n", "y", "c"),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18),
                                               helper.make_opsetid("leapp_lab", 1)])


def test_remove_markers_rewires_chains_and_keeps_output_names():
    m = _graph_with_markers()
    markers = ge.remove_tap_markers(m)
    # the marker on the output hands the output's name to the value it marked (as untapped)
    assert [(k.name, k.tensor) for k in markers] == [("a", "r"), ("b", "r"), ("c", "y")]
    assert [n.op_type for n in m.graph.node] == ["Relu", "Neg"]
    assert list(m.graph.node[1].input) == ["r"] and list(m.graph.node[1].output) == ["y"]
    assert [o.domain for o in m.opset_import] == [""]
    onnx.checker.check_model(m)
    x = np.array([-1.0, 2.0], np.float32)
    (y,) = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_array_equal(y, -np.maximum(x, 0))


def test_marker_on_an_input_that_is_returned_becomes_identity():
    g = helper.make_graph([_marker("x", "y", "inp")], "g",
                          [helper.make_tensor_value_info("x", T.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("leapp_lab", 1)])
    (k,) = ge.remove_tap_markers(m)
    assert (k.name, k.tensor) == ("inp", "x")
    assert [(n.op_type, list(n.input), list(n.output)) for n in m.graph.node] == [("Identity", ["x"], ["y"])]
    onnx.checker.check_model(m)


def test_rename_value_everywhere():
    m = _graph_with_markers()
    ge.remove_tap_markers(m)
    ge.rename_value(m.graph, "r", "r2")
    assert m.graph.node[0].output[0] == "r2" and m.graph.node[1].input[0] == "r2"
    assert "r" not in ge.value_names(m.graph)


def _tapped() -> tuple[onnx.ModelProto, Manifest]:
    m = _graph_with_markers()
    ge.remove_tap_markers(m)
    from leapp_lab.onnxio.manifest import add_output
    add_output(m.graph, "a", "r", "float32", [2])     # named tap: through an Identity
    add_output(m.graph, "r", "r", "float32", [2])     # op tap: the value itself
    man = Manifest(inputs=["x"], outputs=[TapEntry("y", "output", 1, reference_source="torch")],
                   taps=[TapEntry("a", "manual", 0, "r", "Relu", "relu", "torch",
                                  dtype="float32", shape=[2]),
                         TapEntry("r", "op", 0, "r", "Relu", "relu", "onnxruntime",
                                  dtype="float32", shape=[2])])
    write_manifest(m, man)
    return m, man


def test_manifest_roundtrip_json_shape():
    m, man = _tapped()
    (prop,) = [p for p in m.metadata_props if p.key == MANIFEST_KEY]
    d = json.loads(prop.value)
    assert d["version"] == 1 and d["inputs"] == ["x"]
    assert {k: d["outputs"][0][k] for k in ("name", "kind", "order", "source")} == \
        {"name": "y", "kind": "output", "order": 1, "source": None}
    # what compile adds (how an engine exposes a tap) is never stamped into the model
    assert not set(BINDING_FIELDS) & (set(d["taps"][0]) | set(d["outputs"][0]))
    assert {"name", "kind", "order", "tensor", "producer_op", "producer_node", "reference_source",
            "uncompared_reason", "source"} <= set(d["taps"][0])
    back = read_manifest(m)
    assert back == man and not back.synthesized
    assert [r.name for r in back.rows()] == ["a", "r", "y"]
    write_manifest(m, man)                                 # re-stamping replaces, never duplicates
    assert sum(p.key == MANIFEST_KEY for p in m.metadata_props) == 1


def test_strip_then_bind_restores_the_outputs():
    m, man = _tapped()
    bare = strip_taps(m)
    assert [o.name for o in bare.graph.output] == ["y"]
    assert not any(n.name.startswith("leapp_lab_tap/") for n in bare.graph.node)
    assert not any(p.key == MANIFEST_KEY for p in bare.metadata_props)
    assert read_manifest(bare).synthesized
    # an engine exposes the taps on its own (here: unconverted) graph, by their tensor names
    again, bound = bind_taps(bare, bare, man.taps)
    assert [(t.name, t.binding, t.bound_to) for t in bound] == [("a", "bound", "r"), ("r", "bound", "r")]
    assert [o.name for o in again.graph.output] == ["y", "a", "r"]
    x = np.array([-1.0, 2.0], np.float32)
    y, a, r = ort.InferenceSession(again.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_array_equal(a, np.maximum(x, 0)) and np.testing.assert_array_equal(r, a)
    assert man.taps[0].binding is None        # the manifest's entries are copied, never changed
    # a conversion that renamed the tensor: reported per tap, not fatal
    ge.rename_value(bare.graph, "r", "fused_r")
    _, bound = bind_taps(bare, bare, man.taps)
    assert [t.binding for t in bound] == ["unbound", "unbound"] and "'r'" in bound[0].binding_reason


def test_read_manifest_rejects_garbage():
    m, _ = _tapped()
    for p in m.metadata_props:
        if p.key == MANIFEST_KEY:
            p.value = "{not json"
    with pytest.raises(ValueError, match="not valid JSON"):
        read_manifest(m)
    for p in m.metadata_props:
        if p.key == MANIFEST_KEY:
            p.value = json.dumps({"version": 99})
    with pytest.raises(ValueError, match="unsupported manifest version"):
        read_manifest(m)


def test_read_manifest_names_the_file_and_checks_taps_against_the_graph(tmp_path):
    m, _ = _tapped()
    for p in m.metadata_props:
        if p.key == MANIFEST_KEY:
            p.value = json.dumps({"version": 1,
                                  "taps": [{"name": "a", "tensor": "r"}, {"name": "gone"}]})
    onnx.save(m, str(tmp_path / "m.onnx"))
    with pytest.raises(ManifestError, match=r"m\.onnx: manifest taps \['gone'\] are not outputs of"):
        read_manifest(tmp_path / "m.onnx")
    for p in m.metadata_props:
        if p.key == MANIFEST_KEY:
            p.value = "[1, 2]"
    with pytest.raises(ManifestError, match=r"^x\.onnx: metadata 'leapp_lab.manifest': not a manifest object"):
        read_manifest(m, "x.onnx")


def test_a_sparse_manifest_is_completed_from_the_graph():
    """A hand-made manifest with only tap names: kind manual, value = the name, order and model
    outputs from the graph (every non-tap graph output)."""
    m, _ = _tapped()
    for p in m.metadata_props:
        if p.key == MANIFEST_KEY:
            p.value = json.dumps({"version": 1,
                                  "taps": [{"name": "a", "tensor": "r"}, {"name": "r"}]})
    man = read_manifest(m)
    assert [(t.name, t.kind, t.value, t.order) for t in man.taps] == [("a", "manual", "r", 0),
                                                                      ("r", "manual", "r", 0)]
    assert [(o.name, o.order) for o in man.outputs] == [("y", 1)] and man.inputs == ["x"]
    assert [e.name for e in man.rows()] == ["a", "r", "y"]


def test_strip_removes_nodes_that_only_fed_taps():
    m, man = _tapped()
    # an exporter-style Identity feeding only a tap output (a tap on a value the model returns)
    m.graph.node.append(helper.make_node("Identity", ["y"], ["y_tap"], name="exporter_identity"))
    m.graph.output.append(helper.make_tensor_value_info("y_tap", T.FLOAT, [2]))
    man.taps.append(TapEntry("y_tap", "manual", 1, "y"))
    write_manifest(m, man)
    bare = strip_taps(m)
    assert [n.op_type for n in bare.graph.node] == ["Relu", "Neg"]
    assert [o.name for o in bare.graph.output] == ["y"]

"""The graph verify stores, on real builds: onnxruntime int8 (fused and Q/DQ nodes, scopes recovered
from the prepared graph) and an engine without an ONNX artifact (the prepared graph is used)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import leapp_lab
from tests.models.builds import prepared


@pytest.fixture(scope="module")
def int8(tmp_path_factory):
    p = prepared("conv_net", taps=("all",), op=True)
    out = tmp_path_factory.mktemp("int8")
    build = leapp_lab.compile(str(p.onnx), engine="ort-int8", out=out / "model.ort-int8")
    return p, build, leapp_lab.verify(str(p.reference), str(out / "model.ort-int8"), out=out / "lab")


def test_int8_engine_graph_places_rows_on_fused_nodes(int8):
    p, build, rep = int8
    g = rep.graph
    assert g.source == "engine" and g.file.endswith("engine.onnx")
    ops = {n.name: n for n in g.nodes}
    # onnxruntime fused Relu into the Conv before it: the taps on the Relu outputs sit on the Conv
    assert ops["node_Conv_11"].rows == ["stem"] and ops["node_conv2d_1"].rows == ["relu_1"]
    assert ops["node_linear"].op == "com.microsoft::QGemm" and ops["node_linear"].rows == ["output_0"]
    # int8 conversion drops node metadata: scopes come from the prepared graph; a Q/DQ node the
    # converter added takes the scope of the value it (de)quantizes; top-level ops stay top level
    # (signed int8 fuses the Q after block1.0's Relu into its QLinearConv; block2.0's DQ stays a node)
    assert ops["node_conv2d_1"].scope == "block1.0" and ops["relu_2_DequantizeLinear"].scope == "block2.0"
    assert ops["node_add"].scope is None
    # tap exposure (one per bound tap) and weight-only DequantizeLinear nodes are left out
    bound = sum(t.binding == "bound" for t in build.taps)
    import onnx
    eng = onnx.load(str(Path(build.path) / "engine.onnx"))
    inits = {i.name for i in eng.graph.initializer}
    weight_dq = [n.name for n in eng.graph.node if n.op_type == "DequantizeLinear" and n.input[0] in inits]
    assert g.left_out["tap exposure"] == bound and g.left_out.get("constant", 0) >= len(weight_dq)
    assert not set(weight_dq) & set(ops)
    assert not any(n.name.startswith("leapp_lab_tap/") for n in g.nodes)
    # every row in the table is on a node; unbound taps (fused away, not in the engine) on none
    assert all(g.node_of(r.name) is not None for r in rep.table())
    assert all(g.node_of(r.name) is None for r in rep.rows if r.status == "not-in-engine")
    stored = json.loads((rep.path / "report.json").read_text())["graph"]
    assert stored["nodes"][0]["name"] == g.nodes[0].name and leapp_lab.load(rep.path).graph == g


def test_an_engine_without_onnx_uses_the_prepared_graph(int8, tmp_path):
    p, build, rep = int8
    other = tmp_path / "model.trt-like"
    shutil.copytree(build.path, other)
    (other / "engine.onnx").unlink()
    meta = json.loads((other / "build.json").read_text())
    meta["artifact"] = "engine.engine"           # how a TensorRT build names its artifact
    (other / "build.json").write_text(json.dumps(meta))
    again = leapp_lab.verify(str(p.reference), str(other), save=False)
    g = again.graph
    assert g.source == "prepared" and g.file == str(p.onnx)
    ops = {n.name: n for n in g.nodes}
    # the prepared graph: unfused, every op tap on its own node, scopes from the exporter
    assert ops["node_relu"].rows == ["stem"] and ops["node_relu"].scope == "stem.2"
    assert ops["node_relu_1"].rows == ["relu_1"] and ops["node_linear"].op == "Gemm"

"""Graph views: the accuracy graph's view dict (scope folding, colour metrics, links to rows), hover
texts of the drawn graphs, and byte-identical HTML for reports with graphs."""
import re
import shutil

import pytest

from leapp_lab.model.base import load
from leapp_lab.views import engine_graph_view as egv
from leapp_lab.views import graphs
from leapp_lab.views.html import to_html
from leapp_lab.views.trace_view import connectivity_drawing, fx_drawing
from leapp_lab.views.viewdict import build_view
from tests.models.scale_verify import make_scale_run
from viewfixtures import trace_report, verify_report


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    return make_scale_run(tmp_path_factory.mktemp("scale"), rows=120, nodes=62)


def test_scopes_fold_into_groups_of_two_nodes_or_more():
    groups, node_group = egv._groups(["a.b.c", "a.b.d", "a.b.d", "x", "x", None, "y", "a.b.d.e"])
    # "a" is exactly its only child "a.b": dropped; "a.b.c", "y" and "a.b.d.e" hold one node: dropped
    assert list(groups) == ["a.b", "a.b.d", "x"]
    assert node_group == ["a.b", "a.b.d", "a.b.d", "x", "x", None, None, "a.b.d"]
    assert groups["a.b.d"] == {"id": "a.b.d", "parent": "a.b", "depth": 1, "size": 3, "label": "d"}
    assert groups["a.b"]["parent"] is None and groups["a.b"]["size"] == 4


def test_accuracy_graph_view_of_a_verify_run(small_run, monkeypatch):
    rep = small_run
    v = build_view(rep)
    assert {"id": "graph", "label": "Graph"} in v["tabs"]
    g = v["engine_graph"]
    nodes = g["nodes"]
    assert nodes[0] == {"name": "x", "op": "graph input", "kind": "input", "group": None, "rows": [], "inputs": []}
    assert nodes[-1]["kind"] == "output" and nodes[-1]["name"] == "output_0"
    ops = [n for n in nodes if n["kind"] == "op"]
    assert [n["name"] for n in ops] == [n.name for n in rep.graph.nodes]
    # edges are node indices: each op reads its predecessor in the chain (LayerNorm/Add: also the residual)
    by_name = {n["name"]: i for i, n in enumerate(nodes)}
    for n in ops[1:]:
        src = rep.graph.nodes[[x.name for x in rep.graph.nodes].index(n["name"])]
        assert sorted(n["inputs"]) == sorted({by_name[p.name] for p in rep.graph.nodes for o in p.outputs
                                              if o in src.inputs} | ({0} if "x" in src.inputs else set()))
    # each table row is on exactly one node; rows stay in model order on a node
    placed = [r for n in nodes for r in n["rows"]]
    assert sorted(placed) == sorted(r.name for r in rep.table()) and g["unplaced"] == []
    # groups: blocks ⊃ blocks.<b> ⊃ blocks.<b>.attn / .mlp, plus stem and head
    ids = {x["id"] for x in g["groups"]}
    assert {"stem", "head", "blocks", "blocks.0", "blocks.0.attn", "blocks.0.mlp"} <= ids
    assert next(n for n in ops if n["name"] == "node_softmax_1")["group"] == "blocks.0.attn"
    # the failing node is drawn at first: its scopes are open
    first = nodes[g["first_node"]]
    assert rep.first_divergent in first["rows"]
    chain, gid = [], first["group"]
    parents = {x["id"]: x["parent"] for x in g["groups"]}
    while gid:
        chain.append(gid)
        gid = parents[gid]
    assert chain and set(chain) <= set(g["open"])
    # colour metrics: the rule's measure first, with the rule's thresholds
    m = {x["key"]: x for x in g["metrics"]}
    assert g["metrics"][0]["key"] == "nrmse" and m["nrmse"]["threshold"] == rep.rule.div_nrmse / 100
    assert m["cosine"]["threshold"] == rep.rule.div_cosine and m["cosine"]["worse"] == "below"
    assert m["mape"]["threshold"] is None and m["max_abs"]["threshold"] is None    # no MAPE criterion
    keys = {c["key"] for c in v["table"]["columns"]}
    assert set(m) <= keys                                   # the front-end reads them from row cells
    # folding keeps the first drawing small: at most FOLD_TARGET boxes plus the failing node's scopes
    monkeypatch.setattr(egv, "FOLD_TARGET", 6)
    small = egv.engine_graph_view(rep)
    assert set(small["open"]) == set(chain)


def test_a_report_without_a_graph_has_no_graph_tab():
    v = build_view(verify_report())
    assert v["engine_graph"] is None and "graph" not in [t["id"] for t in v["tabs"]]


@pytest.mark.parametrize("prefer_dot", [True, False])
def test_hover_texts_name_the_node_its_op_and_verdict(prefer_dot):
    if prefer_dot and not shutil.which("dot"):
        pytest.skip("Graphviz 'dot' is not installed (apt-get install graphviz); the layered fallback is tested")
    r = trace_report(evil=True)
    conn, _ = graphs.render_svg(connectivity_drawing(r.graph), prefer_dot=prefer_dot)
    fx, _ = graphs.render_svg(fx_drawing(r.graph.nodes[0].fx), prefer_dot=prefer_dot)
    titles = re.findall(r"<title>([^<]*)</title>", conn + fx)
    assert not [t for t in titles if re.fullmatch(r"(n\d+|n\d+&#45;&gt;n\d+|G)", t)]     # no internal ids
    assert "head · onnx-dynamo · verdict pass" in titles
    assert any(t.startswith("scale&lt;script&gt;") and t.endswith(" · jit-script · verdict fail") for t in titles)
    assert "mul · call_function torch.mul · flagged: a literal probably frozen at trace time" in titles
    assert "head → head (h_out→h) · feedback" in titles and "obs → mul" in titles
    assert "<script>" not in conn


def test_html_of_reports_with_graphs_is_byte_identical(small_run, tmp_path):
    a = to_html(small_run)
    assert a == to_html(small_run) == to_html(load(small_run.path))
    assert a.count('"engine_graph":{') == 1
    t = trace_report()
    assert to_html(t) == to_html(trace_report())

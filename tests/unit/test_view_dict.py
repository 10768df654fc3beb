"""build_view: the view dict of trace and verify reports, checked against the report model."""
import json
import shutil

import pytest

from leapp_lab.views import graphs
from leapp_lab.views.viewdict import build_view
from viewfixtures import EVIL, trace_report, verify_report


def test_trace_rows_follow_the_model():
    r = trace_report()
    v = build_view(r)
    rows = v["table"]["rows"]
    # node completion order, then port order, then sample
    assert [x["id"] for x in rows] == ["scale/y/0", "scale/y/1", "scale/y/2", "head/out/0", "head/out/1", "head/out/2"]
    by_id = {c.row_id: c for c in r.graph.checks}
    for row in rows:
        c = by_id[row["id"]]
        assert row["status"] == ("pass" if c.passed else "fail")
        assert row["cells"]["max"] == c.stats["max"]          # passed through, not recomputed
        assert row["cells"]["min_atol"] == c.min_atol
        (s,) = row["samples"]
        assert s["hist"]["counts"] == c.hist.counts and s["hist"]["zero"] == c.hist.zero
        assert s["hist"]["first_bin"] == c.hist.first_bin and "edges" not in s["hist"]   # derived in the front-end
        assert row["group"] == f"{c.node}/{c.port}"
    assert [x["status"] for x in rows[:3]] == ["pass", "fail", "fail"]
    assert rows[0]["samples"][0]["hist"]["zero"] == 6          # identical sample: all in the explicit zero bin
    assert [x["id"] for x in rows if x["first_divergent"]] == ["scale/y/1"]
    assert v["table"]["first_divergent"] == "scale/y/1"
    assert rows[1]["cells"]["hazards"] == "frozen-constant" and rows[0]["cells"]["hazards"] == ""
    assert v["status"] == "fail"


def test_trace_inputs_summaries_come_from_the_arrays():
    r = trace_report()
    row = build_view(r)["table"]["rows"][2]
    (inp,) = row["samples"][0]["inputs"]
    x = r.arrays()["scale/obs/2/input"]
    assert inp["name"] == "obs" and inp["index"] == 2 and inp["shape"] == [2, 3] and inp["dtype"] == "float32"
    assert inp["range"] == [float(x.min()), float(x.max())]


def test_trace_node_panel_graph_and_log():
    v = build_view(trace_report())
    node = v["nodes"]["scale"]
    assert node["fx"]["suspects"][0]["name"] == "mul"
    code_lines = node["fx"]["code"].splitlines()
    assert [code_lines[i] for i in node["fx"]["code_marks"]] == ["    mul = torch.mul(obs, 1.7);  obs = None"]
    assert 'data-leapp-fx="mul"' in node["fx"]["svg"]
    assert [p["name"] for p in v["nodes"]["head"]["ports"]] == ["y", "h", "out", "h_out"]
    svg = v["graphs"][0]["svg"]
    assert 'data-leapp-node="scale"' in svg and 'data-leapp-node="head"' in svg
    assert [x["level"] for x in v["log"]["records"]] == ["SECTION", "INFO", "WARNING", "DEBUG", "ERROR"]
    assert v["log"]["levels"] == ["DEBUG", "INFO", "SECTION", "WARNING", "ERROR"]
    assert v["log"]["sections"] == ["COMPILE", "VALIDATE"]
    assert v["hazards"][0]["kind"] == "frozen-constant"
    json.dumps(v, allow_nan=False)       # plain JSON, nothing else


@pytest.mark.parametrize("prefer_dot", [True, False])
def test_connectivity_graph_both_layouts(prefer_dot):
    if prefer_dot and not shutil.which("dot"):
        pytest.skip("Graphviz 'dot' is not installed (apt-get install graphviz); the layered fallback is tested")
    r = trace_report(evil=True)
    svg, layout = graphs.render_svg(__import__("leapp_lab.views.trace_view", fromlist=["x"])
                                    .connectivity_drawing(r.graph), prefer_dot=prefer_dot)
    assert layout == ("dot" if prefer_dot else "layered")
    assert svg.count("data-leapp-node=") == 2
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert 'data-leapp-node="scale&lt;script&gt;' in svg
    assert "stroke-dasharray" in svg or "5,2" in svg or "dashed" in svg    # the feedback edge h_out -> h


def test_dot_source_quotes_names():
    d = graphs.Drawing(boxes=[graphs.Box(key='a"b\\c', title='a"b\\c\n<x>')], arrows=[])
    dot = graphs.to_dot(d)
    assert "&lt;x&gt;" in dot and '<x>' not in dot.replace("<<TABLE", "").replace("</TABLE>>", "")


def test_dot_edge_labels_with_backslashes_quotes_and_newlines_are_laid_out_by_dot():
    """An edge label (a port name: user text) ending in a backslash, or holding quotes or a newline,
    must not break the DOT source: dot lays it out (no fallback) and the label reads as written."""
    if not shutil.which("dot"):
        pytest.skip("Graphviz 'dot' is not installed (apt-get install graphviz)")
    d = graphs.Drawing(boxes=[graphs.Box(key="a", title="a"), graphs.Box(key="b", title="b")],
                       arrows=[graphs.Arrow("a", "b", "out\\"), graphs.Arrow("b", "a", 'q"x"\ny', feedback=True)])
    svg, layout = graphs.render_svg(d)
    assert layout == "dot"
    assert ">out\\</text>" in svg and "q&quot;x&quot; y" in svg


def test_verify_rows_status_and_order(tmp_path):
    r = verify_report(tmp_path)
    v = build_view(r)
    rows = v["table"]["rows"]
    assert [x["id"] for x in rows] == ["tap_a", "tap_b", "tap_c", "output_0"]          # model order
    assert [x["status"] for x in rows] == ["pass", "fail", "uncompared", "fail"]
    assert [x["tap_status"] for x in rows] == ["compared", "compared", "no-reference", "compared"]
    assert [x["id"] for x in rows if x["first_divergent"]] == ["tap_b"]
    tb = rows[1]
    src = r.row("tap_b")
    assert tb["cells"]["mape"] == src.mape and tb["cells"]["cosine"] == src.cosine
    assert tb["cells"]["nrmse"] == src.nrmse is not None and "nrmse" in [c["key"] for c in v["table"]["columns"]]
    assert tb["cells"]["source"] == "model.py:15" and tb["cells"]["reference_source"] == "torch"
    assert [s["key"] for s in tb["samples"]] == ["all", "0", "1"]
    assert tb["samples"][2]["hist"]["counts"] == src.samples[1].hist.counts
    assert tb["samples"][0]["hist"]["counts"] == src.hist.counts
    keys = [c["key"] for c in v["table"]["panel_columns"]]
    metrics = dict(zip(keys, tb["samples"][1]["m"]))
    assert metrics["mape"] == src.samples[0].mape and metrics["nrmse"] == src.samples[0].nrmse
    # the inputs each sample fed the engine, as recorded in the report (once per sample, not per row)
    (inp,) = v["inputs"]["0"]
    assert inp["name"] == "x" and inp["shape"] == [3, 5] and inp["index"] == 0
    # the error-growth profile: compared rule rows only, in model order
    assert v["profile"]["x"] == ["tap_a", "tap_b", "output_0"]
    assert v["profile"]["first_divergent_index"] == 1
    mape = next(s for s in v["profile"]["series"] if s["key"] == "mape")["y"]
    assert mape == [r.row(n).mape for n in ("tap_a", "tap_b", "output_0")]
    nrmse = next(s for s in v["profile"]["series"] if s["key"] == "nrmse")["y"]
    assert nrmse == [r.row(n).nrmse for n in ("tap_a", "tap_b", "output_0")]
    # the rule shown is the report's own (a rule without recorded text is described from its fields)
    assert v["table"]["rule"] == "status: " + r.rule.describe() and "nrmse > 0.01 (1%)" in v["table"]["rule"]
    assert "1 outputs are missing in the reference" in v["notes"]


def test_verify_self_compare_rows_are_uncompared():
    r = verify_report()
    r.rows[0].self_compare = True
    row = build_view(r)["table"]["rows"][0]
    assert row["status"] == "uncompared" and row["tap_status"] == "self-compare"


def test_unknown_kind_is_a_clear_error():
    class Other:
        kind = "replay"
    with pytest.raises(TypeError, match="replay"):
        build_view(Other())


def test_refused_graph_and_several_graphs():
    from leapp_lab.model.trace import GraphReport, TraceReport
    r = trace_report()
    refused = GraphReport(name="other", status="refused", verdict="error", error="LEAPP refused: <no nodes>")
    two = TraceReport(graphs=[r.graph, refused])
    v = build_view(two)
    ids = [x["id"] for x in v["table"]["rows"]]
    assert ids[0] == "frozen:scale/y/0" and len(ids) == 6           # graph-qualified when there are several
    assert set(v["nodes"]) == {"frozen:scale", "frozen:head"}
    assert v["graphs"][1]["svg"] == "" and v["status"] == "fail"
    assert "other: LEAPP refused: <no nodes>" in v["notes"]
    only = build_view(TraceReport(graphs=[refused]))
    assert only["table"]["rows"] == [] and only["table"]["first_divergent"] is None


def test_layered_drawings_define_one_arrow_marker_named_after_the_drawing():
    import re
    from leapp_lab.views.trace_view import connectivity_drawing, fx_drawing
    r = trace_report()
    svgs = [graphs.render_svg(connectivity_drawing(r.graph), prefer_dot=False)[0] for _ in range(2)]
    svgs.append(graphs.render_svg(fx_drawing(r.graph.nodes[0].fx), prefer_dot=False)[0])
    ids = [re.findall(r'<marker id="([^"]+)"', s) for s in svgs]
    # deterministic: the same drawing, the same id (the front-end makes ids page-unique on insert);
    # another drawing, another id
    assert all(len(i) == 1 for i in ids) and ids[0] == ids[1] != ids[2]
    for s, (mid,) in zip(svgs, ids):
        refs = set(re.findall(r'marker-end="url\(#([^)]+)\)"', s))
        assert refs == {mid}

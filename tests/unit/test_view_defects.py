"""View-dict and static-HTML parts of issue 21's listed defects (the browser side:
tests/browser/test_view_search_and_layout.py): graph inputs of one name on two nodes drawn apart, the
static trace view's hazard explanations, the static table's shown columns and wrap points, and the
repair view's rows explaining why a segment is kept."""
from leapp_lab.model.trace import GraphReport, NodeReport, PortInfo
from leapp_lab.views.static_html import breakable, render_static
from leapp_lab.views.trace_view import connectivity_drawing
from leapp_lab.views.viewdict import build_view
from test_repair_model import report as repair_report
from viewfixtures import EVIL, trace_report


def _twin(names=("arm/obs", "leg/obs")) -> GraphReport:
    nodes = [NodeReport(name=n, index=i, backend="jit-script", verdict="pass",
                        ports=[PortInfo("obs", "in", "float32", shape), PortInfo("act", "out", "float32", shape)])
             for i, (n, shape) in enumerate((("arm", [1, 8]), ("leg", [1, 4])))]
    return GraphReport(name="twin", nodes=nodes, graph_inputs=list(names), graph_outputs=["arm/act", "leg/act"])


def test_graph_inputs_of_one_name_on_two_nodes_are_two_boxes():
    d = connectivity_drawing(_twin())
    io = {b.key: b for b in d.boxes if b.attr == "data-leapp-io"}
    assert sorted(io) == ["input:arm/obs", "input:leg/obs", "output:arm/act", "output:leg/act"]
    assert io["input:arm/obs"].title == io["input:leg/obs"].title == "obs"
    assert io["input:arm/obs"].lines == ["graph input [1,8]"] and io["input:leg/obs"].lines == ["graph input [1,4]"]
    assert sorted((a.src, a.dst) for a in d.arrows if a.src.startswith("input:")) == [
        ("input:arm/obs", "arm"), ("input:leg/obs", "leg")]
    # a bare port name (no node): one box per node that takes it
    d = connectivity_drawing(_twin(names=("obs",)))
    assert sorted(a.src for a in d.arrows if a.src.startswith("input:")) == ["input:arm/obs", "input:leg/obs"]


def test_static_trace_view_carries_each_hazard_and_what_it_means():
    v = build_view(trace_report(evil=True))
    html = render_static(v)
    assert EVIL not in html
    assert html.count("<li data-leapp-hazard=") == len(v["hazards"]) == 1
    assert "<b>frozen-constant</b>" in html and "(samples 1, 2)" in html
    assert "sample 0 passes but 1, 2 fail" in html                    # the explanation, not only the kind


def test_static_table_shows_the_live_views_columns_and_wraps_at_module_boundaries():
    v = build_view(trace_report())
    v["table"]["columns"][5]["hidden"] = True                          # off, as in the live view
    hidden = v["table"]["columns"][5]["label"]
    html = render_static(v)
    head = html[html.index("<thead>"):html.index("</thead>")]
    shown = [c for c in v["table"]["columns"] if not c.get("hidden")]
    assert f"<th>{hidden}</th>" not in head and head.count("<th>") == len(shown)
    assert breakable("mlp_policy.py:26") == "mlp_<wbr>policy.<wbr>py:<wbr>26"
    assert breakable("manual") == "manual" and breakable("<a.b>") == "&lt;a.<wbr>b&gt;"


def test_repair_rows_say_why_a_segment_is_kept_or_not_in_segments_words():
    r = repair_report()
    v = build_view(r)
    t = v["table"]
    assert (t["jump_status"], t["jump_label"], t["row_noun"]) == ("pass", "kept", "segment")
    why = {x["id"]: x["why"] for x in t["rows"]}
    # "b" was chosen first; "a" ranked 2nd alone but was added in round 2
    assert why["b"] == ("chosen in greedy round 1: kept in fp32 it takes the largest output nrmse from 0.5 (as built) "
                        "to 0.02; alone in fp32 it ranked 1 of 3 (output nrmse 0.02)")
    assert why["a"] == ("chosen in greedy round 2: added to b, it takes the largest output nrmse from 0.02 to 0.008; "
                        "alone in fp32 it ranked 2 of 3 (output nrmse 0.45)")
    assert why["out"].startswith("its build failed or its error is unmeasurable: build failed")
    labels = [c["label"] for c in t["info_columns"]]
    info = dict(zip(labels, next(x for x in t["rows"] if x["id"] == "a")["info"]))
    assert info["nodes in the segment"] == "2: n0, n1"
    assert info["nodes kept in fp32 with it"] == "3 (its 2 and 1 that read its values)"


def test_largest_local_error_badge_says_taps_when_an_output_adds_more():
    """worst_local ranks taps first: with a model output adding more error of its own (the layers
    after the last tap) the finding names the output, so the badge must not call the tap the
    largest local error without saying it ranks taps (a multi-output model: the finding named
    policy.std at 0.038, the badge '<script>…' at 0.0066, green)."""
    from viewfixtures import verify_report, with_local
    r = with_local(verify_report(), {"tap_a": 0.0001, "tap_b": 0.001, "output_0": 0.012})
    r.worst_local, r.first_locally_divergent = "tap_b", "output_0"
    b = {x["label"]: x for x in build_view(r)["badges"] if x["label"].startswith("largest local error")}
    assert list(b) == ["largest local error (taps)"], list(b)
    x = b["largest local error (taps)"]
    assert x["value"] == "tap_b" and "output_0" in x["title"] and "0.012" in x["title"]
    assert "output_0" in r.finding
    # the tap is the largest of all rows: the plain label, as before
    r.row("output_0").local_nrmse = 0.0005
    assert [x["label"] for x in build_view(r)["badges"] if x["label"].startswith("largest local")] == ["largest local error"]


def test_checks_passed_badge_is_not_green_when_nothing_was_checked():
    """A refused graph (LEAPP could not export a node) has no checks: 'checks passed 0/0' said pass
    (green) beside 'graph refused'; nothing checked is neither pass nor fail."""
    r = trace_report()
    g = r.graphs[0]
    g.status, g.verdict, g.checks, g.error = "refused", "error", [], "LEAPP could not export node 'scale'"
    b = {x["label"]: x for x in build_view(r)["badges"]}
    assert b["checks passed"]["value"] == "0/0" and b["checks passed"]["status"] is None
    assert {x["label"]: x for x in build_view(trace_report())["badges"]}["checks passed"]["status"] == "fail"


def test_an_amber_row_says_why_it_is_amber():
    """With --local a row that diverges while its own error is within the rule is amber (it
    inherits); its panel and tooltip said only 'nrmse > 0.01 (1%)', the words of the red rows."""
    from viewfixtures import verify_report, with_local
    r = with_local(verify_report(), {"tap_a": 0.0001, "tap_b": 0.08, "output_0": 0.002})
    rows = {x["id"]: x for x in build_view(r)["table"]["rows"]}
    amber = [x for x in rows.values() if x["tone"] == "warn"]
    assert amber, [(x["id"], x["tone"]) for x in rows.values()]
    for x in amber:
        assert "inherit" in x["why"] and "local NRMSE 0.002" in x["why"] and x["why"].startswith("nrmse"), x["why"]
    assert "why" not in rows["tap_b"]                         # red: the reason words, as before

"""The finding (issue 21, Deliver 1): one to three sentences per report kind, computed in the model,
that name the row a fixture planted; the same text leads ``str(report)``, the view dict, the static
HTML and report.json. Hand-built reports (viewfixtures, test_repair_model): each test plants the
defect somewhere else too, so a sentence that did not follow the data would fail."""
from __future__ import annotations

import json
import re

import pytest

from leapp_lab.model.base import load
from leapp_lab.model.finding import Finding, finding_of
from leapp_lab.model.verify import ExpectedRule
from leapp_lab.views.static_html import render_static
from leapp_lab.views.viewdict import build_view
from test_repair_model import report as repair_report
from viewfixtures import trace_report, verify_report, verify_report_after


def _sentences(text: str) -> int:
    return len(re.findall(r"[.!?](?:\s|$)", text))


def _same_everywhere(rep) -> dict:
    """report.finding leads str(report), is the view dict's finding and the static view's element."""
    text = rep.finding
    assert 1 <= _sentences(text) <= 3, text
    assert str(rep).startswith(text + "\n\n")
    view = build_view(rep)
    assert view["finding"]["text"] == text
    static = render_static(view)
    m = re.search(r'<div class="leapp-finding[^>]*data-leapp-finding="[^"]*"[^>]*>(.*?)</div>', static)
    assert m and re.sub(r"<[^>]+>", "", m.group(1)).replace("&gt;", ">").replace("&lt;", "<") \
        .replace("&amp;", "&").replace("&#x27;", "'").replace("&quot;", '"') == text
    return view["finding"]


def test_trace_finding_names_the_first_failing_row_the_hazard_the_literal_and_the_fix():
    rep = trace_report()
    f = rep.finding_record()
    assert f.status == "fail" and f.rows == ["scale/y/1"]
    assert f.text.startswith("scale/y/1 is the first failing node/port/sample")
    assert "frozen-constant" in f.text and "1.7" in f.text and "mul = torch.mul(obs, 1.7)" in f.text
    assert "Fix:" in f.text and "annotate.input_tensors()" in f.text
    view = _same_everywhere(rep)
    assert view["links"] == [{"text": "scale/y/1", "row": "scale/y/1"}]
    # plant the failure on the second node instead: the finding follows it
    g = rep.graphs[0]
    for c in g.checks:
        c.passed = c.node == "scale" or c.sample == 0
    g.hazards = []
    f = rep.finding_record()
    assert f.rows == ["head/out/1"] and "No hazard explains it" in f.text
    # everything passes
    for c in g.checks:
        c.passed = True
    assert rep.finding_record().status == "pass" and "validates" in rep.finding


def _verify_local():
    """verify_report with local error: tap_b adds 40x the error of any other row; output_0 inherits."""
    r = verify_report()
    r.local = True
    local = {"tap_a": 0.0001, "tap_b": 0.08, "output_0": 0.002}
    for row in r.rows:
        if row.name in local:
            row.local_nrmse = local[row.name]
            row.local_share = min(1.0, local[row.name] / row.nrmse) if row.nrmse else None
            row.locally_diverged = local[row.name] > 0.01
    r.worst_local = r.first_locally_divergent = "tap_b"
    return r


def test_verify_finding_plain_local_and_expected():
    plain = verify_report()
    f = plain.finding_record()
    assert f.status == "fail" and f.rows == ["tap_b"] and f.text.startswith("tap_b is the first divergent row")
    assert "nrmse" in f.text and "2 of 3 judged rows diverge" in f.text
    _same_everywhere(plain)

    loc = _verify_local()
    f = loc.finding_record()
    assert f.rows[0] == "tap_b" and f.status == "fail"
    assert "tap_b adds 40× more error than any other layer" in f.text
    assert "the rows after it inherit it" in f.text
    _same_everywhere(loc)
    # the error planted in output_0 instead: it is named, and nothing after it inherits
    for row in loc.rows:
        if row.name == "output_0":
            row.local_nrmse, row.local_share, row.locally_diverged = 0.5, 1.0, True
        elif row.name == "tap_b":
            row.local_nrmse, row.local_share, row.locally_diverged = 0.001, 0.01, False
    loc.worst_local = loc.first_locally_divergent = "output_0"
    assert loc.finding_record().rows[0] == "output_0" and "inherit" not in loc.finding
    # no layer beyond the rule on its own: rounding spread over the model, and repair is next
    for row in loc.rows:
        row.locally_diverged = False
        if row.local_nrmse:
            row.local_nrmse = min(row.local_nrmse, 0.005)
    f = loc.finding_record()
    assert f.status == "warn" and "No layer adds error beyond the rule on its own" in f.text and "repair" in f.text
    # worst_local ranks taps first: an output whose own error crosses the rule (the head after the
    # last tap) is still named, never "no layer adds error"
    out = loc.row("output_0")
    out.local_nrmse, out.locally_diverged = 0.012, True
    loc.worst_local, loc.first_locally_divergent = "tap_b", "output_0"
    f = loc.finding_record()
    assert f.status == "fail" and f.rows[0] == "output_0" and "No layer" not in f.text, f.text
    a = loc.row("tap_a")
    a.local_nrmse, a.locally_diverged = 0.011, True
    # two rows whose own error is within SHARED× of each other share the blame: both named, neither alone
    f = loc.finding_record()
    assert f.text.startswith("output_0 and tap_a add error of their own within 1.5× of each other"), f.text
    assert f.status == "fail" and f.rows == ["output_0", "tap_a"] and "adds the most" not in f.text
    _same_everywhere(loc)
    a.local_nrmse = 0.006
    a.locally_diverged = False
    b = loc.row("tap_b")
    b.local_nrmse, b.locally_diverged = 0.0115, True
    assert "output_0 and tap_b add error" in loc.finding
    a.local_nrmse, a.locally_diverged = 0.011, True
    assert "1 other row adds error of its own too" not in loc.finding

    ex = verify_report()
    ex.expected = ExpectedRule.of("fp16")
    for row in ex.rows:
        row.expected_nrmse = 0.01 if row.in_rule else None
    ex.beyond_expected, ex.first_beyond_expected = ["output_0"], "output_0"
    ex.row("output_0").beyond_expected = True
    f = ex.finding_record()
    assert f.text.startswith("Beyond what fp16 precision explains: output_0") and f.status == "fail"
    assert f.rows[0] == "output_0"
    _same_everywhere(ex)
    ex.beyond_expected, ex.first_beyond_expected = [], None
    ex.row("output_0").beyond_expected = False
    f = ex.finding_record()
    assert f.status == "warn" and f.text.startswith("Every row is within what fp16 precision explains")
    assert "repair" in f.text


def test_compare_finding_says_what_flipped_where_first_and_by_how_much():
    a, b = verify_report(), verify_report_after()
    cmp = a.diff(b)
    f = cmp.finding_record()
    assert "2 rows flipped from A (model.ort-int8) to B (model.ort-fp16) (1 to fail and 1 to pass)" in f.text
    assert f.rows[0] == "tap_a"
    assert "tap_a (pass → fail, nrmse" in f.text and f.status == "fail"
    _same_everywhere(cmp)
    same = a.diff(verify_report())
    f = same.finding_record()
    assert f.text.startswith("No row flipped") and f.status in ("pass", "warn")


def test_repair_finding_met_and_not_met():
    r = repair_report()
    f = r.finding_record()
    assert f.status == "pass" and f.text.startswith("Target met:")
    assert "2 of 3 segments" in f.text and "(b and a)" in f.text and "0.5 to 0.008" in f.text
    assert "Rebuild it: leapp-lab compile /m/model.onnx --engine ort-int8 --keep-fp32 n0" in f.text
    assert f.rows == ["b", "a"]
    _same_everywhere(r)
    r.met, r.status, r.final.error, r.final.met = False, "not-met", 0.02, False
    f = r.finding_record()
    assert f.status == "fail" and f.text.startswith("Target not met:") and "above the target 0.01" in f.text


def test_report_json_and_json_rows_carry_the_finding(tmp_path):
    rep = verify_report(tmp_path)
    rep.save(tmp_path / "run")
    doc = json.loads((tmp_path / "run" / "report.json").read_text())
    assert doc["finding"] == rep.finding
    assert load(tmp_path / "run").finding == rep.finding
    assert rep.json_rows()["finding"] == rep.finding
    assert rep.diff(verify_report_after()).json_rows()["finding"].startswith("2 rows flipped")
    r = repair_report()
    assert r.body()["finding"] == r.finding


def test_finding_rows_are_cited_verbatim_and_status_is_checked():
    f = Finding("block2 adds error; block1 inherits", "fail", ["block2", "nothere", "block2"])
    assert f.rows == ["block2"]
    with pytest.raises(ValueError, match="finding status"):
        Finding("x", "red")
    assert finding_of(object()).text.startswith("A object report")


def test_front_end_links_cut_whole_names_only():
    from leapp_lab.views.finding import finding_parts
    parts = finding_parts("block1 and block10 differ; block1.", [{"text": "block1", "row": "block1"}])
    assert [p for p in parts if p[1]] == [("block1", "block1"), ("block1", "block1")]
    assert "".join(t for t, _ in parts) == "block1 and block10 differ; block1."


def test_repair_finding_without_a_final_build_says_why():
    r = repair_report()
    r.met, r.status, r.final, r.exit_code = False, "not-met", None, 1
    r.chosen, r.budget = [], None               # every segment swept, none lowered the error
    assert r.finding_record().text.startswith("Target not met: no segment kept in fp32 lowered the output "
                                              "error (6 builds). The engine as built has output NRMSE 0.5")
    r.trials, r.budget, r.builds = [], 2, 1     # --budget 2: the baseline and the proof's slot only
    assert "the budget of 2 builds left no room to sweep a segment" in r.finding_record().text
    r.chosen, r.budget, r.builds = ["b"], 3, 3  # swept, no build left for the proof
    assert "the budget of 3 builds left none to build and verify the best set found (b)" in r.finding_record().text


def test_error_spread_over_many_layers_names_no_single_layer():
    """An int8 conv net whose every row adds 0.003–0.030 of its own: no "block00 adds the most error
    (1× the next layer's)"; amber, the spread said with its range, repair next."""
    import copy

    r = verify_report()
    proto = r.row("tap_b")
    rows = []
    for i, loc in enumerate([0.012, 0.030, 0.021, 0.003, 0.025, 0.024, 0.028]):
        row = copy.deepcopy(proto)
        row.name, row.order, row.first_divergent = f"block{i:02d}", 10 + i, i == 0
        row.local_nrmse, row.locally_diverged = loc, loc > 0.01
        row.local_share = min(1.0, loc / row.nrmse) if row.nrmse else None
        rows.append(row)
    r.rows, r.local = rows, True
    r.first_divergent, r.worst_local, r.first_locally_divergent = "block00", "block01", "block00"
    f = r.finding_record()
    assert f.status == "warn" and f.rows == [], f.text
    # block00 (0.012) adds error too, but is not within 1.5× of the largest (0.030)
    assert f.text.startswith("5 layers add error of their own within 1.5× of each other (local NRMSE 0.021–0.03)")
    assert "adds the most" not in f.text and "block01" not in f.text and "repair" in f.text
    # one layer well above the rest is still named alone
    r.row("block01").local_nrmse = 0.30
    f = r.finding_record()
    assert f.status == "fail" and f.rows[0] == "block01" and "11× more error than any other layer" in f.text

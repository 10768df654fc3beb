"""The views lead with what the finding cites (issue 21, Deliver 2-4), on the hand-built reports:
the columns that carry it first and the rest hidden, one colour rule (red defect / amber within
precision), the local series judged by the rule's threshold, every row accounted for, no CLI advice."""
from __future__ import annotations

from leapp_lab.views.viewdict import build_view
from test_finding import _verify_local
from viewfixtures import trace_report, verify_report, verify_report_after


def _shown(view):
    return [c["key"] for c in view["table"]["columns"] if not c.get("hidden")]


def test_verify_columns_lead_with_local_error_and_the_rest_is_behind_columns():
    v = build_view(_verify_local())
    shown = _shown(v)
    assert shown[:4] == ["name", "status", "local_nrmse", "local_share"]
    hidden = [c["key"] for c in v["table"]["columns"] if c.get("hidden")]
    assert "local_cosine" in hidden and "mse" in hidden and len(shown) <= 7
    assert v["table"]["open"] == "tap_b"                 # opens on the layer the finding names
    assert "open" not in build_view(verify_report())["table"]
    plain = _shown(build_view(verify_report()))
    assert plain[:4] == ["name", "status", "nrmse", "reason"] and "local_nrmse" not in plain


def test_one_colour_rule_and_the_local_series_has_the_rules_threshold():
    v = build_view(_verify_local())
    tone = {r["id"]: r.get("tone") for r in v["table"]["rows"]}
    # tap_b adds the error (red); output_0 diverges but only inherits it (amber); tap_a passes
    assert tone == {"tap_a": None, "tap_b": "fail", "tap_c": None, "output_0": "warn"}
    local = next(s for s in v["profile"]["series"] if s["key"] == "local_nrmse")
    assert local["threshold"] == 0.01 and local["worse"] == "above"
    assert local["status"] == ["pass", "fail", "pass"]                 # judged on the local error
    assert v["profile"]["tone"] == [None, "fail", "warn"]
    assert {r["id"]: r["local_status"] for r in v["table"]["rows"]}["tap_b"] == "fail"
    # without local error every divergent row is a defect the finding names
    assert {r["id"]: r.get("tone") for r in build_view(verify_report())["table"]["rows"]}["output_0"] == "fail"


def test_every_row_is_a_row_and_the_notes_give_no_cli_advice():
    r = verify_report()
    r.warnings = ["[model.ort-int8]: 1 outputs are missing in the reference (--verbose lists them)"]
    r.rows[2].paired = False                        # tap_c: no reference, hidden from the text table
    assert "tap_c" not in [x.name for x in r.table()]
    v = build_view(r)
    row = next(x for x in v["table"]["rows"] if x["id"] == "tap_c")
    assert row["tap_status"] == "no-reference" and row["cells"]["status"] == "no-reference"
    assert "--verbose" not in " ".join(v["notes"]) and "status no-reference" in v["notes"][0]


def test_compare_opens_compact_per_run():
    v = build_view(verify_report().diff(verify_report_after()))
    assert _shown(v) == ["order", "name", "A.status", "A.nrmse", "B.status", "B.nrmse", "B.flip", "B.nrmse.ratio"]
    assert any(c["key"] == "B.cosine" and c.get("hidden") for c in v["table"]["columns"])


def test_trace_leads_with_hazards_and_advice():
    v = build_view(trace_report())
    assert _shown(v)[:6] == ["node", "port", "sample", "status", "hazards", "advice"]
    rows = {r["id"]: r for r in v["table"]["rows"]}
    assert "annotate.input_tensors()" in rows["scale/y/1"]["cells"]["advice"]
    assert rows["head/out/1"]["cells"]["advice"] is None
    assert v["table"]["reasons"]["frozen-constant"].startswith("frozen-constant: ")
    assert "fix:" in v["table"]["reasons"]["frozen-constant"]


def test_badges_and_rows_say_the_same_as_the_finding():
    v = build_view(_verify_local())
    badge = {b["label"]: b for b in v["badges"]}
    assert badge["largest local error"]["status"] == "fail" and badge["first divergent"]["status"] == "fail"
    loc = _verify_local()
    loc.first_divergent = "output_0"                  # a divergent row that only inherits: amber
    assert {b["label"]: b for b in build_view(loc)["badges"]}["first divergent"]["status"] == "warn"
    # the trace's hazards badge opens the Hazards tab
    hz = next(b for b in build_view(trace_report())["badges"] if b["label"] == "hazards")
    assert hz["tab"] == "hazards"
    # a diff's row is coloured by run B: tap_b flips fail -> pass and is green
    rows = {r["id"]: r for r in build_view(verify_report().diff(verify_report_after()))["table"]["rows"]}
    assert rows["tap_b"]["status"] == "pass" and rows["tap_b"]["flip"] == "to-pass"
    assert rows["tap_a"]["status"] == "fail"

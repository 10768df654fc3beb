"""CompareReport: diffs of verify runs and several engines in one table, on hand-built reports.

Every expected number is worked out here from the two reports' own stored rows (b − a, b / a), never
read back from the compare."""
import dataclasses
import json
import math

import pytest

import leapp_lab
from leapp_lab.model import columns as columns_mod
from leapp_lab.model.compare import CompareReport
from leapp_lab.model.compare_build import compare_reports
from leapp_lab.model.errors import UnusableInput
from leapp_lab.model.tap import TapEntry
from leapp_lab.views.html import to_html
from leapp_lab.views.numfmt import fmt
from leapp_lab.views.static_html import render_static
from leapp_lab.views.viewdict import build_view
from viewfixtures import EVIL, verify_report, verify_report_after

IDENTITY = {f.name for f in dataclasses.fields(TapEntry)}


def _pair():
    return verify_report(), verify_report_after()


def test_diff_changes_are_b_minus_a_of_the_stored_records():
    a, b = _pair()
    c = a.diff(b)
    assert c.mode == "diff" and [s.key for s in c.sides] == ["A", "B"]
    numeric = [col for col in columns_mod.row_columns()
               if col.key not in IDENTITY and col.fmt in ("num", "int", "cos", "x")]
    assert {"mape", "nrmse", "mse", "max_abs", "cosine", "min_atol", "growth", "n"} <= {x.key for x in numeric}
    checked = 0
    for name in ("tap_a", "tap_b", "output_0"):              # rows both runs have
        ra, rb = a.row(name), b.row(name)
        ch = c.row(name).changes["B"]
        assert set(ch) == {x.key for x in numeric}
        for col in numeric:
            va, vb = getattr(ra, col.key), getattr(rb, col.key)
            got = ch[col.key]
            assert (got.a, got.b) == (va, vb)
            if va is None or vb is None:
                assert got.delta is None and got.ratio is None
                continue
            assert got.delta == pytest.approx(vb - va, rel=1e-15, abs=0)
            if col.fmt in ("num", "x") and va > 0:
                assert got.ratio == pytest.approx(vb / va, rel=1e-15)
            else:
                assert got.ratio is None                     # cosine, counts, or a zero baseline
            checked += 1
    assert checked > 20
    # the known shape of the fixture: tap_b's error is gone in B (ratio 0), tap_a had none in A (no ratio)
    assert c.row("tap_b").changes["B"]["nrmse"].ratio == 0.0
    assert a.row("tap_a").nrmse == 0.0 and c.row("tap_a").changes["B"]["nrmse"].ratio is None
    assert c.row("tap_a").changes["B"]["nrmse"].delta == b.row("tap_a").nrmse


def test_flips_missing_rows_first_divergent_and_model_order():
    a, b = _pair()
    c = a.diff(b)
    assert [r.name for r in c.rows] == ["tap_a", "tap_b", "tap_d", "tap_c", "output_0"]   # orders 2 5 6 7 9
    assert c.to_fail == ["tap_a"] and c.to_pass == ["tap_b"]
    assert c.row("tap_a").flip == "to-fail" and c.row("tap_b").flip == "to-pass"
    assert c.row("output_0").flips == {} and c.row("output_0").verdicts == {"A": "fail", "B": "fail"}
    assert c.row("tap_c").verdicts == {"A": "uncompared", "B": "absent"} and c.row("tap_c").missing_in == ["B"]
    assert c.row("tap_d").verdicts == {"A": "absent", "B": "pass"} and c.row("tap_d").missing_in == ["A"]
    assert c.row("tap_d").changes == {}                      # nothing to subtract from
    assert c.only_in("A") == ["tap_c"] and c.only_in("B") == ["tap_d"]
    assert c.row("tap_b").first_divergent_in == ["A"] and c.row("tap_a").first_divergent_in == ["B"]
    assert [s.first_divergent for s in c.sides] == [a.first_divergent, b.first_divergent]
    assert any("only in A" in w and "tap_c" in w for w in c.warnings)
    assert any("only in B" in w and "tap_d" in w for w in c.warnings)
    assert c.exit_code == 0 and bool(c)
    # the other way round the flips swap
    back = b.diff(a)
    assert back.to_fail == ["tap_b"] and back.to_pass == ["tap_a"]


def test_verdict_is_the_views_row_status():
    from leapp_lab.views.verify_view import row_status
    a = verify_report()
    assert [r.verdict for r in a.rows] == [row_status(r) for r in a.rows] == ["pass", "fail", "uncompared", "fail"]
    a.rows[0].self_compare = True
    assert a.rows[0].verdict == "uncompared"


def test_gates():
    a, b = _pair()
    assert a.diff(b, fail_on_flip=True).exit_code == 1
    same = a.diff(verify_report())
    assert same.flipped() == [] and same.exit_code == 0
    assert a.diff(verify_report(), fail_on_flip=True).exit_code == 0
    for r in same.rows:                                      # a run against itself: no change at all
        for k, ch in r.changes["B"].items():
            assert ch.delta in (0, None), (r.name, k)
            assert ch.ratio in (1.0, None)
    # engines: the gate fails when a build's own gate failed, flips or not
    b.exit_code = 1
    eng = compare_reports([a, b], mode="engines")
    assert eng.exit_code == 1 and not eng
    assert a.diff(b).exit_code == 0                          # a diff judges flips, not old gates


def test_engines_labels_and_three_sides():
    a, b = _pair()
    c3 = compare_reports([a, b, verify_report()], mode="engines")
    assert [s.key for s in c3.sides] == ["A", "B", "C"]
    # engines repeat (ort-int8 twice): the build names, then a suffix where those repeat too
    assert [s.label for s in c3.sides] == ["model.ort-int8", "model.ort-fp16", "model.ort-int8#2"]
    assert set(c3.row("tap_a").changes) == {"B", "C"}
    assert c3.row("tap_a").flips == {"B": "to-fail"}
    two = compare_reports([a, b], mode="engines")
    assert [s.label for s in two.sides] == ["ort-int8", "ort-fp16"]


def test_bad_inputs_are_named():
    a, b = _pair()
    with pytest.raises(ValueError, match="two or more"):
        compare_reports([a])
    with pytest.raises(TypeError, match="side B"):
        compare_reports([a, object()])
    with pytest.raises(ValueError, match="labels"):
        compare_reports([a, b], labels=["x", "x"])
    with pytest.raises(ValueError, match="mode"):
        compare_reports([a, b], mode="sideways")


def test_column_groups_come_from_the_registry(monkeypatch):
    a, b = _pair()
    v = build_view(a.diff(b))
    cols = v["table"]["columns"]
    # the runs computed no local / expected error: those columns are not shown (table_columns(a))
    per_side = [c.key for c in columns_mod.table_columns(a) if c.key not in IDENTITY]
    for side in ("A", "B"):
        assert [c["key"] for c in cols if c.get("group") == side] == [f"{side}.{k}" for k in per_side]
    ident = [c["key"] for c in cols if not c.get("group")]
    assert ident == [c.key for c in columns_mod.table_columns(a) if c.key in IDENTITY]
    change = [c for c in cols if c.get("group") == "B-A"]
    assert change[0]["key"] == "B.flip" and change[0]["type"] == "flip"
    assert [c["key"] for c in change[1:]] == [
        f"B.{k.key}.ratio" if k.fmt in ("num", "x") else f"B.{k.key}.delta"
        for k in columns_mod.table_columns(a) if k.key not in IDENTITY and k.fmt in ("num", "int", "cos", "x")]
    assert [g["key"] for g in v["table"]["groups"]] == ["A", "B", "B-A"]
    # a new table column in the registry is in every side group and the change group, with no other edit
    extra = tuple(dataclasses.replace(c, table=True) if c.key == "mean_abs" else c for c in columns_mod.COLUMNS)
    monkeypatch.setattr(columns_mod, "COLUMNS", extra)
    v2 = build_view(a.diff(b))
    keys = [c["key"] for c in v2["table"]["columns"]]
    assert {"A.mean_abs", "B.mean_abs", "B.mean_abs.ratio"} <= set(keys)
    row = next(r for r in v2["table"]["rows"] if r["id"] == "output_0")
    assert row["cells"]["B.mean_abs.ratio"] == pytest.approx(b.row("output_0").mean_abs / a.row("output_0").mean_abs)


def test_view_rows_cells_hooks_and_panel():
    a, b = _pair()
    c = a.diff(b)
    v = build_view(c)
    t = v["table"]
    assert v["kind"] == "compare" and t["filter_key"] == "flip" and t["filter_id"] == "flipped"
    rows = {r["id"]: r for r in t["rows"]}
    assert [r["id"] for r in t["rows"]] == [r.name for r in c.rows]
    assert t["first_divergent"] == "tap_a"                          # opens on the first flip to fail
    ra = rows["tap_a"]
    assert ra["attrs"] == {"data-leapp-flip": "to-fail", "data-leapp-first-divergent-in": "B"}
    assert ra["status"] == "fail" and ra["tap_status"] == "compared" and ra["flip"] == "to-fail"
    assert rows["tap_c"]["attrs"] == {"data-leapp-missing-in": "B"} and rows["tap_c"]["tap_status"] == "mixed"
    assert rows["output_0"]["attrs"] == {} and rows["output_0"]["flip"] is None
    # cells pass the records through
    assert ra["cells"]["A.status"] == "pass" and ra["cells"]["B.status"] == "fail"
    assert ra["cells"]["B.nrmse"] == b.row("tap_a").nrmse and ra["cells"]["A.mape"] == a.row("tap_a").mape
    assert rows["output_0"]["cells"]["B.nrmse.ratio"] == b.row("output_0").nrmse / a.row("output_0").nrmse
    assert rows["output_0"]["cells"]["B.cosine.delta"] == b.row("output_0").cosine - a.row("output_0").cosine
    assert rows["tap_d"]["cells"]["A.nrmse"] is None and rows["tap_d"]["cells"]["A.status"] == "absent"
    # panel: every run's histogram on one bin range, metrics side by side, changes for the aggregate
    out = rows["output_0"]
    assert [s["key"] for s in out["samples"]] == ["all", "0", "1"]
    allv = out["samples"][0]
    ha, hb = allv["sides"]["A"]["hist"], allv["sides"]["B"]["hist"]
    assert (ha["first_bin"], len(ha["counts"])) == (hb["first_bin"], len(hb["counts"]))   # one bin range
    for side, rep in (("A", a), ("B", b)):
        h = allv["sides"][side]["hist"]
        orig = rep.row("output_0").hist
        assert h["zero"] == orig.zero and sum(h["counts"]) == sum(orig.counts)
        lo = orig.first_bin - (orig.first_bin if not h["counts"] else _first_bin(h))
        assert h["counts"][lo:lo + len(orig.counts)] == orig.counts
    assert allv["metrics"]["head"] == ["metric", "A", "B", "B − A", "B / A"]
    nrmse = next(r for r in allv["metrics"]["rows"] if r["label"] == "NRMSE")
    assert [x[0] for x in nrmse["cells"]] == [a.row("output_0").nrmse, b.row("output_0").nrmse,
                                              b.row("output_0").nrmse - a.row("output_0").nrmse,
                                              b.row("output_0").nrmse / a.row("output_0").nrmse]
    s1 = out["samples"][2]
    assert s1["metrics"]["head"] == ["metric", "A", "B"]
    mape1 = next(r for r in s1["metrics"]["rows"] if r["label"] == "MAPE %")
    assert [x[0] for x in mape1["cells"]] == [a.row("output_0").samples[1].mape, b.row("output_0").samples[1].mape]
    absent = rows["tap_d"]["samples"][0]["sides"]["A"]
    assert absent["present"] is False and absent["hist"] is None and "tap_d" in absent["note"]
    json.dumps(v, allow_nan=False)


def _first_bin(h):
    """global bin of counts[0] (the front-end derives the edges from it)."""
    return h["first_bin"]


def test_static_html_has_group_header_and_hooks_and_escapes():
    a, b = verify_report(evil=True), verify_report_after()
    c = a.diff(b)
    html = render_static(build_view(c))
    assert '<tr class="leapp-grouprow">' in html and 'data-leapp-group="B-A"' in html
    assert 'data-leapp-row="tap_a" data-leapp-status="fail"' in html and 'data-leapp-flip="to-fail"' in html
    assert 'data-leapp-side="B" data-leapp-verdict="fail"' in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    page = to_html(c)
    assert EVIL not in page and page.count("<script") == 3      # plotly, the view JSON, the renderer


def test_text_view():
    a, b = _pair()
    cmp = a.diff(b)
    text = str(cmp)
    assert text.startswith(cmp.finding + "\n\n")        # the finding leads, then the table
    lines = text.split("\n\n", 1)[1].splitlines()
    assert "[A]" in text and "[B]" in text and "[change B vs A]" in text
    tap_a = next(x for x in lines if " tap_a " in x)
    tap_b = next(x for x in lines if " tap_b " in x)
    assert tap_a.startswith("!!") and "pass → fail" in tap_a and "DIVERGED >>" in tap_a
    assert tap_b.startswith("++") and "fail → pass" in tap_b
    assert "absent" in next(x for x in lines if " tap_d " in x)
    assert "B vs A: 1 flipped to fail (tap_a), 1 flipped to pass (tap_b)" in text
    assert fmt(b.row("output_0").nrmse / a.row("output_0").nrmse, "x") in next(x for x in lines if " output_0 " in x)
    assert "FAIL: rows flipped to fail (--fail-on-flip): tap_a" in str(a.diff(b, fail_on_flip=True))


def test_dataframe_and_json_rows():
    a, b = _pair()
    c = a.diff(b)
    df = c.to_dataframe()
    assert list(df.columns) == c.record_keys() and list(df["name"]) == [r.name for r in c.rows]
    out = df.set_index("name").loc["output_0"]
    assert out["B.nrmse.ratio"] == pytest.approx(b.row("output_0").nrmse / a.row("output_0").nrmse)
    assert out["B.mape.delta"] == pytest.approx(b.row("output_0").mape - a.row("output_0").mape)
    assert df.set_index("name").loc["tap_a", "B.flip"] == "to-fail"
    doc = c.json_rows()
    text = json.dumps(doc, allow_nan=False)
    assert doc["kind"] == "compare-rows" and doc["to_fail"] == ["tap_a"] and doc["baseline"] == "A"
    assert json.loads(text)["rows"][0]["A.verdict"] == "pass"


def test_save_load_round_trip_and_errors(tmp_path):
    a, b = _pair()
    c = a.diff(b)
    c.save(tmp_path / "cmp")
    assert (tmp_path / "cmp" / "sides" / "A" / "histograms.npz").is_file()
    assert (tmp_path / "cmp" / "compare.csv").read_text().splitlines()[0].split(",") == c.record_keys()
    back = leapp_lab.load(tmp_path / "cmp")
    assert isinstance(back, CompareReport) and back.rows == c.rows and back.sides == c.sides
    assert back.side("B").report.row("output_0").samples[1].hist == b.row("output_0").samples[1].hist
    assert to_html(back) == to_html(c)                            # same report -> same page
    # the --json summary is refused with a pointer to the run folder
    (tmp_path / "rows.json").write_text(json.dumps(c.json_rows()))
    with pytest.raises(ValueError, match="compare run folder"):
        leapp_lab.load(tmp_path / "rows.json")
    import shutil
    doc = json.loads((tmp_path / "cmp" / "report.json").read_text())
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "report.json").write_text(json.dumps({**doc, "sides": []}))
    with pytest.raises(UnusableInput, match="a compare of no runs"):
        leapp_lab.load(tmp_path / "empty")
    shutil.rmtree(tmp_path / "cmp" / "sides" / "B")
    with pytest.raises(UnusableInput, match="side B"):      # bad input: exit 2, not an internal error
        leapp_lab.load(tmp_path / "cmp")


def test_widget_opens_on_the_first_flip():
    from leapp_lab.views.widget import LeappView
    a, b = _pair()
    w = LeappView(a.diff(b))
    assert w.selected == "tap_a" and w.view["kind"] == "compare"
    w.select("tap_b", 1)
    assert (w.selected, w.sample) == ("tap_b", "1")
    assert not math.isnan(w.row("output_0")["cells"]["B.nrmse"])


def test_one_reference_named_relatively_and_absolutely_is_not_reported_as_two(tmp_path, monkeypatch):
    """verify keeps the path as given (build/model.reference.npz), repair records it absolute: a diff
    of the two runs compares one reference, and says so only when the files differ."""
    monkeypatch.chdir(tmp_path)
    a, b = _pair()
    a.reference = "build/model.reference.npz"
    b.reference = str(tmp_path / "build" / "model.reference.npz")
    assert not [w for w in a.diff(b).warnings if "references" in w]
    b.reference = str(tmp_path / "other" / "model.reference.npz")
    warned = [w for w in a.diff(b).warnings if "different references" in w]
    assert len(warned) == 1 and "build/model.reference.npz" in warned[0] and "other" in warned[0]

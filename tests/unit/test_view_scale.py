"""The verify views at real scale (a real 2,000-row verify run, tests/scale_report.py): every verdict
says why, non-finite rows are first-class, percentiles never exceed the max, the view dict is
compact without losing data, plotly figures and Model Explorer node data."""
from __future__ import annotations

import json

import numpy as np
import pytest

from leapp_lab.numerics.metrics import diff_sums
from leapp_lab.model.columns import BY_KEY, WORST_RANKS, table_columns
from leapp_lab.model.metrics import Metrics
from leapp_lab.model.verify import DivergenceRule, VerifyReport, VerifyRow
from leapp_lab.views.html import page
from leapp_lab.views.viewdict import build_view
from tests.scale_report import ALL_NONFINITE, OVERFLOW_ROW, SPIKE_BLOCKS, scale_verify

MAX_HTML = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    return scale_verify(tmp_path_factory.mktemp("scale"))


@pytest.fixture(scope="module")
def big_view(big):
    return build_view(big)


def test_every_row_says_why(big):
    rows = {r.name: r for r in big.rows}
    rule = big.rule
    for r in big.rows:
        if r.status != "compared":
            continue
        fired = rule.judge(r)
        assert r.reason == (", ".join(fired) or None), r.name
        assert r.diverged == bool(fired)
    first = big.row(big.first_divergent)
    assert first.scope == f"blocks.{SPIKE_BLOCKS[0]}.attn" and first.producer_op == "Softmax"
    assert first.reason == "nrmse" and first.nrmse > 0.01
    # the overflowing row: tiny nrmse, cosine ~1, and still diverged, because of its inf values
    ov = big.rows[OVERFLOW_ROW]
    assert ov.nonfinite_engine == 6 and ov.nrmse < 1e-3 and ov.cosine > 0.999999
    assert ov.reason == "non-finite" and ov.diverged
    # the rows after it: nothing finite at all
    gone = big.rows[OVERFLOW_ROW + 1: OVERFLOW_ROW + 1 + ALL_NONFINITE]
    assert {r.reason for r in gone} == {"non-finite, nothing-compared"} and all(r.nrmse is None for r in gone)
    # rows the rule does not judge say why too
    uncompared = {r.status: r.reason for r in big.rows if r.status != "compared"}
    assert uncompared == {"no-reference": "missing-reference", "shape-mismatch": "shape"}
    assert rows["output_0"].reason is None and not rows["output_0"].diverged


def test_reasons_of_every_status_and_of_old_reports():
    rule = DivergenceRule()
    cases = {"no-reference": "missing-reference", "not-in-engine": "missing-engine",
             "shape-mismatch": "shape", "dtype-unsupported": "dtype"}
    for status, reason in cases.items():
        assert rule.reasons(VerifyRow(name="x", status=status)) == [reason]
        assert reason in rule.reason_words()
    selfc = VerifyRow(name="x", status="compared", self_compare=True, nrmse=1.0)
    assert rule.reasons(selfc) == ["self-compare"]
    # a report saved before rows carried a reason gets it back from its recorded rule on load
    r = VerifyRow(name="x", status="compared", nrmse=0.5, cosine=0.5, mape=1.0, n=4, reason="nrmse, cosine")
    d = VerifyReport(rows=[r]).to_dict()
    del d["rows"][0]["reason"]
    assert VerifyReport.from_dict(d).rows[0].reason == "nrmse, cosine"


def test_worst_ranks_non_finite_rows_and_outputs(big):
    """worst: the most extra non-finite engine values first (the overflowed rows), then nrmse; outputs
    and taps alike; ties go to the first in model order."""
    worst = big.row(big.worst_tap)
    assert worst.worst and big.rows.index(worst) == OVERFLOW_ROW + 1
    assert "non-finite" in WORST_RANKS and "nrmse" in BY_KEY["worst"].description
    # without non-finite rows: the largest nrmse, an output included
    e = np.linspace(1, 2, 64)
    tap = VerifyRow(name="t", kind="op", status="compared").fill(diff_sums(e * 1.01, e))
    out = VerifyRow(name="o", kind="output", status="compared").fill(diff_sums(e * 1.1, e))
    from leapp_lab.compare.scoring import apply_rule
    rep = VerifyReport(rows=[tap, out])
    apply_rule(rep)
    assert rep.worst_tap == "o" and out.worst and not tap.worst


def test_percentiles_are_clamped_to_the_exact_max():
    # two diffs in one log bin [1, 1.19): the bin's interpolation reaches past the max
    e, r = np.array([2.0, 2.01]), np.array([1.0, 1.0])
    m = Metrics().fill(diff_sums(e, r))
    assert m.hist.percentile(99.9) > m.max_abs          # what the bins alone would say
    assert m.p999 == m.max_abs == pytest.approx(1.01)
    assert m.p50 <= m.max_abs
    exact = np.percentile(np.abs(e - r), 50)
    assert abs(m.p50 - exact) <= 0.19 * exact            # within one bin of the exact value
    for k in ("p50", "p90", "p99", "p999"):
        assert "approximate" in BY_KEY[k].description and "≈" in BY_KEY[k].label


def test_table_has_reason_nonfinite_and_scope_everywhere(big, tmp_path):
    keys = [c.key for c in table_columns()]
    assert {"reason", "nonfinite", "scope"} <= set(keys)
    df = big.to_dataframe()
    ov = big.rows[OVERFLOW_ROW]
    line = df[df["name"] == ov.name].iloc[0]
    assert line["reason"] == "non-finite" and line["nonfinite"] == ov.nonfinite_engine + ov.nonfinite_reference
    assert line["scope"] == ov.scope
    doc = big.json_rows()
    assert next(r for r in doc["rows"] if r["name"] == ov.name)["reason"] == "non-finite"
    csv = (big.path / "metrics.csv").read_text().splitlines()
    header = csv[0].split(",")
    assert "reason" in header and "nonfinite" in header
    text = str(big)
    assert "non-finite" in text and f"worst row ({WORST_RANKS}): {big.worst_tap}" in text


def test_view_dict_is_compact_and_keeps_every_number(big, big_view):
    v = big_view
    rows = v["table"]["rows"]
    assert len(rows) == len(big.table()) >= 1999
    text = json.dumps(v)
    # labels once per table, never per row or sample; no histogram edges; inputs once per sample
    # (MAPE % is named by the table, the panel and the profile: 3 times in all, plus the accuracy
    # graph's colour choices when the report has a graph)
    in_graph = sum(m["label"] == "MAPE %" for m in (v.get("engine_graph") or {}).get("metrics", []))
    assert text.count('"MAPE %"') == 3 + in_graph and '"edges"' not in text and text.count('"range"') == big.samples
    html = page(v)
    assert len(html.encode()) <= MAX_HTML, len(html.encode())
    keys = [c["key"] for c in v["table"]["panel_columns"]]
    for i in (0, OVERFLOW_ROW, OVERFLOW_ROW + 5, len(rows) - 1):
        vr, r = rows[i], big.table()[i]
        assert vr["id"] == r.name and vr["reason"] == r.reason and vr["sub"] == f"{r.producer_op} · {r.scope}"
        for s in vr["samples"]:
            src = r if s["key"] == "all" else r.samples[int(s["key"])]
            assert dict(zip(keys, s["m"])) == {k: getattr(src, k) for k in keys}
            assert s["hist"]["counts"] == src.hist.counts and s["hist"]["zero"] == src.hist.zero
            assert s["hist"]["first_bin"] == src.hist.first_bin and s["hist"]["nonfinite"] == src.nonfinite_pairs
    assert rows[OVERFLOW_ROW + 5]["samples"][0]["hist"]["nonfinite"] == 3 * 48


def test_profile_keeps_non_finite_rows_and_the_rule(big, big_view):
    p = big_view["profile"]
    assert p["default"] == "nrmse"
    nrmse = next(s for s in p["series"] if s["key"] == "nrmse")
    assert nrmse["threshold"] == big.rule.div_nrmse / 100
    assert next(s for s in p["series"] if s["key"] == "cosine")["threshold"] == big.rule.div_cosine
    assert len(p["x"]) == len(big.profile())               # every judged row, none dropped
    gone = [i for i, y in enumerate(nrmse["y"]) if y is None]
    assert len(gone) == ALL_NONFINITE and all(p["nonfinite"][i] == 3 * 48 for i in gone)
    assert p["x"][p["first_divergent_index"]] == big.first_divergent
    assert p["scope"][p["first_divergent_index"]] == f"blocks.{SPIKE_BLOCKS[0]}.attn"
    badges = {b["label"]: b for b in big_view["badges"]}
    assert badges["first divergent"]["row"] == big.first_divergent
    assert badges["worst (non-finite, then nrmse)"]["row"] == big.worst_tap
    assert "nrmse growth" in next(k for k in badges if k.startswith("largest jump"))


def test_plotly_figures_from_the_view(big):
    plotly = pytest.importorskip("plotly", reason="plotly is in the dev extra (pip install -e '.[dev]')")
    from plotly.offline import get_plotlyjs_version
    from leapp_lab.views import assets
    # the plotly.js inside plotly Python is the one vendored for the views
    assert get_plotlyjs_version() == assets.PLOTLY_VERSION, plotly.__version__
    r = big.rows[OVERFLOW_ROW]
    fig = big.figure(r.name, sample=1)
    (bars,) = fig.data
    s = r.samples[1]
    assert list(bars.y) == [s.hist.zero, *s.hist.counts, s.nonfinite_pairs]
    assert r.name in fig.layout.title.text and "sample 1" in fig.layout.title.text
    with pytest.raises(KeyError, match="no sample '9'"):
        big.figure(r.name, sample=9)
    g = big.growth_figure()
    main, missing = g.data
    assert list(main.customdata) == [x.name for x in big.profile()]
    assert len(missing.x) == ALL_NONFINITE and min(missing.y) > max(y for y in main.y if y is not None)
    assert any(sh.y0 == sh.y1 == 0.01 for sh in g.layout.shapes)          # the rule's threshold
    assert big.growth_figure("mape").layout.yaxis.type == "log"
    with pytest.raises(KeyError, match="no profile metric"):
        big.growth_figure("nope")


def test_model_explorer_node_data(big, tmp_path):
    paths = big.to_model_explorer(tmp_path / "me", model_name="m")
    assert [p.name for p in paths] == ["m_nrmse.json", "m_max_abs.json", "m_mape.json", "m_nonfinite.json",
                                      "m_diverged.json"]
    data = {p.stem.split("_", 1)[1]: json.loads(p.read_text()) for p in paths}
    nrmse = data["nrmse"]["main_graph"]["results"]
    ov = big.rows[OVERFLOW_ROW]
    assert nrmse[ov.name]["value"] == ov.nrmse and nrmse[ov.producer_node]["value"] == ov.nrmse
    gone = big.rows[OVERFLOW_ROW + 1]
    assert gone.name not in nrmse                                       # no value: not made up
    assert data["nonfinite"]["main_graph"]["results"][gone.name]["value"] == gone.nonfinite
    assert data["diverged"]["main_graph"]["results"][gone.name]["value"] == 1
    # Model Explorer's own schema (its dataclasses, strictly) accepts every file
    ndb = pytest.importorskip("model_explorer.node_data_builder",
                              reason="model-explorer-onnx is in the dev extra (pip install -e '.[dev]')")
    import dacite
    for doc in data.values():
        (gid, graph), = doc.items()
        g = dacite.from_dict(ndb.GraphNodeData, graph, config=dacite.Config(strict=True))
        assert gid == "main_graph" and g.results and g.thresholds
        assert ndb.ModelNodeData(graphsData={gid: g}).to_json_string()

"""The repair report model and its views, on a hand-built report (no builds): the error rule for
model outputs, the ranking order, round trips, escaping."""
import json

import numpy as np
import pytest

from leapp_lab.numerics.metrics import diff_sums
from leapp_lab.model.base import load
from leapp_lab.model.repair import Proof, RepairReport, Segment, Trial, output_error, worst
from leapp_lab.model.tap import TapEntry
from leapp_lab.model.verify import VerifyRow
from leapp_lab.views.html import to_html
from leapp_lab.views.static_html import render_static
from leapp_lab.views.viewdict import build_view
from viewfixtures import EVIL


def _row(e, r, name="y"):
    row = VerifyRow.of(TapEntry(name=name, kind="output"))
    return row.fill(diff_sums(np.asarray(e, np.float32), np.asarray(r, np.float32)))


def test_output_error_is_nrmse_or_says_why_not():
    r = np.array([1.0, -2.0, 3.0])
    e = r + np.array([0.1, 0.0, -0.1])
    err, why = output_error(_row(e, r))
    assert why is None and err == pytest.approx(np.sqrt(0.02 / 14.0))
    assert output_error(_row([np.inf, 1, 1], [1, 1, 1]))[1] == "y: 1 non-finite engine values"
    assert output_error(_row([0, 0], [0, 0])) == (0.0, None)           # all-zero reference, matched
    err, why = output_error(_row([0, 1], [0, 0]))
    assert err is None and "all zero" in why
    row = _row(r, r)
    row.status = "shape-mismatch"
    assert output_error(row) == (None, "y: shape-mismatch")
    assert worst({"a": 0.1, "b": 0.3}) == 0.3 and worst({"a": 0.1, "b": None}) is None and worst({}) is None


def report(evil=False):
    n = (lambda s: s + EVIL) if evil else (lambda s: s)
    segs = [Segment(name=n("a"), order=1, taps=[n("a")], nodes=["n0", "n1"], keep=["n0", "n1", "n2"],
                    ops={"Conv": 1, "Relu": 1}),
            Segment(name=n("b"), order=3, taps=[n("b")], nodes=["n2", "n3"], keep=["n2", "n3", "n4"]),
            Segment(name=n("out"), kind="output", order=4, taps=[n("out")], nodes=["n4"], keep=["n4"])]
    base = Proof(round=0, error=0.5, outputs={"out": 0.5}, build="/b/baseline", verify_run="/b/bv", met=False)
    trials = [Trial(round=1, segments=[n("b")], added=n("b"), error=0.02, outputs={"out": 0.02}, gain=0.48,
                    rank=1, chosen=True),
              Trial(round=1, segments=[n("a")], added=n("a"), error=0.45, outputs={"out": 0.45}, gain=0.05, rank=2),
              Trial(round=1, segments=[n("out")], added=n("out"), error=None, reason="build failed: " + EVIL, rank=3),
              Trial(round=2, segments=[n("b"), n("a")], added=n("a"), error=0.008, outputs={"out": 0.008},
                    gain=0.012, chosen=True)]
    final = Proof(round=2, segments=[n("b"), n("a")], error=0.008, outputs={"out": 0.008}, build="/b/final",
                  verify_run="/b/fv", keep_fp32=["n0", "n1", "n2", "n3", "n4"], met=True, swept_error=0.008)
    return RepairReport(onnx="/m/model.onnx", engine="ort-int8", target_nrmse=0.01, segments=segs, baseline=base,
                        trials=trials, chosen=[n("b"), n("a")], final=final, status="met", met=True, exit_code=0,
                        message="2 of 3 segments", builds=6, seconds=1.5, workers=2, executor="process")


def test_ranking_records_and_dataframe_follow_round_one():
    r = report()
    assert [t.added for t in r.ranking()] == ["b", "a", "out"]
    assert [t.added for t in r.steps()] == ["b", "a"] and r.rounds() == 2
    df = r.to_dataframe()
    assert list(df["segment"]) == ["b", "a", "out"] and list(df["chosen"]) == [True, True, False]
    assert df["note"].iloc[2].startswith("build failed")
    assert r.before == 0.5 and r.after == 0.008
    assert r.compile_command() == ("leapp-lab compile /m/model.onnx --engine ort-int8 --keep-fp32 n0 "
                                   "--keep-fp32 n1 --keep-fp32 n2 --keep-fp32 n3 --keep-fp32 n4")


def test_round_trip_through_a_run_folder(tmp_path):
    r = report()
    r.save(tmp_path)
    again = load(tmp_path)
    assert isinstance(again, RepairReport) and again.to_dict() == r.to_dict()
    assert isinstance(again.final, Proof) and again.final.keep_fp32 == r.final.keep_fp32


def test_views_escape_every_name_and_show_each_segment():
    r = report(evil=True)
    v = build_view(r)
    json.dumps(v, allow_nan=False)
    assert [x["status"] for x in v["table"]["rows"]] == ["pass", "pass", "fail"]
    assert v["bars"]["y"] == [0.02, 0.45, None] and v["bars"]["steps"]["y"] == [0.5, 0.02, 0.008, 0.008]
    for html in (render_static(v), to_html(r)):
        assert EVIL not in html and "<script>alert" not in html
    assert to_html(r) == to_html(r)
    text = str(r)
    assert "MET" in text and "round 2: + a" + EVIL in text and "6 builds" in text


def test_text_counts_one_build_and_one_worker_in_the_singular():
    r = report()
    r.builds, r.workers, r.executor, r.trials = 1, 1, "inline", []
    text = str(r)
    assert "cost: 1 build in" in text and "on 1 worker (inline)" in text and "1 builds" not in text
    assert "(1 build)" in str(report()) and "on 2 workers (process)" in str(report())


def test_diff_of_a_repair_run_names_its_two_verify_runs(tmp_path):
    from leapp_lab.compare.diff import diff
    r = report()
    r.save(tmp_path)
    with pytest.raises(ValueError, match=r"a repair report, not a verify run; .*engine as built \(/b/bv\) "
                                         r"and the repaired engine \(/b/fv\): leapp-lab diff /b/bv /b/fv$"):
        diff(tmp_path, tmp_path)


def test_a_segment_without_a_trial_says_why():
    r = report()
    r.trials, r.rank, r.excess = r.trials[:1], "excess", {"b": 3.0, "a": 1.0}     # met after b
    notes = {x["segment"]: x["note"] for x in r.records()}
    assert notes == {"b": None, "a": "not tried: the target was met first", "out": "not tried: no local excess"}
    r = report()
    r.trials, r.budget = r.trials[:2], 4
    assert [x["note"] for x in r.records()][2] == "not swept (budget)"

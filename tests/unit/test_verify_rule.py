"""The first-divergent rule: nrmse by default, MAPE only on request (real npz files, no engine)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from leapp_lab.cli import main as cli_main
from leapp_lab.steps.verify import verify
from leapp_lab.model.jsonio import save_npz
from tests import oracle

N_SAMPLES = 3


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Three rows in this order: ``a_relu``, a ReLU output with many near-zero values and small
    noise (MAPE well above 1 %, nrmse well below); ``b_scaled``, every value 5 % too large (a real
    divergence, invisible to cosine); ``c_exact``."""
    d = tmp_path_factory.mktemp("rule")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((N_SAMPLES, 4000)).astype(np.float32)
    relu_ref = np.maximum(x, 0)
    relu_eng = np.maximum(x + rng.standard_normal(x.shape).astype(np.float32) * 2e-3, 0)
    y = rng.standard_normal((N_SAMPLES, 500)).astype(np.float32)
    ref = {"a_relu": relu_ref, "b_scaled": y, "c_exact": y}
    eng = {"a_relu": relu_eng, "b_scaled": y * np.float32(1.05), "c_exact": y.copy()}
    build = d / "model.ort"
    build.mkdir()
    save_npz(d / "model.reference.npz", ref)
    save_npz(build / "sample_outputs.npz", eng)
    return {"reference": d / "model.reference.npz", "build": build, "ref": ref, "eng": eng}


def test_nrmse_rows_and_samples_equal_independent_numpy(files):
    rep = verify(files["reference"], files["build"], save=False)
    for name in ("a_relu", "b_scaled"):
        row, e, r = rep.row(name), files["eng"][name], files["ref"][name]
        assert row.nrmse == pytest.approx(oracle.nrmse(e, r), rel=1e-10)
        for s in row.samples:
            assert s.nrmse == pytest.approx(oracle.nrmse(e[s.sample], r[s.sample]), rel=1e-10)
    assert rep.row("c_exact").nrmse == 0.0
    df = rep.to_dataframe()
    assert df.set_index("name").loc["b_scaled", "nrmse"] == pytest.approx(0.05, rel=1e-6)
    per = rep.to_dataframe(per_sample=True)
    assert len(per) == 3 * N_SAMPLES and per["nrmse"].notna().all()
    assert rep.json_rows()["rows"][1]["nrmse"] == pytest.approx(0.05, rel=1e-6)


def test_near_zero_reference_is_not_divergent_by_default_but_is_with_div_mape(files):
    rep = verify(files["reference"], files["build"], save=False)
    relu = rep.row("a_relu")
    # the false alarm this rule avoids: MAPE is inflated by the near-zero reference values
    assert relu.mape > 1.0 and relu.nrmse < 0.01 and relu.cosine > 0.999
    assert not relu.diverged
    # a real divergence still is one: every value 5 % too large (cosine is exactly 1 there)
    assert rep.row("b_scaled").diverged and rep.row("b_scaled").cosine > 0.999999
    assert rep.first_divergent == "b_scaled" and not rep.row("c_exact").diverged
    assert "nrmse > 0.01 (1%)" in rep.rule.text and "mape" not in rep.rule.text
    assert (rep.rule.div_nrmse, rep.rule.div_mape) == (1.0, None)

    opt = verify(files["reference"], files["build"], save=False, div_mape=1)
    assert opt.row("a_relu").diverged and opt.first_divergent == "a_relu"
    assert "mape > 1%" in opt.rule.text and "nrmse > 0.01" in opt.rule.text
    # nrmse alone can be switched off: then the 5 % scale error passes (cosine is blind to it)
    off = verify(files["reference"], files["build"], save=False, div_nrmse=None)
    assert off.first_divergent is None and "nrmse" not in off.rule.text


def test_cli_div_options_and_the_text_say_which_rule_applied(files, tmp_path, capsys):
    j = tmp_path / "rows.json"
    assert cli_main(["verify", str(files["reference"]), str(files["build"]), "--no-save",
                     "--json", str(j)]) == 0
    out = capsys.readouterr().out
    assert "first divergent (nrmse > 0.01 (1%) or cosine < 0.999" in out and "): b_scaled" in out
    doc = json.loads(j.read_text())
    assert doc["rule"]["div_mape"] is None and doc["first_divergent"] == "b_scaled"
    assert cli_main(["verify", str(files["reference"]), str(files["build"]), "--no-save",
                     "--div-mape", "1", "--div-nrmse", "10"]) == 0
    out = capsys.readouterr().out
    assert "nrmse > 0.1 (10%) or mape > 1% or cosine" in out and "): a_relu" in out
    assert cli_main(["verify", str(files["reference"]), str(files["build"]), "--no-save",
                     "--div-nrmse", "-1"]) == 2
    assert "--div-nrmse -1" in capsys.readouterr().err


def test_the_rule_judges_rows_itself_and_names_each_criterion():
    """DivergenceRule.judge is the one place that decides: each criterion it describes is the one it
    tests, by key, in the order criteria() lists them."""
    from leapp_lab.model.verify import DivergenceRule, VerifyRow
    rule = DivergenceRule(div_nrmse=1.0, div_mape=50.0, div_cosine=0.999)
    assert [k for k, _, _ in rule.criteria_table()] == ["nrmse", "mape", "cosine", "non-finite",
                                                        "nothing-compared"]
    assert len(rule.criteria()) == 5 and rule.criteria()[0] == "nrmse > 0.01 (1%)"
    ok = VerifyRow(name="ok", n=10, nrmse=0.005, mape=1.0, cosine=0.9999)
    assert rule.judge(ok) == [] and not rule.diverges(ok)
    assert rule.judge(VerifyRow(n=10, nrmse=0.02, mape=60.0, cosine=0.99)) == ["nrmse", "mape", "cosine"]
    assert rule.judge(VerifyRow(n=10, nrmse=0.0, mape=0.0, cosine=1.0, nonfinite_engine=3)) == ["non-finite"]
    assert rule.judge(VerifyRow(n=10)) == ["nothing-compared"]           # nothing finite to compare
    off = DivergenceRule(div_nrmse=None, div_nonfinite=False)
    assert off.judge(VerifyRow(n=10, nrmse=5.0, mape=0.0, cosine=1.0, nonfinite_engine=3)) == []
    assert "nrmse" not in off.describe() and "non-finite" not in off.describe()


def test_every_view_draws_the_limits_the_rule_judges_by():
    """One rule definition: the growth plot's line, its side and the graph's colour scale are the
    limits ``DivergenceRule.thresholds`` gives, the same ones ``judge`` tests (a row just past a
    limit diverges on that criterion, one just inside does not)."""
    import viewfixtures as vf

    from leapp_lab.model.verify import DivergenceRule, VerifyRow
    from leapp_lab.views.engine_graph_view import _metrics
    from leapp_lab.views.verify_view import profile_view

    rule = DivergenceRule(div_nrmse=2.5, div_mape=7.0, div_cosine=0.95)
    limits = rule.thresholds()
    assert limits == {"nrmse": (0.025, "above"), "mape": (7.0, "above"), "cosine": (0.95, "below")}
    for key, (lim, worse) in limits.items():
        past, inside = (lim * 1.01, lim * 0.99) if worse == "above" else (lim * 0.99, lim * 1.01)
        good = {"nrmse": 0.0, "mape": 0.0, "cosine": 1.0}
        assert key in rule.judge(VerifyRow(n=10, **{**good, key: past}))
        assert rule.judge(VerifyRow(n=10, **{**good, key: inside})) == []
    assert DivergenceRule(div_nrmse=None).thresholds() == {"cosine": (0.999, "below")}

    report = vf.verify_report()
    report.rule = rule
    series = {s["key"]: s for s in profile_view(report)["series"]}
    drawn = {k: (s["threshold"], s["worse"]) for k, s in series.items() if s["threshold"] is not None}
    assert drawn == {k: v for k, v in limits.items() if k in series}
    assert {"nrmse", "cosine"} <= set(drawn)
    coloured = {m["key"]: (m["threshold"], m["worse"]) for m in _metrics(report) if m["threshold"] is not None}
    assert coloured == {k: v for k, v in limits.items() if k in coloured} and "nrmse" in coloured

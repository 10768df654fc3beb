"""verify through real onnxruntime builds: metrics against an independent numpy computation from the
two npz files, model order, statuses, warnings, the run folder, JSON, first-divergent rule."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import verify_models as vm
import leapp_lab
from leapp_lab.steps.verify import verify
from leapp_lab.model.verify import VerifyReport
from tests import oracle


def _strict_json(path):
    def bad(c):
        raise AssertionError(f"non-standard JSON constant {c} in {path}")
    return json.loads(Path(path).read_text(), parse_constant=bad)


@pytest.fixture(scope="module")
def fp16(tmp_path_factory):
    _, paths = vm.shared_net(tmp_path_factory)
    build = vm.shared_build(tmp_path_factory, "ort-fp16")
    return paths, build


def test_metrics_equal_independent_numpy_from_the_npz_files(fp16, tmp_path):
    paths, build = fp16
    rep = verify(paths["reference"], build.path, out=tmp_path)
    with np.load(paths["reference"]) as zr, np.load(Path(build.path) / "sample_outputs.npz") as ze:
        ref = {k: zr[k] for k in zr.files}
        eng = {k: ze[k] for k in ze.files}
    compared = [r for r in rep.rows if r.status == "compared"]
    assert len(compared) == 13
    for row in compared:
        exp = oracle.metrics(eng[row.name], ref[row.name])
        for k, v in exp.items():
            assert getattr(row, k) == pytest.approx(v, rel=1e-9, abs=1e-300), (row.name, k)
        assert row.n == ref[row.name].size
        assert len(row.samples) == 3
        for s in row.samples:
            exp = oracle.metrics(eng[row.name][s.sample], ref[row.name][s.sample])
            for k, v in exp.items():
                assert getattr(s, k) == pytest.approx(v, rel=1e-9, abs=1e-300), (row.name, s.sample, k)
            assert s.hist.total == ref[row.name][s.sample].size
        # histogram: explicit zero bin, counts add up, percentiles inside the data range
        d = np.abs(eng[row.name].astype(np.float64) - ref[row.name])
        assert row.hist.zero == int(np.count_nonzero(d == 0))
        assert row.hist.total == d.size
        if row.p50 is not None:
            assert 0.0 <= row.p50 <= row.p99 <= row.max_abs * 1.0001


def test_rows_in_model_order_with_sources(fp16):
    paths, build = fp16
    rep = verify(paths["reference"], build.path, save=False)
    orders = [r.order for r in rep.rows]
    assert orders == sorted(orders)
    names = [r.name for r in rep.rows]
    # output_1 (aux head) is computed before the fc stack; fc4 and output_0 share a node: tap first
    assert names.index("conv5") < names.index("output_1") < names.index("fc0")
    assert names[-2:] == ["fc4", "output_0"]
    assert all(r.source and r.source.startswith("verify_models.py:") for r in rep.rows if r.is_tap)
    assert {r.kind for r in rep.rows} == {"manual", "output"}
    df = rep.to_dataframe()
    assert list(df["name"]) == names and df.loc[0, "status"] == "compared"
    per = rep.to_dataframe(per_sample=True)
    assert len(per) == 13 * 3 and set(per["sample"]) == {0, 1, 2}
    text = str(rep)
    assert all(n in text for n in names) and "first divergent" in text


def test_run_folder_reloads_and_json_is_strict(fp16, tmp_path):
    paths, build = fp16
    js = tmp_path / "rows.json"
    rep = verify(paths["reference"], build.path, out=tmp_path / "runs", json_path=js)
    assert rep.path.parent.name == "runs" and (tmp_path / "runs" / "latest").is_file()
    for f in ("report.json", "metrics.csv", "per_sample.csv"):
        assert (rep.path / f).is_file()
    again = leapp_lab.load(tmp_path / "runs")
    assert isinstance(again, VerifyReport)
    assert [(r.name, r.mape, r.hist.counts) for r in again.rows] == \
           [(r.name, r.mape, r.hist.counts) for r in rep.rows]
    assert again.rows[0].samples[1].hist.total == rep.rows[0].samples[1].hist.total
    doc = _strict_json(js)
    need = {"name", "kind", "order", "status", "mape", "mse", "max_abs", "cosine", "source", "first_divergent"}
    assert need <= set(doc["rows"][0]) and isinstance(doc["warnings"], list)
    assert [r["name"] for r in doc["rows"]] == [r.name for r in rep.rows]
    _strict_json(rep.path / "report.json")
    lines = (rep.path / "per_sample.csv").read_text().splitlines()
    assert len(lines) == 1 + 13 * 3


def test_default_run_folder_is_beside_the_build(fp16):
    paths, build = fp16
    rep = verify(paths["reference"], build.path)
    assert rep.path.parent.parent == Path(build.path).parent / "leapp_lab"


def _variant(paths, tmp_path, edit):
    """A copy of the reference npz with ``edit(dict)`` applied."""
    with np.load(paths["reference"]) as z:
        arrays = {k: z[k] for k in z.files}
    edit(arrays)
    out = tmp_path / "ref.npz"
    np.savez(out, **arrays)
    return out


def test_statuses_warnings_and_verbose(fp16, tmp_path):
    paths, build = fp16

    def edit(a):
        del a["conv2"]                                   # in the engine only
        a["ghost"] = np.zeros((3, 2), np.float32)        # in the reference only
        a["conv3"] = a["conv3"][:, :, :4]                # shape mismatch
        a["fc1"] = a["fc1"].astype(np.complex64)         # dtype numpy can hold, we do not compare

    ref = _variant(paths, tmp_path, edit)
    rep = verify(ref, build.path, save=False)
    st = {r.name: r.status for r in rep.rows}
    assert st["conv2"] == "no-reference" and st["ghost"] == "not-in-engine"
    assert st["conv3"] == "shape-mismatch" and st["fc1"] == "dtype-unsupported"
    assert any("1 output is missing in the reference" in w for w in rep.warnings)
    assert any("1 output is missing in the sample output" in w for w in rep.warnings)
    shown = [r.name for r in rep.table()]
    assert "conv2" not in shown and "ghost" not in shown and "conv3" in shown
    verbose = verify(ref, build.path, save=False, verbose=True)
    assert {"conv2", "ghost"} <= {r.name for r in verbose.table()}
    # the table lists unpaired rows with --verbose only; the finding accounts for them (issue 21)
    assert "ghost" in str(verbose) and "ghost" not in str(rep).split("\n\n", 1)[1].split("warning")[0]
    assert "1 row is not in the engine (status not-in-engine): ghost." in rep.finding
    assert verbose.row("conv3").note.startswith("per-sample shapes differ")
    assert rep.row("conv3").mape is None  # never a made-up number


def test_nonfinite_counted_never_nan_in_json(fp16, tmp_path):
    paths, build = fp16

    def edit(a):
        a["conv1"] = a["conv1"].copy()
        a["conv1"][1].flat[:5] = np.nan
        a["fc2"] = np.full_like(a["fc2"], np.inf)

    ref = _variant(paths, tmp_path, edit)
    js = tmp_path / "r.json"
    rep = verify(ref, build.path, json_path=js, out=tmp_path / "o")
    r1 = rep.row("conv1")
    assert r1.nonfinite_reference == 5 and r1.nonfinite_pairs == 5 and r1.samples[1].nonfinite_reference == 5
    assert r1.n == r1.samples[0].n * 3
    r2 = rep.row("fc2")
    assert r2.mape is None and r2.nonfinite_pairs == r2.n
    doc = _strict_json(js)
    row = next(r for r in doc["rows"] if r["name"] == "fc2")
    assert row["mape"] is None and row["cosine"] is None
    _strict_json(rep.path / "report.json")


def test_self_compared_rows_stay_out_of_the_rule(tmp_path_factory, tmp_path):
    """A tap whose reference came from onnxruntime fp32 compares ort with itself: flagged, and even
    when its numbers are off it is never the first divergent row."""
    _, paths = vm.shared_net(tmp_path_factory)
    build = vm.shared_build(tmp_path_factory, "ort")
    d = tmp_path / "b"
    shutil.copytree(build.path, d)
    bj = json.loads((d / "build.json").read_text())
    for t in bj["manifest"]["taps"]:
        if t["name"] == "conv1":
            t["reference_source"] = "onnxruntime"
    (d / "build.json").write_text(json.dumps(bj))

    def edit(a):
        a["conv1"] = a["conv1"] * 3.0  # off by far: would be the first divergent row otherwise

    ref = _variant(paths, tmp_path, edit)
    rep = verify(ref, d, save=False)
    assert rep.row("conv1").self_compare and not rep.row("conv1").first_divergent
    assert rep.first_divergent is None
    assert "compare ort with itself" in rep.self_compare_note
    assert [p.name for p in rep.profile()].count("conv1") == 0


def test_rule_thresholds_are_options(fp16):
    paths, build = fp16
    loose = verify(paths["reference"], build.path, save=False, div_nrmse=1e9, div_mape=1e9, div_cosine=-1.0)
    assert loose.first_divergent is None
    # each criterion alone, made impossible to meet, marks the first row
    for kw, text in ((dict(div_nrmse=0.0), "nrmse > 0 (0%)"),
                     (dict(div_nrmse=None, div_mape=0.0), "mape > 0%"),
                     (dict(div_nrmse=None, div_cosine=1.1), "cosine < 1.1")):
        strict = verify(paths["reference"], build.path, save=False, **kw)
        assert strict.first_divergent == strict.rows[0].name, kw
        assert text in strict.rule.text
    assert "nrmse" not in strict.rule.text and "mape" not in strict.rule.text


def test_progress_counts_every_row_and_sample(fp16):
    paths, build = fp16
    seen = []
    rep = verify(paths["reference"], build.path, save=False,
                 progress=lambda stage, done, total: seen.append((stage, done, total)))
    compared = [r for r in rep.rows if r.samples]
    total = sum(len(r.samples) for r in compared)
    assert seen[-1] == ("score", total, total)
    assert [d for _, d, _ in seen] == list(range(1, total + 1))


def test_growth_profile_and_worst_are_measured_in_nrmse(fp16):
    paths, build = fp16
    rep = verify(paths["reference"], build.path, save=False)
    judged = [r for r in rep.rows if r.in_rule and r.nrmse is not None]
    assert len(judged) >= 3
    for prev, r in zip(judged, judged[1:]):
        assert r.growth == pytest.approx(r.nrmse / prev.nrmse, rel=1e-12)
    # no row went non-finite here: worst is the largest nrmse over outputs and taps alike
    assert not any(r.nonfinite_engine > r.nonfinite_reference for r in judged)
    assert rep.worst_tap == max(judged, key=lambda r: r.nrmse).name

"""Several engines in one table and diffs of verify runs, on real builds (TappedNet: onnxruntime fp32 and
int8 against torch), through the CLI in a subprocess, as a user runs them."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import leapp_lab
import verify_models as vm
from leapp_lab.model.jsonio import read_json

CLI = [sys.executable, "-m", "leapp_lab.cli"]


def cli(*args):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    _, paths = vm.shared_net(tmp_path_factory)
    return paths, vm.shared_build(tmp_path_factory, "ort"), vm.shared_build(tmp_path_factory, "ort-int8")


def _verdict(row: dict) -> str:
    """pass/fail/uncompared of a row of a verify report.json, from its stored fields (docs/verify.md)."""
    if row["status"] != "compared" or row["self_compare"]:
        return "uncompared"
    return "fail" if row["diverged"] else "pass"


def test_engines_table_through_the_cli(builds, tmp_path):
    paths, ort, int8 = builds
    out = tmp_path / "v"
    p = cli("verify", paths["reference"], ort.path, int8.path, "--out", out, "--json", tmp_path / "c.json",
            "--html", tmp_path / "c.html")
    assert p.returncode == 0, p.stderr
    # three runs under --out: one per build (as `verify` alone saves it) and the compare, which is latest
    runs = sorted(x.name for x in (out / "runs").iterdir())
    assert len(runs) == 3 and sum("compare" in r for r in runs) == 1
    cmp = leapp_lab.load(out)
    assert cmp.kind == "compare" and cmp.mode == "engines" and [s.label for s in cmp.sides] == ["ort", "ort-int8"]
    assert f"run folder: {cmp.path}" in p.stdout
    # each build's own run is the single-build verify, unchanged
    sides = [read_json(f"{s.run}/report.json") for s in cmp.sides]
    for s, doc in zip(cmp.sides, sides):
        alone = leapp_lab.verify(paths["reference"], s.build, save=False)
        assert [r["name"] for r in doc["rows"]] == [r.name for r in alone.rows]
        assert [r["nrmse"] for r in doc["rows"]] == [r.nrmse for r in alone.rows]
        assert doc["first_divergent"] == alone.first_divergent
    # the --json rows: changes are B − A and B / A of the two runs' stored rows; flips from their verdicts
    rows_a = {r["name"]: r for r in sides[0]["rows"]}
    rows_b = {r["name"]: r for r in sides[1]["rows"]}
    doc = json.loads((tmp_path / "c.json").read_text())
    names = [r["name"] for r in doc["rows"]]
    assert names == [r["name"] for r in sides[0]["rows"] if r["paired"]]          # model order, same rows
    expect_fail = [n for n in names if _verdict(rows_a[n]) == "pass" and _verdict(rows_b[n]) == "fail"]
    assert expect_fail, "int8 should make some TappedNet row diverge where fp32 does not"
    assert doc["to_fail"] == expect_fail and doc["to_pass"] == []
    assert len(expect_fail) < len(names)                                          # not every row flips
    for rec in doc["rows"]:
        a, b = rows_a[rec["name"]], rows_b[rec["name"]]
        for k in ("mape", "nrmse", "max_abs", "mse"):
            assert rec[f"B.{k}.delta"] == pytest.approx(b[k] - a[k], rel=1e-12, abs=0)
            assert rec[f"B.{k}.ratio"] == (pytest.approx(b[k] / a[k], rel=1e-12) if a[k] > 0 else None)
        assert rec["B.cosine.delta"] == pytest.approx(b["cosine"] - a["cosine"], rel=1e-12, abs=1e-300)
        assert rec["B.cosine.ratio"] is None
        assert rec["B.flip"] == ("to-fail" if rec["name"] in expect_fail else None)
    # the text: the flipped rows marked, the sentence that counts them
    assert f"B vs A: {len(expect_fail)} flipped to fail ({', '.join(expect_fail)})" in p.stdout
    flagged = [line.split()[2] for line in p.stdout.splitlines() if line.startswith("!!") and line.split()[1].isdigit()]
    assert flagged == expect_fail
    html = (tmp_path / "c.html").read_text(encoding="utf-8")
    assert 'data-leapp-kind="compare"' in html and html.count('data-leapp-flip="to-fail"') == len(expect_fail)
    # the report command renders the saved compare run
    r = cli("report", cmp.path, "-o", tmp_path / "again.html")
    assert r.returncode == 0, r.stderr
    assert 'data-leapp-kind="compare"' in (tmp_path / "again.html").read_text(encoding="utf-8")


def test_engines_gate_and_unusable_builds(builds, tmp_path):
    paths, ort, int8 = builds
    # --max-mape goes to every build; exit 1 when any fails it, and every run is still saved
    worst = max(r.mape for r in leapp_lab.verify(paths["reference"], int8.path, save=False).outputs)
    p = cli("verify", paths["reference"], ort.path, int8.path, "--out", tmp_path / "g", "--max-mape", worst / 2)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "FAIL: --max-mape exceeded in B" in p.stdout and len(list((tmp_path / "g" / "runs").iterdir())) == 3
    bad = cli("verify", paths["reference"], ort.path, tmp_path / "nobuild", "--no-save")
    assert bad.returncode == 2 and "nobuild" in bad.stderr and "Traceback" not in bad.stderr


def test_diff_of_the_two_runs_and_the_api(builds, tmp_path):
    paths, ort, int8 = builds
    a = leapp_lab.verify(paths["reference"], ort.path, out=tmp_path / "r")
    b = leapp_lab.verify(paths["reference"], int8.path, out=tmp_path / "r")
    p = cli("diff", a.path, b.path, "--fail-on-flip", "--json", tmp_path / "d.json")
    d = a.diff(b)
    assert d.to_fail and p.returncode == 1 and json.loads((tmp_path / "d.json").read_text())["to_fail"] == d.to_fail
    back = cli("diff", b.path, a.path, "--fail-on-flip")
    assert back.returncode == 0 and f"0 flipped to fail, {len(d.to_fail)} flipped to pass" in back.stdout
    assert cli("diff", a.path, int8.path).returncode == 2                     # a build is not a verify run
    # the API: verify(ref, [builds]) is verify_many; diff(run_a, run_b) loads the runs
    many = leapp_lab.verify(paths["reference"], [ort.path, int8.path], save=False)
    assert many.kind == "compare" and many.to_fail == d.to_fail
    assert leapp_lab.diff(a.path, b.path).to_fail == d.to_fail
    assert [r.changes["B"]["nrmse"].delta for r in many.rows] == [r.changes["B"]["nrmse"].delta for r in d.rows]

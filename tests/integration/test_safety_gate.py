"""Class 3 of docs/safety.md: the ``--max-mape`` gate never passes what it did not judge.

Invalid thresholds and rule options exit 2 (CLI) / raise ValueError (API); an output whose dtype
cannot be compared or that holds no finite value fails the gate with a row saying why; an exactly
matching 0-size output passes.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from safety_helpers import cli, copy_prepared, refused_many


def _pair(tmp_path, ref: dict, eng: dict):
    np.savez(tmp_path / "ref.npz", **ref)
    b = tmp_path / "model.ort"
    b.mkdir()
    np.savez(b / "sample_outputs.npz", **eng)
    return tmp_path / "ref.npz", b


@pytest.fixture
def exact(tmp_path):
    a = np.linspace(1, 2, 12, dtype=np.float32).reshape(2, 6)
    return _pair(tmp_path, {"out": a}, {"out": a})


def test_invalid_thresholds_and_rule_options_exit_2(exact, tmp_path):
    ref, b = exact
    cases = []
    for opt, value in [("--max-mape", "nan"), ("--max-mape", "inf"), ("--max-mape", "-inf"),
                       ("--max-mape", "-1"), ("--div-cosine", "nan"), ("--div-cosine", "-inf"),
                       ("--rtol", "-5"), ("--rtol", "nan"), ("--div-nrmse", "nan"), ("--div-mape", "inf")]:
        gate = [] if opt == "--max-mape" else ["--max-mape", "5"]
        cases.append((["verify", ref, b, "--no-save", f"{opt}={value}", *gate], (opt, value)))
    refused_many(tmp_path, cases)


def test_the_api_refuses_them_too(exact):
    import leapp_lab

    ref, b = exact
    for kw in ({"max_mape": math.nan}, {"max_mape": math.inf}, {"div_cosine": math.nan},
               {"rtol": -5.0}, {"div_nrmse": math.nan}):
        with pytest.raises(ValueError, match=next(iter(kw)).replace("_", "-")):
            leapp_lab.verify(ref, b, save=False, **kw)


@pytest.mark.parametrize("dtype,make", [
    ("complex64", lambda: (np.ones((2, 3)) * (1 + 2j)).astype(np.complex64)),
    ("<U1", lambda: np.array([["a", "b"], ["c", "d"]])),
    ("|V8", lambda: np.zeros((2, 3), dtype="V8")),
    ("structured", lambda: np.zeros((2, 3), dtype=[("a", "<f4"), ("b", "<i4")])),
])
def test_an_output_whose_dtype_cannot_be_compared_fails_the_gate(tmp_path, dtype, make):
    a = make()
    ref, b = _pair(tmp_path, {"out": a, "ok": np.ones((2, 3), np.float32)},
                   {"out": a, "ok": np.ones((2, 3), np.float32)})
    r = cli("verify", ref, b, "--no-save", "--max-mape", "5", "--json", tmp_path / "v.json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "PASS" not in r.stdout and "FAIL" in r.stdout and "out (dtype-unsupported)" in r.stdout
    row = next(x for x in json.loads((tmp_path / "v.json").read_text())["rows"] if x["name"] == "out")
    assert row["exceeded"] and row["status"] == "dtype-unsupported" and "compared" in row["note"]


def test_an_output_with_no_finite_value_fails_the_gate_with_a_row_saying_why(tmp_path):
    nan = np.full((2, 3), np.nan, np.float32)
    inf = np.full((2, 3), np.inf, np.float32)
    ref, b = _pair(tmp_path, {"a": nan, "b": np.ones((2, 3), np.float32)},
                   {"a": nan, "b": inf})
    r = cli("verify", ref, b, "--no-save", "--max-mape", "5", "--json", tmp_path / "v.json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "PASS" not in r.stdout
    rows = {x["name"]: x for x in json.loads((tmp_path / "v.json").read_text())["rows"]}
    for n in ("a", "b"):
        assert rows[n]["exceeded"] and rows[n]["mape"] is None
        assert "nothing finite to compare" in rows[n]["note"], rows[n]
        assert f"{n}: nothing finite to compare" in r.stdout
    assert "mape above" not in r.stdout       # it was not judged too high: it was not judged


def test_an_exactly_matching_empty_output_passes(tmp_path):
    z = np.zeros((2, 0, 4), np.float32)
    ref, b = _pair(tmp_path, {"empty": z, "out": np.ones((2, 3), np.float32)},
                   {"empty": z, "out": np.ones((2, 3), np.float32)})
    r = cli("verify", ref, b, "--no-save", "--max-mape", "5", "--json", tmp_path / "v.json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS" in r.stdout
    rows = {x["name"]: x for x in json.loads((tmp_path / "v.json").read_text())["rows"]}
    assert rows["empty"]["judged"] and not rows["empty"]["exceeded"]


def test_max_mape_taps_fails_a_tap_that_cannot_be_compared(tmp_path_factory, tmp_path):
    w = copy_prepared(tmp_path_factory, tmp_path / "w")
    for path in (w["reference"], w["build"] / "sample_outputs.npz"):
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["hidden_1"] = arrays["hidden_1"].astype(np.complex64)
        np.savez(path, **arrays)
    args = ["verify", "build/model.reference.npz", "build/model.ort", "--no-save", "--max-mape", "5"]
    assert cli(*args, cwd=w["dir"]).returncode == 0          # taps are informational without the flag
    r = cli(*args, "--max-mape-taps", cwd=w["dir"])
    assert r.returncode == 1, r.stdout + r.stderr
    assert "hidden_1 (dtype-unsupported)" in r.stdout and "PASS" not in r.stdout


def test_nan_or_inf_on_one_side_only_fails_the_gate_and_the_same_nan_on_both_passes(tmp_path):
    a = np.ones((2, 6), np.float32)
    b = a.copy()
    b[0, 0] = np.inf                 # the engine overflowed on one element; the other 11 are exact
    same = a.copy()
    same[1, 3] = np.nan              # the same NaN on both sides is agreement
    ref, bld = _pair(tmp_path, {"out": a, "agree": same}, {"out": b, "agree": same})
    r = cli("verify", ref, bld, "--no-save", "--max-mape", "5", "--json", tmp_path / "v.json")
    assert r.returncode == 1, r.stdout + r.stderr
    rows = {x["name"]: x for x in json.loads((tmp_path / "v.json").read_text())["rows"]}
    assert rows["out"]["exceeded"] and rows["out"]["mape"] == 0.0
    assert "NaN or Inf on one side only" in rows["out"]["note"]
    assert rows["agree"]["judged"] and not rows["agree"]["exceeded"]
    assert "out (non-finite on one side)" in r.stdout and "PASS" not in r.stdout


def test_a_gate_with_nothing_to_judge_fails(tmp_path):
    """An empty reference (or one with prepare's timings only) against a build: no output compared."""
    import zipfile
    with zipfile.ZipFile(tmp_path / "empty.npz", "w"):
        pass
    np.savez(tmp_path / "timings.npz", benchmark_timings_ms=np.ones(2))
    b = tmp_path / "model.ort"
    b.mkdir()
    np.savez(b / "sample_outputs.npz", out=np.ones((2, 3), np.float32))
    for ref in ("empty.npz", "timings.npz"):
        r = cli("verify", tmp_path / ref, b, "--no-save", "--max-mape", "5", "--json", tmp_path / "v.json")
        assert r.returncode == 1, r.stdout + r.stderr
        assert "PASS" not in r.stdout and "judged nothing" in r.stdout
        assert json.loads((tmp_path / "v.json").read_text())["exit_code"] == 1

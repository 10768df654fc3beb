"""``leapp-lab verify`` exit codes: 0, 1 (--max-mape exceeded), 2 (an unusable input, named)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import verify_models as vm

CLI = [sys.executable, "-m", "leapp_lab.cli", "verify"]


def run(*args):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def int8(tmp_path_factory):
    _, paths = vm.shared_net(tmp_path_factory)
    return paths, vm.shared_build(tmp_path_factory, "ort-int8")


def test_max_mape_exit_codes(int8, tmp_path):
    paths, build = int8
    out = run(paths["reference"], build.path, "--no-save")
    assert out.returncode == 0, out.stderr
    assert "conv0" in out.stdout and ">>" in out.stdout  # the first divergent row is marked
    assert run(paths["reference"], build.path, "--no-save", "--json", tmp_path / "a.json").returncode == 0
    mape = json.loads((tmp_path / "a.json").read_text())
    outs = [r for r in mape["rows"] if r["kind"] == "output"]
    worst_out = max(r["mape"] for r in outs)
    worst_tap = max(r["mape"] for r in mape["rows"] if r["kind"] == "manual")
    assert worst_tap > worst_out
    between = (worst_out + worst_tap) / 2
    assert run(paths["reference"], build.path, "--no-save", "--max-mape", worst_out * 2).returncode == 0
    r1 = run(paths["reference"], build.path, "--no-save", "--max-mape", worst_out / 2)
    assert r1.returncode == 1 and "FAIL" in r1.stdout
    # taps are judged only with --max-mape-taps
    assert run(paths["reference"], build.path, "--no-save", "--max-mape", between).returncode == 0
    r2 = run(paths["reference"], build.path, "--no-save", "--max-mape", between, "--max-mape-taps",
             "--json", tmp_path / "b.json")
    assert r2.returncode == 1
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["exit_code"] == 1 and doc["exceeded"] and all(
        r["exceeded"] == (r["name"] in doc["exceeded"]) for r in doc["rows"])
    assert run(paths["reference"], build.path, "--no-save", "--max-mape", "-1").returncode == 2


def test_out_saves_the_run_folder(int8, tmp_path):
    paths, build = int8
    r = run(paths["reference"], build.path, "--out", tmp_path / "v", "--html", tmp_path / "r.html")
    assert r.returncode == 0
    run_id = (tmp_path / "v" / "latest").read_text().strip()
    for f in ("report.json", "histograms.npz", "metrics.csv", "per_sample.csv"):
        assert (tmp_path / "v" / "runs" / run_id / f).is_file()
    html = (tmp_path / "r.html").read_text()
    assert 'data-leapp-row' in html or "conv0" in html


def _expect_2(args, *needles):
    r = run(*args)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    for n in needles:
        assert str(n) in r.stderr, (n, r.stderr)
    assert "Traceback" not in r.stderr


def test_unusable_inputs_exit_2_naming_the_file(int8, tmp_path):
    paths, build = int8
    ref = paths["reference"]
    _expect_2([tmp_path / "missing.npz", build.path], "missing.npz", "no such file")
    _expect_2([ref, tmp_path / "nobuild"], "nobuild", "no such build")
    text = tmp_path / "notes.npz"
    text.write_text("hello")
    _expect_2([text, build.path], "notes.npz", "not an .npz file")
    obj = tmp_path / "obj.npz"
    np.savez(obj, output_0=np.array([{"a": 1}, None], dtype=object))
    _expect_2([obj, build.path], "obj.npz", "dtype object")
    fewer = tmp_path / "fewer.npz"
    with np.load(ref) as z:
        np.savez(fewer, **{k: z[k][:2] for k in z.files})
    _expect_2([fewer, build.path], "fewer.npz", "mismatched sample counts")
    _expect_2([paths["npz"], build.path], "model.npz", "no array name in common")
    scalar = tmp_path / "scalar.npz"
    np.savez(scalar, output_0=np.float32(1.0))
    _expect_2([scalar, build.path], "scalar.npz", "leading sample axis")
    broken = tmp_path / "broken"
    shutil.copytree(build.path, broken)
    (broken / "sample_outputs.npz").unlink()
    _expect_2([ref, broken], "broken", "sample_outputs.npz")
    badtgz = tmp_path / "b.tgz"
    badtgz.write_bytes(b"\x1f\x8b not really")
    _expect_2([ref, badtgz], "b.tgz")
    notnpy = tmp_path / "zip.npz"
    with zipfile.ZipFile(notnpy, "w") as zf:
        zf.writestr("readme.txt", "x")
    _expect_2([notnpy, build.path], "zip.npz", "not .npy")

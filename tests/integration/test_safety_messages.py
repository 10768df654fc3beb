"""Clear messages (issue 24, docs/safety.md "Clear messages"): inputs that were used silently or
blamed on the wrong thing are refused with one line naming the file, the member, the input or the
tap, and what to do. The real CLI in subprocesses on copies of one prepared model; a refused command
leaves the tree byte-identical.
"""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from safety_helpers import MLP_POLICY, assert_refused, cli, cli_many, copy_prepared, refused_many, tree
from verify_models import shared_net

REF = "build/model.reference.npz"
ONNX = "build/model.onnx"
REPAIR = ["--engine", "ort-int8", "--target-nrmse", "1e-9", "--budget", "2", "--jobs", "1", "--quiet"]


@pytest.fixture
def w(tmp_path_factory, tmp_path):
    return copy_prepared(tmp_path_factory, tmp_path / "w")


def _with_member_twice(src: Path, dst: Path, member: str, compress: int = zipfile.ZIP_STORED) -> None:
    """``src`` rewritten with a second ``member`` (its values x 1000) after the first."""
    with warnings.catch_warnings(), zipfile.ZipFile(src) as zi, zipfile.ZipFile(dst, "w", compress) as zo:
        warnings.simplefilter("ignore")            # zipfile: "Duplicate name"
        for info in zi.infolist():
            data = zi.read(info)
            zo.writestr(info.filename, data)
            if info.filename == member + ".npy":
                b = io.BytesIO()
                np.save(b, np.load(io.BytesIO(data)) * 1000)
                zo.writestr(info.filename, b.getvalue())


def test_an_npz_with_a_member_twice_is_refused_naming_file_and_member(w):
    # before: the last member won silently: verify compared against it and compile built on it
    d = w["dir"]
    _with_member_twice(w["reference"], d / "ref2.npz", "action_mean")
    _with_member_twice(w["npz"], d / "in2.npz", "obs", zipfile.ZIP_DEFLATED)
    refused_many(d, [
        (["verify", "ref2.npz", "build/model.ort", "--no-save"], ("ref2.npz", "'action_mean.npy'", "more than once")),
        (["compile", ONNX, "--npz", "in2.npz", "--out", "o.ort", "--quiet"], ("in2.npz", "'obs.npy'", "more than once")),
        (["repair", "ref2.npz", ONNX, *REPAIR], ("ref2.npz", "'action_mean.npy'")),
    ], cwd=d, timeout=300)


def test_int8_calibrated_on_non_finite_inputs_names_the_npz_and_the_input(w):
    # before: all-NaN said only "int8 quantization ... failed: scale issue" (as a failed build); one
    # Inf built an engine whose every value is NaN, without a word
    d = w["dir"]
    obs = np.load(w["npz"])["obs"]
    np.savez(d / "nan.npz", obs=np.full_like(obs, np.nan))
    inf = obs.copy()
    inf[1, 0, 3] = np.inf
    np.savez(d / "inf.npz", obs=inf)
    lines = refused_many(d, [
        (["compile", ONNX, "--engine", "ort-int8", "--npz", "nan.npz", "--out", "n.ort", "--quiet"],
         ("nan.npz", "input 'obs'", "no finite value", "ort-int8")),
        (["compile", ONNX, "--engine", "ort-int8", "--npz", "inf.npz", "--out", "i.ort", "--quiet"],
         ("inf.npz", "input 'obs'", "1 Inf", "sample 1")),
    ], cwd=d, timeout=300)
    assert all("scale issue" not in ln and "build failed" not in ln for ln in lines), lines
    # a few NaNs among finite values: the calibrator skips them; the build goes on and says so
    some = obs.copy()
    some[0, 1, 2] = np.nan
    np.savez(d / "some.npz", obs=some)
    r = cli("compile", ONNX, "--engine", "ort-int8", "--npz", "some.npz", "--out", "s.ort", "--quiet", cwd=d,
            timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "input 'obs' holds 1 NaN value(s); int8 calibration skips them" in (d / "s.ort" / "compile.log").read_text()


def test_a_tap_name_with_a_nul_is_refused_by_prepare_naming_tap_and_site(tmp_path):
    # before: prepare and compile passed; verify then said "model.reference.npz: not an .npz file
    # (member 'hid' is not .npy)", blaming the reference
    src = MLP_POLICY.read_text()
    line = next(i for i, ln in enumerate(src.splitlines(), 1) if '"hidden_2"' in ln)
    (tmp_path / "model.py").write_text(src.replace('"hidden_2"', '"hid\\x00den_2"'))
    (tmp_path / "dict_out.py").write_text(src.replace('"value":', '"val\\nue":'))
    rs = cli_many([["prepare", f, "--onnx-out", "build/model.onnx", "--npz-out", "build/model.npz",
                    "--reference-out", "build/model.reference.npz", "--debug-taps", "all", "--quiet"]
                   for f in ("model.py", "dict_out.py")], cwd=tmp_path, timeout=300)
    assert_refused(rs[0], "tap(x, 'hid\\x00den_2')", f"model.py:{line}", "control character '\\x00'")
    assert_refused(rs[1], "dict_out.py", "output named 'val\\nue'", "rename the key")
    assert not (tmp_path / "build").exists()


def test_repair_with_another_models_reference_says_so_before_any_build(w, tmp_path_factory):
    # before: the baseline was built first, then "the ort-int8 engine cannot be built as it is"
    d = w["dir"]
    _, other = shared_net(tmp_path_factory)
    shutil.copy(other["reference"], d / "other.reference.npz")
    shutil.copy(other["npz"], d / "other.npz")
    ref = np.load(w["reference"])
    np.savez(d / "no_value.npz", **{k: ref[k] for k in ref.files if k != "value"})
    np.savez(d / "two.npz", **{k: ref[k][:2] for k in ref.files})
    np.savez(d / "wide.npz", **{k: (np.concatenate([ref[k]] * 2, -1) if k == "value" else ref[k]) for k in ref.files})
    lines = refused_many(d, [
        (["repair", "other.reference.npz", ONNX, *REPAIR],
         ("other.reference.npz", "model.onnx", "another model", "no array name in common")),
        (["repair", "no_value.npz", ONNX, *REPAIR], ("no_value.npz", "model.onnx", "model output(s) ['value']")),
        (["repair", "two.npz", ONNX, *REPAIR], ("two.npz", "model.npz", "2 sample(s)", "other inputs")),
        (["repair", REF, ONNX, "--npz", "other.npz", *REPAIR], ("other.npz", "model input(s) ['obs']")),
        # before: a whole sweep, then "no segment ... lowered the output error (nrmse unmeasurable)"
        (["repair", "wide.npz", ONNX, *REPAIR], ("wide.npz", "model.onnx", "'value'", "(2, 2)", "(2, 1)")),
    ], cwd=d, timeout=300)
    assert all("cannot be built" not in ln for ln in lines), lines
    assert not (d / "build" / "leapp_lab").exists()


def test_what_a_new_user_passes_in_the_wrong_place_is_named_as_what_it_is(w, tmp_path_factory):
    # before: a run folder (or a runs root) as the build said "no sample_outputs.npz in this build;
    # re-run leapp-lab compile"; a build's engine.onnx said "engine.npz: no such input npz"; a diff
    # of two runs of different models exited 0 with every row "absent" on one side
    from verify_models import shared_build
    d = w["dir"]
    other = shared_build(tmp_path_factory, "ort").path
    other_ref = Path(other).parent / "model.reference.npz"
    for r in cli_many([["verify", REF, "build/model.ort", "--out", "runsA"],
                       ["verify", other_ref, other, "--out", "runsB"]], cwd=d, timeout=300):
        assert r.returncode == 0, r.stderr[-2000:]
    run_a = next((d / "runsA" / "runs").iterdir()).relative_to(d)
    run_b = next((d / "runsB" / "runs").iterdir()).relative_to(d)
    lines = refused_many(d, [
        (["verify", REF, run_a, "--no-save"], (str(run_a), "a run folder", "not a build")),
        (["verify", REF, "runsA", "--no-save"], ("runsA", "a runs folder", "not a build")),
        (["compile", "build/model.ort/engine.onnx", "--out", "x.ort", "--quiet"],
         ("build/model.ort/engine.onnx", "a file of the build", "build/model.onnx")),
        (["repair", REF, "build/model.ort/engine.onnx", *REPAIR], ("engine.onnx", "a file of the build")),
        (["diff", run_a, run_b], (str(run_a), str(run_b), "different models")),
        # before: a run diffed with itself, exit 0, every change 0 (runsA's latest is run_a)
        (["diff", run_a, "runsA"], (str(run_a), "runsA", "the same verify run", "given twice")),
        # before: compared with itself, exit 0, every change 0
        (["verify", REF, "build/model.ort", "./build/model.ort/", "--no-save"], ("./build/model.ort/", "given twice")),
    ], cwd=d, timeout=300)
    assert all("re-run leapp-lab compile" not in ln and "no such input npz" not in ln for ln in lines), lines


def test_stdout_closed_early_is_not_an_internal_error(w):
    # before: `leapp-lab verify ... | head` printed a BrokenPipeError traceback and "internal error
    # (a bug in leapp_lab) ... exit 3"
    r, wr = os.pipe()
    os.close(r)                                   # the reader is gone before the table is printed
    try:
        p = subprocess.run([sys.executable, "-m", "leapp_lab.cli", "verify", REF, "build/model.ort", "--out", "o"],
                           stdout=wr, stderr=subprocess.PIPE, text=True, cwd=w["dir"], timeout=300)
    finally:
        os.close(wr)
    assert p.returncode == 141, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr and "BrokenPipe" not in p.stderr
    assert (w["dir"] / "o" / "latest").is_file()      # the work was done and saved before the print


def test_names_from_a_file_cannot_drive_the_terminal(w):
    # before: an npz member named 'x\x1b]0;…\x07\x1b[2J' reached the terminal as it was (the
    # verify summary names it), setting the window title and clearing the screen; an error naming a
    # path did the same. Every line leapp-lab prints now writes such characters as escapes.
    esc = "evil\x1b]0;PWNED\x07\x1b[2J\r\u202e"
    d = w["dir"]
    ref = dict(np.load(d / REF))
    np.savez(d / "evil.npz", **{**ref, esc: ref["value"]})
    ok, bad = cli_many([["verify", "evil.npz", "build/model.ort", "--no-save"],
                        ["verify", "evil.npz", esc, "--no-save"]], cwd=d, timeout=300)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert_refused(bad, "evil\\x1b]0;PWNED\\x07\\x1b[2J\\r\\u202e")
    for text in (ok.stdout, ok.stderr, bad.stderr):
        assert not any(c in text for c in "\x1b\x07\r\u202e"), text[-2000:]
    assert "evil\\x1b]0;PWNED\\x07\\x1b[2J\\r\\u202e" in ok.stdout

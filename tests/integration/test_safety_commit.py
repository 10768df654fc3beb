"""Class 2 of docs/safety.md: a failed or interrupted save never commits.

A disk that fills (RLIMIT_FSIZE: a write past the limit fails with EFBIG, as ENOSPC would) or a
Ctrl-C (a real SIGINT) while a run folder, a build or prepare's three files are written leaves the
earlier state byte-identical: no run committed, ``latest`` unmoved, no ``.tmp-*`` sibling and no
archive-extraction folder in the temp directory.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from safety_helpers import assert_refused, cli, copy_prepared, tree
from safety_helpers import interrupting as _interrupting


@pytest.fixture
def w(tmp_path_factory, tmp_path):
    return copy_prepared(tmp_path_factory, tmp_path / "w")


def _runs(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "runs").iterdir())


# SIGINT while report.json, the last file of a verify run, is written (the files before it are done)
_AT_REPORT_JSON = """
real = j.atomic_write_text
def atomic_write_text(path, text):
    if os.path.basename(str(path)) == "report.json":
        os.kill(os.getpid(), signal.SIGINT)
    return real(path, text)
j.atomic_write_text = atomic_write_text
"""


def test_full_disk_during_the_verify_save_commits_nothing(w):
    root = w["build_dir"] / "leapp_lab"
    r = cli("verify", "build/model.reference.npz", "build/model.ort", cwd=w["dir"])
    assert r.returncode == 0, r.stderr
    good = _runs(root)
    latest = (root / "latest").read_text()
    sizes = {p.name: p.stat().st_size for p in (root / "runs" / good[0]).iterdir()}
    # every other file of the run fits, report.json (written last) does not
    limit = max(v for k, v in sizes.items() if k != "report.json") + 1
    assert limit < sizes["report.json"], sizes
    before = tree(w["dir"])
    for fsize in (1, limit):
        r = cli("verify", "build/model.reference.npz", "build/model.ort", cwd=w["dir"], fsize=fsize)
        assert_refused(r, "build/leapp_lab/runs", "File too large")
        assert _runs(root) == good and (root / "latest").read_text() == latest
        assert tree(w["dir"]) == before


def test_ctrl_c_during_the_verify_save_commits_nothing(w, tmp_path):
    r = cli("verify", "build/model.reference.npz", "build/model.ort", cwd=w["dir"])
    assert r.returncode == 0, r.stderr
    before = tree(w["dir"])
    r = _interrupting(["verify", "build/model.reference.npz", "build/model.ort"], _AT_REPORT_JSON,
                      w["dir"])
    assert r.returncode == 130, r.stderr
    assert "interrupted" in r.stderr and "Traceback" not in r.stderr
    assert tree(w["dir"]) == before


def test_a_failed_run_folder_body_commits_nothing_through_the_api(tmp_path):
    from leapp_lab.model import RunFolder, latest_run

    with RunFolder(tmp_path, "good") as good:
        (good.path / "report.json").write_text("{}")
    with pytest.raises(OSError):
        with RunFolder(tmp_path, "bad") as bad:
            (bad.path / "arrays.npz").write_bytes(b"half")      # written, then the disk fills
            raise OSError(28, "No space left on device")
    assert latest_run(tmp_path) == good.final_path
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [good.run_id]


def test_ctrl_c_while_a_build_archive_is_extracted_leaves_no_folder_in_tmp(w, tmp_path):
    """A real SIGINT from outside, sent as soon as verify's extraction folder appears."""
    big = tmp_path / "big.ort.tgz"
    # a member that takes a moment to extract, recorded in build.json (only what it lists is extracted)
    body = json.loads((w["build"] / "build.json").read_text())
    body["files"]["zz-padding.bin"] = 256 << 20
    (tmp_path / "build.json").write_text(json.dumps(body))
    with tarfile.open(big, "w:gz") as tf:
        for p in sorted(w["build"].iterdir()):
            tf.add(tmp_path / p.name if p.name == "build.json" else p, arcname=p.name)
        pad = tmp_path / "padding.bin"
        with open(pad, "wb") as fh:
            fh.truncate(256 << 20)
        tf.add(pad, arcname="zz-padding.bin")
        pad.unlink()
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = dict(os.environ, TMPDIR=str(tmpdir))
    env.pop("LEAPP_LAB_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "leapp_lab.cli", "verify", str(w["reference"]), str(big),
                             "--no-save"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    # the extraction folder itself: Python's first tempfile call also writes and unlinks a probe file
    # in TMPDIR (tempfile._get_default_tempdir); a signal sent on seeing that probe could land
    # between its open and its unlink, in the standard library, and leave it behind
    while (not any(p.name.startswith("leapp-lab-build-") for p in tmpdir.iterdir())
           and proc.poll() is None and time.monotonic() < deadline):
        time.sleep(0.002)
    if proc.poll() is not None:
        pytest.fail(f"verify ended ({proc.returncode}) before its extraction folder was seen: "
                    f"{proc.communicate()[1][-3000:]}")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert list(tmpdir.iterdir()) == []


def _prepare(w, *extra, fsize=None, outs=("build/model.onnx", "build/model.npz", "build/model.reference.npz")):
    return cli("prepare", "model.py", "--onnx-out", outs[0], "--npz-out", outs[1], "--reference-out",
               outs[2], "--debug-taps", "all", "--quiet", *extra, cwd=w["dir"], fsize=fsize)


_FRESH = ("new/model.onnx", "new/model.npz", "new/model.reference.npz")


def _nothing_new(w, before):
    new = w["dir"] / "new"
    assert not new.exists() or not any(new.iterdir()), sorted(os.listdir(new))
    after = tree(w["dir"])
    after.pop("new", None)
    assert after == before


def test_a_failed_prepare_writes_none_of_its_outputs(w):
    sizes = {k: w[k].stat().st_size for k in ("onnx", "npz", "reference")}
    # the npz and the reference fit, the ONNX does not
    limit = max(sizes["npz"], sizes["reference"]) + 1
    assert limit < sizes["onnx"], sizes
    before = tree(w["dir"])
    r = _prepare(w, fsize=limit, outs=_FRESH)
    assert_refused(r, "new/model.onnx", "File too large")
    _nothing_new(w, before)


_AT_ONNX = """
real = j.atomic_write_bytes
def atomic_write_bytes(path, data):
    os.kill(os.getpid(), signal.SIGINT)
    return real(path, data)
j.atomic_write_bytes = atomic_write_bytes
import leapp_lab.steps.prepare as p
p.atomic_write_bytes = atomic_write_bytes
"""


def test_ctrl_c_during_prepare_writes_none_of_its_outputs(w):
    before = tree(w["dir"])
    r = _interrupting(["prepare", "model.py", "--onnx-out", _FRESH[0], "--npz-out", _FRESH[1],
                       "--reference-out", _FRESH[2], "--debug-taps", "all", "--quiet"], _AT_ONNX, w["dir"])
    assert r.returncode == 130, r.stderr
    _nothing_new(w, before)


def test_a_full_disk_during_compile_keeps_the_previous_build(w):
    before = tree(w["dir"])
    r = cli("compile", "build/model.onnx", "--quiet", cwd=w["dir"], fsize=1000)
    assert_refused(r, "build/model.ort", "File too large")
    assert tree(w["dir"]) == before

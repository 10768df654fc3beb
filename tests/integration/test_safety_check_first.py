"""Check, then work, then commit (docs/safety.md): every output of every command is checked (not an
input, not inside a build, a place where a file can be created) before any work; a command that
exits 2 commits nothing and moves no ``latest``.

The real CLI in subprocesses on a private copy of one prepared model; a read-only place is a
read-only tmpfs (what a user hits with a read-only mount; root writes through permission bits).
"""
from __future__ import annotations

import shutil
import time

import pytest

from safety_helpers import assert_refused, cli, cli_many, copy_prepared, refused_many, tree

REF = "build/model.reference.npz"
ONNX = "build/model.onnx"
REPAIR = ["repair", REF, ONNX, "--engine", "ort-int8", "--target-nrmse", "1e-9", "--budget", "4",
          "--jobs", "1", "--quiet"]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    w = copy_prepared(tmp_path_factory, tmp_path_factory.mktemp("check_first") / "w")
    d = w["dir"]
    for r in cli_many([["verify", REF, "build/model.ort", "--out", "runsA"],
                       ["verify", REF, "build/model.ort", "--out", "runsB"]], cwd=d):
        assert r.returncode == 0, (r.args, r.stderr[-2000:])
    # a script that leaves a mark when it runs
    (d / "mark.py").write_text("open('ran.txt', 'w').write('the script ran')\n")
    return d


@pytest.fixture
def d(base, tmp_path):
    d = tmp_path / "w"
    shutil.copytree(base, d, symlinks=True)
    return d


def test_a_bad_second_build_commits_no_run_of_the_first(d):
    """Before: the first build's verify run was saved and `latest` moved, then the second build
    failed (exit 2)."""
    bad = d / "build" / "bad.ort"
    shutil.copytree(d / "build" / "model.ort", bad)
    npz = bad / "sample_outputs.npz"
    npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])      # a truncated copy
    cases = [(["verify", REF, "build/model.ort", "build/bad.ort"], ("build/bad.ort",)),
             (["verify", REF, "build/model.ort", "build/bad.ort", "--out", "runsA"], ("build/bad.ort",)),
             (["verify", REF, "build/model.ort", "build/nosuch.ort"], ("build/nosuch.ort",))]
    refused_many(d, cases, cwd=d)


def test_outputs_in_a_read_only_place_are_refused_before_any_work(d, mounted):
    """Before: verify saved its run (latest moved) and then failed on --html/--json; `run` ran the
    script first; repair ran the whole sweep first; compile built first."""
    ro = mounted("ro", "ro,size=1m")
    (d / "ro").symlink_to(ro)
    t0 = time.monotonic()
    lines = refused_many(d, [
        (["verify", REF, "build/model.ort", "--html", "ro/r.html"], ("ro/r.html", "read-only")),
        (["verify", REF, "build/model.ort", "--json", "ro/v.json"], ("ro/v.json", "read-only")),
        (["verify", REF, "build/model.ort", "--out", "ro/runs"], ("ro/runs", "read-only")),
        (["run", "mark.py", "--json", "ro/t.json"], ("ro/t.json", "read-only")),
        (REPAIR + ["--html", "ro/r.html"], ("ro/r.html", "read-only")),
        (REPAIR + ["--json", "ro/r.json"], ("ro/r.json", "read-only")),
        (["compile", ONNX, "--out", "ro/model.ort", "--quiet"], ("ro/model.ort", "read-only")),
        (["diff", "runsA", "runsB", "--html", "ro/d.html"], ("ro/d.html", "read-only")),
        (["diff", "runsA", "runsB", "--out", "ro/diffs"], ("ro/diffs", "read-only")),
    ], cwd=d)
    assert not (d / "ran.txt").exists()
    # checked first: nothing was built or verified (a repair sweep alone takes longer than this)
    assert time.monotonic() - t0 < 60, lines


def test_repair_out_inside_a_build_is_refused_before_the_sweep(d):
    """Before: accepted; the runs and kept builds went into the build folder, and the next compile of
    that engine deleted them."""
    refused_many(d, [
        (REPAIR + ["--out", "build/model.ort"], ("--out", "build/model.ort", "inside the build")),
        (REPAIR + ["--out", "build/model.ort/lab"], ("build/model.ort/lab", "inside the build")),
        (REPAIR + ["--json", "build/model.ort/r.json"], ("build/model.ort/r.json", "inside the build")),
        (REPAIR + ["--html", "build/model.ort/r.html"], ("build/model.ort/r.html", "inside the build")),
    ], cwd=d)


def test_diff_out_onto_the_runs_folder_it_was_given_is_refused(d):
    """Before: `diff runsA runsB --out runsA` saved the diff in runsA and moved runsA/latest to it,
    so RUN_A named another run afterwards."""
    latest = (d / "runsA" / "latest").read_text()
    refused_many(d, [
        (["diff", "runsA", "runsB", "--out", "runsA"], ("--out runsA", "RUN_A", "latest")),
        (["diff", "runsA", "runsB", "--out", "runsB"], ("--out runsB", "RUN_B", "latest")),
        (["diff", "runsA/runs/..", "runsB", "--out", "runsA"], ("--out runsA", "RUN_A")),
    ], cwd=d)
    assert (d / "runsA" / "latest").read_text() == latest
    # a run folder given by its own path may still have its diff saved beside it (docs/safety.md)
    run_a = "runsA/runs/" + latest.strip()
    r = cli("diff", run_a, "runsB", "--out", "runsA", cwd=d)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (d / "runsA" / "latest").read_text() != latest


def test_a_report_that_cannot_be_written_commits_no_run(d):
    """A disk that fills while the --html report is written (RLIMIT_FSIZE of 1 MB: the run's files
    fit, the ~1.4 MB page does not). Before: the run was committed and `latest` moved, then the
    command exited 2; now the run, --json and --html are written first and committed together."""
    shutil.copytree(d / "build" / "model.ort", d / "build" / "copy.ort")
    before = tree(d)
    mb = 1 << 20
    for args in (["verify", REF, "build/model.ort", "--html", "r.html", "--json", "v.json"],
                 ["verify", REF, "build/model.ort", "build/copy.ort", "--out", "runsC", "--html", "r.html"],
                 ["diff", "runsA", "runsB", "--out", "runsD", "--html", "r.html", "--json", "d.json"],
                 REPAIR + ["--html", "r.html", "--json", "r.json"]):
        r = cli(*args, cwd=d, fsize=mb)
        assert_refused(r, "r.html", "File too large")
        after = tree(d)
        assert after == before, (args, sorted(set(after) ^ set(before)))

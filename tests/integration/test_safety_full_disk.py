"""A full disk (ENOSPC) or the file size limit (EFBIG, ``ulimit -f``) anywhere exits 2 with one
line naming the path, never becomes a finding ("the engine FAILED"), and leaves nothing that no
report names (docs/safety.md, "A failed or interrupted save never commits").

A real full disk is a small tmpfs mounted where the output goes (CI runs as root on this kind of
machine; elsewhere those tests skip and say why); the size limit is RLIMIT_FSIZE in the child,
which Python runs with SIGXFSZ ignored, so the write raises EFBIG as it would for a user.
"""
from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

from safety_helpers import assert_refused, cli, copy_prepared, tree

PIPELINES = Path(__file__).resolve().parents[1] / "pipelines"


@contextlib.contextmanager
def full_disk(folder: Path, kib: int):
    """A tmpfs of ``kib`` KiB mounted on ``folder`` (made if missing), unmounted afterwards."""
    folder.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(folder)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"a small tmpfs cannot be mounted here (needs root: {r.stderr.strip()[:200]}); "
                    f"the EFBIG cases cover the same paths")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def _trace(out: Path) -> Path:
    """tests/pipelines/clean_mlp.py traced by ``leapp-lab run``: its run folder."""
    r = cli("run", PIPELINES / "clean_mlp.py", "--quiet", "--", out, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    (run,) = (out / "clean_mlp" / "leapp_lab" / "runs").iterdir()
    return run


_REPLAY = """
import sys, leapp_lab
from leapp_lab.cli import _failed
try:
    leapp_lab.replay(sys.argv[1], steps=3, engine=sys.argv[2])
except BaseException as exc:
    sys.exit(_failed("replay", exc, False))     # the status and line the CLI gives this exception
"""


@pytest.mark.parametrize("engine", ["ort", "ort-int8"])
def test_a_full_disk_during_a_replays_engine_build_is_named_never_a_failed_engine(tmp_path, engine):
    """Before: the engine was recorded as "failed" ("building the pipeline for ort raised OSError:
    [Errno 28] No space left on device"), exit 0, and replay_engines/<engine>/ stayed behind."""
    run = _trace(tmp_path / "out")
    before = tree(run)
    builds = run / "replay_engines"
    with full_disk(builds, 4):
        r = subprocess.run([sys.executable, "-c", _REPLAY, str(run), engine], capture_output=True,
                           text=True, timeout=300)
        left = sorted(p.name for p in builds.iterdir())
    line = assert_refused(r, str(builds / engine), "No space left on device")
    assert "FAILED" not in line.upper()
    assert left == []                                  # no half build, no replay_engines/<engine>/
    builds.rmdir()                                     # the mount point this test made
    assert tree(run) == before                         # no replay.json / replay.npz: nothing committed


def test_a_full_disk_during_run_engine_node_builds_exits_2_and_leaves_no_unnamed_build(tmp_path):
    """``run --engine ort`` on a disk with room for the trace but not for the node builds. Before:
    the node builds stayed in the run folder, which report.json never named."""
    ref = _trace(tmp_path / "measure")
    need = sum(-(-p.stat().st_size // 4096) * 4 for p in ref.parent.parent.rglob("*") if p.is_file())
    lab = tmp_path / "out" / "clean_mlp" / "leapp_lab"
    with full_disk(lab, need + 24):
        r = cli("run", PIPELINES / "clean_mlp.py", "--engine", "ort", "--quiet", "--", tmp_path / "out", timeout=300)
        after = tree(lab)
    assert r.returncode == 2 and "Traceback" not in r.stderr, (r.returncode, r.stderr[-3000:])
    line = r.stderr.strip().splitlines()[-1]           # after the progress lines of the node steps
    assert line.startswith("leapp-lab run: error: ") and "No space left on device" in line, line
    assert str(lab) in line and "/nodes/" in line, line
    # what is left is the trace run, file for file as an uninterrupted trace writes it: no node build
    trace_files = {str(p.relative_to(ref)) for p in ref.rglob("*")}
    (run_id,) = [k.split("/")[1] for k in after if k.count("/") == 1 and k.startswith("runs/")]
    left = {k[len(f"runs/{run_id}/"):] for k in after if k.startswith(f"runs/{run_id}/")}
    assert left == trace_files, sorted(left ^ trace_files)


@pytest.mark.parametrize("engine", ["ort", "ort-int8", "ort-fp16"])
def test_compile_on_a_full_disk_names_the_build_and_keeps_nothing(tmp_path_factory, tmp_path, engine):
    w = copy_prepared(tmp_path_factory, tmp_path / "w")
    out = tmp_path / "disk"
    with full_disk(out, 8):
        r = cli("compile", w["onnx"], "--engine", engine, "--out", out / "model.x", "--quiet")
        left = sorted(p.name for p in out.iterdir())
    assert_refused(r, str(out / "model.x"), "No space left on device")
    assert left == []


@pytest.mark.parametrize("engine", ["ort-int8", "ort-fp16"])
def test_compile_at_the_file_size_limit_names_the_build_and_keeps_the_old_one(tmp_path_factory, tmp_path, engine):
    """Before: ``leapp-lab compile: error: File too large; …`` named no path (onnx's own save)."""
    w = copy_prepared(tmp_path_factory, tmp_path / "w")
    before = tree(w["dir"])
    r = cli("compile", "build/model.onnx", "--engine", engine, "--out", "build/model.ort", "--force",
            "--quiet", cwd=w["dir"], fsize=6 * 1024)
    assert_refused(r, "build/model.ort", "File too large")
    assert tree(w["dir"]) == before


def test_repair_at_the_file_size_limit_names_the_path_and_leaves_no_repair_folder(tmp_path_factory, tmp_path):
    """Before: "the ort-int8 engine cannot be built as it is, so there is nothing to repair: the
    build raised OSError …": the machine's limit reported as the engine's failure (and a sweep
    build that met it was one failed trial)."""
    w = copy_prepared(tmp_path_factory, tmp_path / "w")
    before = tree(w["dir"])
    r = cli("repair", "build/model.reference.npz", "build/model.onnx", "--engine", "ort-int8", "--budget", "4",
            "--jobs", "1", "--quiet", "--out", "rep", cwd=w["dir"], fsize=24 * 1024)
    line = assert_refused(r, str(w["dir"] / "rep" / "repair"), "File too large")
    assert "cannot be built" not in line
    assert tree(w["dir"]) == before                    # no rep/, no repair/<id>/, no run


def test_a_trace_run_that_could_not_be_written_gets_no_deep_check_files(tmp_path):
    """``run --replay --exporters`` at a file size limit that the run folder's report.json exceeds.
    Before: the run folder was not committed, yet the exporter re-runs and exporters.json were
    written into runs/<id>/ anyway: a run folder without report.json, named by nothing."""
    r = cli("run", PIPELINES / "clean_mlp.py", "--replay", "2", "--exporters", "policy", "--quiet", "--",
            tmp_path / "out", fsize=24 * 1024, timeout=600)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert "could not write the run folder of graph 'clean_mlp'" in r.stderr and "File too large" in r.stderr
    lab = tmp_path / "out" / "clean_mlp" / "leapp_lab"
    assert not lab.exists(), sorted(str(p.relative_to(lab)) for p in lab.rglob("*"))

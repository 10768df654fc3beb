"""The signal rule of docs/safety.md: SIGTERM (a CI timeout, ``timeout``, ``kill``, a container stop)
is handled like Ctrl-C by every command. The workers and their helpers stop, no temporary folder or
``.tmp-*`` sibling is left, the exit status is 143 and the caller's pipes close within seconds.

Real signals to real CLI processes, on a private copy of one prepared model (safety_helpers).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from safety_helpers import copy_prepared, interrupting, tree

REF = "build/model.reference.npz"
ONNX = "build/model.onnx"
# a target it cannot meet and room for many builds: a sweep that is still running when terminated
REPAIR = ["repair", REF, ONNX, "--engine", "ort-int8", "--target-nrmse", "1e-9", "--budget", "60"]


@pytest.fixture
def w(tmp_path_factory, tmp_path):
    return copy_prepared(tmp_path_factory, tmp_path / "w")


def _group_alive(pgid: int) -> list[str]:
    """The processes of group ``pgid`` that still run (zombies, already ended, do not count)."""
    alive = []
    for st in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = st.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(st.parent.name + " " + (st.parent / "cmdline").read_bytes()[:120].decode(errors="replace"))
    return alive


def _drain(stream, sink: list, done: threading.Event) -> None:
    sink.append(stream.read())      # returns at EOF: when no process holds the pipe's write end
    done.set()


@pytest.mark.parametrize("to_group", [False, True], ids=["to-the-process", "to-its-group"])
def test_sigterm_in_a_process_pool_sweep_stops_every_process_and_closes_the_pipes(w, short_tmp, to_group):
    """SIGTERM to the repair process alone (as `timeout` or `kill PID` sends it), or to its whole
    process group (a CI runner, a terminal's job control), once its pool is building. Before: the
    main process died at once; its two workers, the fork server and the resource tracker lived on
    (26 s and more) holding stdout/stderr, so a caller reading them hung, and repair/<id>/ and
    pymp-* were left behind. (With the group signalled, a worker whose build SIGTERM had unwound
    went back to the pool's queue and waited there for ever, SIGTERM ignored.)"""
    d = w["dir"]
    tmpdir = short_tmp              # the fork server's socket goes there (conftest.short_tmp)
    before = tree(d)
    env = dict(os.environ, TMPDIR=str(tmpdir))
    env.pop("LEAPP_LAB_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "leapp_lab.cli", *REPAIR, "--jobs", "2"], cwd=d, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    outs, errs, eof_out, eof_err = [], [], threading.Event(), threading.Event()
    for stream, sink, ev in ((proc.stdout, outs, eof_out), (proc.stderr, errs, eof_err)):
        threading.Thread(target=_drain, args=(stream, sink, ev), daemon=True).start()
    repair_dir = d / "build" / "leapp_lab" / "repair"
    deadline = time.monotonic() + 240
    sweep = None
    while proc.poll() is None and time.monotonic() < deadline and sweep is None:
        if repair_dir.is_dir():
            sweep = next((s for s in repair_dir.glob("*/.sweep") if any(s.iterdir())), None)
        time.sleep(0.01)
    assert sweep is not None and proc.poll() is None, \
        ("the sweep ended before it could be terminated", proc.poll(), "".join(errs)[-3000:])
    time.sleep(0.3)                 # the workers are inside their builds now
    t0 = time.monotonic()
    if to_group:
        os.killpg(proc.pid, signal.SIGTERM)
    else:
        proc.send_signal(signal.SIGTERM)
    closed = eof_out.wait(8) and eof_err.wait(max(0.1, 8 - (time.monotonic() - t0)))
    waited = time.monotonic() - t0
    left = _group_alive(proc.pid)
    # a process that has closed its pipes may still be tearing down (its cmdline already empty):
    # give it a moment to be gone, but it must be gone
    settle = time.monotonic() + 2
    while left and time.monotonic() < settle:
        time.sleep(0.05)
        left = _group_alive(proc.pid)
    if not closed or left:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    err = "".join(errs)
    assert closed, f"the caller's pipes were still open {waited:.1f} s after SIGTERM; alive: {left}"
    assert waited < 6, f"the pipes closed only {waited:.1f} s after SIGTERM"
    assert left == [], left
    assert proc.returncode == 143, (proc.returncode, err[-3000:])
    assert "Traceback" not in err, err[-3000:]
    assert "terminated" in err, err[-3000:]
    after = tree(d)
    assert after == before, sorted(set(after) ^ set(before))     # no repair/<id>/, no runs/.tmp-*
    # nothing of leapp_lab's or multiprocessing's (pymp-*) in the temp directory; `.ses` is the
    # session-id file onnxruntime_extensions writes on import (the egress rule's business)
    assert [p.name for p in tmpdir.iterdir() if p.name != ".ses"] == []


# SIGTERM while report.json, the last file of a verify run, is written (the files before it are done)
_TERM_AT_REPORT_JSON = """
real = j.atomic_write_text
def atomic_write_text(path, text):
    if os.path.basename(str(path)) == "report.json":
        os.kill(os.getpid(), signal.SIGTERM)
    return real(path, text)
j.atomic_write_text = atomic_write_text
"""


def test_sigterm_during_the_verify_save_leaves_no_tmp_run_and_moves_no_latest(w):
    """Before: the process died in the save, leaving runs/.tmp-<id>/ (and, with --json, the
    .NAME.tmp-* sibling being written)."""
    r = interrupting(["verify", REF, "build/model.ort"], "", w["dir"])
    assert r.returncode == 0, r.stderr
    before = tree(w["dir"])
    r = interrupting(["verify", REF, "build/model.ort"], _TERM_AT_REPORT_JSON, w["dir"])
    assert r.returncode == 143, (r.returncode, r.stderr[-2000:])
    assert "terminated" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert tree(w["dir"]) == before


# SIGTERM while compile writes the build's log into its hidden .NAME.tmp-* folder
_TERM_IN_COMPILE = """
real = j.atomic_write_text
def atomic_write_text(path, text):
    if ".tmp-" in str(path):
        os.kill(os.getpid(), signal.SIGTERM)
    return real(path, text)
j.atomic_write_text = atomic_write_text
"""


def test_sigterm_during_compile_leaves_no_tmp_sibling_and_keeps_the_build(w):
    """Before: the half-written .model.ort.tmp-* folder stayed beside the build."""
    before = tree(w["dir"])
    # --force: the build is there and unchanged, so compile would reuse it and have nothing to interrupt
    r = interrupting(["compile", ONNX, "--quiet", "--force"], _TERM_IN_COMPILE, w["dir"])
    assert r.returncode == 143, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    after = tree(w["dir"])
    assert after == before, sorted(set(after) ^ set(before))

"""An interrupt at any point exits 130 (Ctrl-C) / 143 (SIGTERM) with nothing half-committed
(docs/safety.md, "The signal rule"): during prepare's last writes, during the renames that commit
them, after the command finished, and during compile's ``import onnxruntime``.

Each case runs the real ``leapp-lab`` entry point (``main()`` with no argv: the console script's
path, ``_end_process`` included) in a subprocess whose hook stops at the exact point, on a private
copy of one prepared model (safety_helpers). The hooks only wait or send the signal; the work is
the real one.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from safety_helpers import copy_prepared, tree

PREPARE = ["prepare", "model.py", "--onnx-out", "build/model.onnx", "--npz-out", "build/model.npz",
           "--reference-out", "build/model.reference.npz", "--debug-taps", "all", "--quiet", "--force"]
COMPILE = ["compile", "build/model.onnx", "--quiet", "--force"]


def _start(argv: list[str], hook: str, cwd: Path, env: dict | None = None) -> subprocess.Popen:
    """``leapp-lab ARGV`` as the console script runs it, with ``hook`` run first."""
    driver = f"import os, signal, sys, time\n{hook}\nsys.argv[1:] = {argv!r}\nfrom leapp_lab.cli import main\nmain()\n"
    e = dict(os.environ, **(env or {}))
    e.pop("LEAPP_LAB_DEBUG", None)
    e.pop("LEAPP_LAB_FULL_EXIT", None)
    return subprocess.Popen([sys.executable, "-c", driver], cwd=cwd, env=e, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return proc.returncode, err


@pytest.fixture
def w(tmp_path_factory, tmp_path):
    return copy_prepared(tmp_path_factory, tmp_path / "w")


def _leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".tmp" in p.name or ".old-" in p.name)


# numpy writes prepare's reference npz into its temporary sibling: say so, then wait there for the
# test's Ctrl-C (a real SIGINT from outside, as a terminal sends it)
_WAIT_IN_REFERENCE_WRITE = """
import numpy as np
_real_savez = np.savez
def _savez(file, *a, **kw):
    name = os.readlink(f"/proc/self/fd/{file.fileno()}") if hasattr(file, "fileno") else str(file)
    if ".model.reference.npz" in name:
        open(os.environ["MARK"], "w").close()
        time.sleep(120)
    return _real_savez(file, *a, **kw)
np.savez = _savez
"""


def test_ctrl_c_during_prepares_final_write_exits_130_and_keeps_the_previous_outputs(w, tmp_path):
    """Before: a Ctrl-C at the end of prepare could exit 0, so ``prepare && compile`` carried on."""
    d = w["dir"]
    before = tree(d)
    mark = tmp_path / "in-the-write"
    proc = _start(PREPARE, _WAIT_IN_REFERENCE_WRITE, d, {"MARK": str(mark)})
    deadline = time.monotonic() + 240
    while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert mark.exists(), ("prepare never reached its final write", proc.poll())
    proc.send_signal(signal.SIGINT)
    rc, err = _finish(proc)
    assert rc == 130, (rc, err[-3000:])
    assert "interrupted" in err and "Traceback" not in err, err[-3000:]
    assert tree(d) == before, sorted(set(tree(d)) ^ set(before))     # every old output, byte for byte
    assert _leftovers(d) == []


# a Ctrl-C right after the first rename of prepare's commit (the ONNX into place): the other renames
# still happen (all new outputs, never some old and some new), then the command exits 130
_CTRL_C_AT_FIRST_RENAME = """
_real_replace, _sent = os.replace, []
def _replace(src, dst, *a, **kw):
    done = _real_replace(src, dst, *a, **kw)
    if not _sent and str(dst).endswith("model.onnx") and ".tmp-" in str(src):
        _sent.append(1)
        os.kill(os.getpid(), signal.SIGINT)
    return done
os.replace = _replace
"""


def test_ctrl_c_during_the_commit_renames_commits_every_output_or_none(w):
    """Before: the ONNX was the new one and the npz, the reference and the record the old ones."""
    d = w["dir"]
    rc, err = _finish(_start(PREPARE, _CTRL_C_AT_FIRST_RENAME, d))
    assert rc == 130, (rc, err[-3000:])
    assert "Traceback" not in err, err[-3000:]
    b = w["build_dir"]
    record = json.loads((b / "model.prepare" / "cache.json").read_text())
    for rel, meta in record["files"].items():      # the record names exactly the files in place
        got = hashlib.sha256((b / "model.prepare" / rel).resolve().read_bytes()).hexdigest()
        assert got == meta["sha256"], rel
    assert _leftovers(d) == []


_CTRL_C_AFTER_THE_COMMAND = """
import atexit
atexit.register(lambda: os.kill(os.getpid(), signal.SIGINT))
"""


def test_ctrl_c_after_the_outputs_are_saved_still_exits_130(w):
    """Before: a Ctrl-C while the process ended (its exit hooks) was swallowed: exit 0."""
    rc, err = _finish(_start(PREPARE, _CTRL_C_AFTER_THE_COMMAND, w["dir"]))
    assert rc == 130, (rc, err[-3000:])
    assert "interrupted" in err and "Traceback" not in err, err[-3000:]
    assert _leftovers(w["dir"]) == []


# SIGTERM while onnxruntime's native module initialises (its first import from Python code, the
# moment a terminal or CI job's signal is handled there): it became "ImportError: import numpy
# failed" and exit 3
_TERM_IN_ORT_INIT = """
import builtins, importlib.abc
_real_import, _state = builtins.__import__, {"in": False, "sent": False}
def _import(name, *a, **kw):
    if _state["in"] and not _state["sent"]:
        _state["sent"] = True
        open(os.environ["MARK"], "w").close()
        os.kill(os.getpid(), getattr(signal, os.environ["SIG"]))
    return _real_import(name, *a, **kw)
builtins.__import__ = _import
class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == os.environ["MODULE"]:
            _state["in"] = True
        return None
sys.meta_path.insert(0, _Finder())
"""


@pytest.mark.parametrize("module", ["onnxruntime", "onnxruntime.capi.onnxruntime_pybind11_state"])
@pytest.mark.parametrize("sig, code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_during_compiles_imports_exits_130_or_143_and_keeps_the_build(w, tmp_path, module, sig, code):
    d = w["dir"]
    before = tree(d)
    mark = tmp_path / "signalled"
    rc, err = _finish(_start(COMPILE, _TERM_IN_ORT_INIT, d, {"MARK": str(mark), "SIG": sig, "MODULE": module}))
    assert mark.exists(), ("the import was never reached", rc, err[-2000:])
    assert rc == code, (rc, err[-3000:])
    assert "internal error" not in err, err[-3000:]
    assert err.strip().splitlines()[-1].startswith("leapp-lab: ")
    assert tree(d) == before, sorted(set(tree(d)) ^ set(before))

"""Fixtures shared by the integration tests."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def mounted(tmp_path):
    """``mounted(name, opts)``: a tmpfs (read-only: ``"ro,size=1m"``; full: ``"size=16k"``) under
    tmp_path. Mounting needs root (CI and this machine run as root); elsewhere the test is skipped."""
    made = []

    def mount(name, opts):
        d = tmp_path / name
        d.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(d)], capture_output=True,
                           text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip() or 'mount failed'}); "
                        f"the full-disk cases are covered with RLIMIT_FSIZE in test_safety_commit.py")
        made.append(d)
        return d
    yield mount
    for d in reversed(made):
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


@pytest.fixture
def short_tmp():
    """A fresh, short folder under the system's temp dir, removed afterwards: for a TMPDIR of a
    process that starts a process pool. Its fork server's AF_UNIX socket lives in TMPDIR and its path
    must fit 107 bytes; under pytest-xdist tmp_path is /tmp/pytest-of-USER/pytest-N/popen-gwK/<test>/,
    too long for that (leapp_lab then starts the workers by spawn, not the path these tests mean)."""
    d = Path(tempfile.mkdtemp(prefix="lt-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)

"""A LEAPP outside the supported range is the user's environment, not a bug: exit 2, one line that
names the installed and the supported versions (never exit 3 with a traceback)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from leapp_lab._compat import SUPPORTED_SPEC

ROOT = Path(__file__).resolve().parents[2]


def _shadow_version(tmp_path: Path, version: str) -> Path:
    # importlib.metadata answers from the first leapp-*.dist-info on sys.path, as it does for an
    # older LEAPP installed in the environment
    d = tmp_path / f"leapp-{version}.dist-info"
    d.mkdir()
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: leapp\nVersion: {version}\n")
    return tmp_path


@pytest.mark.parametrize("version", ["0.6.1", "0.7.0", "0.8.0"])
def test_an_unsupported_leapp_exits_2_naming_both_versions(tmp_path, version):
    script = tmp_path / "export.py"
    script.write_text("print('never run')\n")
    (tmp_path / "site").mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(_shadow_version(tmp_path / "site", version)),
                                                        str(ROOT)]))
    r = subprocess.run([sys.executable, "-m", "leapp_lab.cli", "run", str(script)], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert f"LEAPP {version} is installed" in lines[0]
    assert SUPPORTED_SPEC in lines[0] and "never run" not in r.stdout

"""Shared by the test_safety_* modules: the real CLI in a subprocess, a tree fingerprint, the one-line
exit-2 check, and one prepared + compiled model per test session (docs/safety.md)."""
from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MLP_POLICY = ROOT / "tests" / "models" / "mlp_policy.py"

_CACHE: dict = {}


def cli(*args, cwd=None, fsize: int | None = None, mem: int | None = None, env: dict | None = None,
        timeout: float = 120, debug: bool = False) -> subprocess.CompletedProcess:
    """``leapp-lab ARGS`` in a subprocess. ``fsize``: RLIMIT_FSIZE in bytes (a disk that fills: a
    write past it fails with EFBIG, as ENOSPC would); ``mem``: RLIMIT_AS in bytes (an input read
    without end fails the test, not the machine)."""
    e = dict(os.environ)
    e.pop("LEAPP_LAB_DEBUG", None)
    e.update(env or {})
    pre = None
    if fsize is not None or mem is not None:
        def pre():
            if fsize is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
            if mem is not None:
                resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    cmd = [sys.executable, "-m", "leapp_lab.cli", *(["--debug"] if debug else []), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=e, timeout=timeout,
                          preexec_fn=pre)


_DRIVER = r"""
import contextlib, io, json, sys
from leapp_lab.cli import main
done = []
for argv in json.loads(sys.stdin.read()):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:          # argparse's own usage errors
            rc = exc.code if isinstance(exc.code, int) else 1
    done.append([argv, rc, out.getvalue(), err.getvalue()])
sys.__stdout__.write("\n@@results@@\n" + json.dumps(done))
"""


def cli_many(argvs: list[list], cwd=None, mem: int | None = None, env: dict | None = None,
             timeout: float = 300) -> list[subprocess.CompletedProcess]:
    """Several ``leapp-lab`` command lines, each through the CLI's ``main`` (exit status, stdout and
    stderr of each kept apart), in one subprocess: one interpreter start for a matrix of cases."""
    e = dict(os.environ)
    e.pop("LEAPP_LAB_DEBUG", None)
    e.update(env or {})
    pre = None
    if mem is not None:
        def pre():
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    r = subprocess.run([sys.executable, "-c", _DRIVER], input=json.dumps([[str(a) for a in v] for v in argvs]),
                       capture_output=True, text=True, cwd=cwd, env=e, timeout=timeout, preexec_fn=pre)
    assert r.returncode == 0, r.stderr[-3000:]
    done = json.loads(r.stdout.rsplit("\n@@results@@\n", 1)[1])
    return [subprocess.CompletedProcess(argv, rc, out, err) for argv, rc, out, err in done]


def refused_many(root: Path, cases: list[tuple[list, tuple]], **kw) -> list[str]:
    """Run every ``(argv, names)`` case (one subprocess, :func:`cli_many`); each must be refused with
    one line naming ``names``, and the tree under ``root`` must be byte-identical afterwards."""
    before = tree(root)
    results = cli_many([argv for argv, _ in cases], **kw)
    lines = []
    for (argv, names), r in zip(cases, results):
        try:
            lines.append(assert_refused(r, *names))
        except AssertionError as exc:
            raise AssertionError(f"leapp-lab {' '.join(map(str, argv))}: {exc}") from None
    assert tree(root) == before, "a refused command changed the tree"
    return lines


def interrupting(cli_args: list, hook: str, cwd: Path, tmpdir: Path | None = None,
                 timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the CLI with ``hook`` (Python run first, with ``os``, ``signal``, ``sys`` and
    ``leapp_lab.model.jsonio as j`` imported) in place: a hook sends a real SIGINT to the process
    when a given point is reached (or raises the OSError a full disk would), then does the real work."""
    driver = f"""
import os, signal, sys
import leapp_lab.model.jsonio as j
{hook}
from leapp_lab.cli import main
sys.exit(main({[str(a) for a in cli_args]!r}))
"""
    env = dict(os.environ)
    env.pop("LEAPP_LAB_DEBUG", None)
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=timeout)


def tree(root: Path) -> dict[str, str]:
    """Every path under ``root`` (hidden ones too) -> sha256 of a file, or what else it is."""
    out = {}
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = "link:" + os.readlink(p)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = "<dir>"
            elif stat.S_ISREG(st.st_mode):
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = f"<special {stat.S_IFMT(st.st_mode):o}>"
    return out


def assert_refused(r: subprocess.CompletedProcess, *names: str, code: int = 2) -> str:
    """Exit ``code`` with one line on stderr naming every one of ``names``, and no traceback."""
    assert r.returncode == code, (r.returncode, r.stdout[-2000:], r.stderr[-3000:])
    assert "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    for n in names:
        assert str(n) in lines[0], (n, lines[0])
    return lines[0]


def prepared(tmp_path_factory) -> dict[str, Path]:
    """tests/models/mlp_policy.py prepared (all taps) and compiled (ort) by the real CLI, once per
    session. Tests copy it (:func:`copy_prepared`) before doing anything hostile."""
    if "prepared" not in _CACHE:
        d = tmp_path_factory.mktemp("safety_prepared")
        shutil.copy(MLP_POLICY, d / "model.py")
        r = cli("prepare", "model.py", "--onnx-out", "build/model.onnx", "--npz-out", "build/model.npz",
                "--reference-out", "build/model.reference.npz", "--debug-taps", "all", "--quiet",
                cwd=d, timeout=600)
        assert r.returncode == 0, r.stderr
        r = cli("compile", "build/model.onnx", "--quiet", cwd=d, timeout=600)
        assert r.returncode == 0, r.stderr
        _CACHE["prepared"] = d
    return _CACHE["prepared"]


def copy_prepared(tmp_path_factory, dst: Path) -> dict[str, Path]:
    """A private copy of :func:`prepared` in ``dst``: model.py and build/ (onnx, npz, reference,
    model.prepare/, model.ort/)."""
    src = prepared(tmp_path_factory)
    shutil.copytree(src, dst, dirs_exist_ok=True)
    b = dst / "build"
    return {"dir": dst, "model": dst / "model.py", "build_dir": b, "onnx": b / "model.onnx",
            "npz": b / "model.npz", "reference": b / "model.reference.npz", "build": b / "model.ort",
            "record": b / "model.prepare"}

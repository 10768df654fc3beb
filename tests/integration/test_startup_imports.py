"""What a ``leapp-lab`` command imports before and while it does its work (issue 23: start-up paid in
every process). Each command runs in a fresh interpreter through the real CLI entry point
(``leapp_lab.cli.main``, as the ``leapp-lab`` script calls it); at exit the process writes its
``sys.modules``. Not a timing test: the module list (docs/verify.md, "Start-up", has the times).

- ``--help`` and every ``<command> --help``: argparse only (no numpy, nor any of the heavy packages);
- ``verify REF BUILD`` of a plain fp32 onnxruntime build: numpy, but no torch, onnx (its accuracy graph
  is read from the ONNX wire format), onnxruntime (the build holds its outputs), numba (few pairs:
  the numpy backend), pandas or plotly;
- ``report RUN`` of a saved run, ``diff RUN_A RUN_B`` of two: none of them either;
- a command imports only its own ``leapp_lab.cli.<name>`` module (the parser is built for it alone).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import verify_models as vm
from leapp_lab.cli import SUBCOMMANDS

HEAVY = {"torch", "onnx", "onnxruntime", "numba", "pandas", "plotly", "ml_dtypes"}

# the real CLI path; sys.modules is written at exit, after argparse's own exit (--help) too
WRAPPER = """
import atexit, json, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv[0] = "leapp-lab"
from leapp_lab.cli import main
sys.exit(main())
"""


def _modules(tmp_path, *argv) -> tuple[set[str], subprocess.CompletedProcess]:
    dump = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if k != "LEAPP_LAB_METRICS"}    # the default backend
    r = subprocess.run([sys.executable, "-c", WRAPPER, str(dump), *map(str, argv)], capture_output=True,
                       text=True, timeout=120, env=env)
    assert dump.is_file(), r.stderr[-2000:]
    return set(json.loads(dump.read_text())), r


def _top(mods: set[str]) -> set[str]:
    return {m.split(".")[0] for m in mods}


def _cli_modules(mods: set[str]) -> set[str]:
    return {m for m in mods if m.startswith("leapp_lab.cli.")}


def test_help_imports_neither_numpy_nor_any_command_dependency(tmp_path):
    mods, r = _modules(tmp_path, "--help")
    assert r.returncode == 0 and "verify" in r.stdout and "report" in r.stdout, r.stderr
    assert _top(mods) & (HEAVY | {"numpy"}) == set()
    # every command's module, for its line in the list, and nothing those commands would run
    assert _cli_modules(mods) == {f"leapp_lab.cli.{c}" for c in SUBCOMMANDS}
    assert not {m for m in mods if m.split(".")[:2] in (["leapp_lab", p] for p in
                                                        ("model", "compare", "taps", "views", "trace",
                                                         "onnxio", "numerics", "deep"))}
    # the --engine choices: the two packages' own light __init__, none of their modules
    assert not {m for m in mods if m.split(".")[:2] in (["leapp_lab", "steps"], ["leapp_lab", "engines"])
                and m.count(".") > 1}


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_a_commands_help_imports_only_its_own_module(tmp_path, command):
    mods, r = _modules(tmp_path, command, "--help")
    assert r.returncode == 0 and f"usage: leapp-lab {command}" in r.stdout, r.stderr
    assert _top(mods) & (HEAVY | {"numpy"}) == set()
    assert _cli_modules(mods) == {f"leapp_lab.cli.{command}"}


@pytest.fixture(scope="module")
def plain_build(tmp_path_factory):
    _, paths = vm.shared_net(tmp_path_factory)
    return paths, vm.shared_build(tmp_path_factory, "ort")


def test_verify_of_a_plain_build_imports_no_onnx_torch_ort_numba(tmp_path, plain_build):
    paths, build = plain_build
    mods, r = _modules(tmp_path, "verify", paths["reference"], build.path, "--out", tmp_path / "lab")
    assert r.returncode == 0 and "metrics backend: numpy" in r.stdout, r.stderr[-2000:]
    assert _top(mods) & HEAVY == set()
    assert _cli_modules(mods) == {"leapp_lab.cli.verify"}
    # the accuracy graph was read all the same (without onnx)
    report = json.loads(next((tmp_path / "lab" / "runs").glob("*/report.json")).read_text())
    assert report["graph"]["note"] is None and len(report["graph"]["nodes"]) > 5


def test_report_of_a_saved_run_imports_no_engine_or_frame_library(tmp_path, plain_build):
    import leapp_lab
    paths, build = plain_build
    run = leapp_lab.verify(paths["reference"], build.path, out=tmp_path / "lab").path
    mods, r = _modules(tmp_path, "report", run, "-o", tmp_path / "r.html")
    assert r.returncode == 0 and (tmp_path / "r.html").stat().st_size > 0, r.stderr[-2000:]
    assert _top(mods) & HEAVY == set()
    assert _cli_modules(mods) == {"leapp_lab.cli.report"}
    # a verify run's report class only, not every report kind's module
    assert {f"leapp_lab.model.{k}" for k in ("trace", "build", "prepare", "repair")} & mods == set()


def test_diff_of_two_saved_runs_imports_no_engine_or_frame_library(tmp_path, plain_build):
    import leapp_lab
    paths, build = plain_build
    a = leapp_lab.verify(paths["reference"], build.path, out=tmp_path / "a").path
    b = leapp_lab.verify(paths["reference"], build.path, out=tmp_path / "b").path
    mods, r = _modules(tmp_path, "diff", a, b, "--json", tmp_path / "d.json")
    assert r.returncode == 0 and json.loads((tmp_path / "d.json").read_text()), r.stderr[-2000:]
    assert _top(mods) & HEAVY == set()
    assert _cli_modules(mods) == {"leapp_lab.cli.diff"}

"""The four rules of docs/safety.md for the commands and writers that came after them: ``verify`` with
several builds (the compare run), ``diff``, ``repair``, ``compile --keep-fp32``, ``verify --local`` /
``--expected``, ``run`` with the deep checks (``--replay``, ``--step-fn``, ``--exporters``),
``report.to_model_explorer(DIR)`` and the notebook magics ``%leapp_diff``, ``%leapp_repair``,
``%%leapp_trace --replay``.

As in the other test_safety_* modules: the real CLI in subprocesses on real files; a refused command
exits 2 with one stderr line naming the offending path or option, prints no traceback, and leaves
every pre-existing file byte-identical (the tree is hashed before and after). One prepared model
(tests/models/mlp_policy.py) with an ort and an ort-fp16 build, two verify runs and a compare run is
made once per module and copied for each test.
"""
from __future__ import annotations

import io
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from safety_helpers import ROOT, assert_refused, cli_many, copy_prepared, interrupting, refused_many, tree

REF = "build/model.reference.npz"
ONNX = "build/model.onnx"
PIPELINES = ROOT / "tests" / "pipelines"
# a repair small enough for a test: the int8 engine, a target it cannot meet, 4 builds at most
REPAIR = ["repair", REF, ONNX, "--engine", "ort-int8", "--target-nrmse", "1e-9", "--budget", "4"]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    w = copy_prepared(tmp_path_factory, tmp_path_factory.mktemp("safety_new") / "w")
    d = w["dir"]
    for r in cli_many([["compile", ONNX, "--engine", "ort-fp16", "--quiet"],
                       ["verify", REF, "build/model.ort", "--out", "runsA"],
                       ["verify", REF, "build/model.ort-fp16", "--out", "runsB"],
                       ["verify", REF, "build/model.ort", "build/model.ort-fp16", "--out", "runsC"]], cwd=d):
        assert r.returncode == 0, (r.args, r.stderr[-2000:])
    shutil.copy(PIPELINES / "warm_start.py", d / "ws.py")
    shutil.copy(PIPELINES / "clean_mlp.py", d / "clean.py")
    return d


@pytest.fixture
def w(base, tmp_path):
    d = tmp_path / "w"
    shutil.copytree(base, d, symlinks=True)
    runs = {k: next(p for p in (d / f"runs{k}" / "runs").iterdir() if k != "C" or "compare" in p.name)
            for k in "ABC"}
    return {"dir": d, **{k: str(v.relative_to(d)) for k, v in runs.items()}}


def _assert_unchanged(d: Path, before: dict, r: subprocess.CompletedProcess | None = None):
    after = tree(d)
    assert after == before, (sorted(set(after) ^ set(before)),
                             [k for k in before if k in after and after[k] != before[k]],
                             r.stderr[-1500:] if r is not None else "")


# == 1. an output never destroys an input or anything leapp_lab did not write ======================

def test_verify_with_several_builds_checks_every_output_against_every_input_first(w):
    """Before: --json onto the reference or the ONNX replaced it (exit 0), --html went inside a
    build, and --out inside the second build was refused only after the first build's run had been
    saved there."""
    d = w["dir"]
    (d / "mine.json").write_text(json.dumps({"kind": "my-notes"}))
    v = ["verify", REF, "build/model.ort", "build/model.ort-fp16"]
    refused_many(d, [(v + args, names) for args, names in [
        (["--no-save", "--json", REF], (f"--json {REF}", "is the input")),
        (["--no-save", "--json", ONNX], (f"--json {ONNX}", "not a `leapp-lab verify --json` file")),
        (["--no-save", "--json", "mine.json"], ("--json mine.json",)),
        (["--no-save", "--json", "build/model.ort-fp16/v.json"], ("build/model.ort-fp16/v.json", "lies inside")),
        (["--no-save", "--html", "build/model.ort-fp16/r.html"], ("build/model.ort-fp16/r.html", "lies inside")),
        (["--out", "build/model.ort-fp16"], ("--out build/model.ort-fp16", "lies inside the input")),
        (["--out", "build/model.ort"], ("--out build/model.ort", "lies inside the input")),
    ]], cwd=d)
    # its own --json (a compare's rows) is replaced by the next run of the same command
    for r in cli_many([v + ["--no-save", "--json", "c.json"], v + ["--no-save", "--json", "c.json"]], cwd=d):
        assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads((d / "c.json").read_text())["kind"] == "compare-rows"


def test_diff_outputs_never_replace_a_run_or_a_foreign_file(w):
    """Before: --json onto RUN_A's report.json, the reference or a user's file replaced it, and
    --out / --html put files into RUN_A (all exit 0)."""
    d, a, b = w["dir"], w["A"], w["B"]
    (d / "mine.json").write_text(json.dumps({"kind": "my-notes"}))
    refused_many(d, [(["diff", a, b, *args], names) for args, names in [
        (["--json", f"{a}/report.json"], (f"--json {a}/report.json", "lies inside the input")),
        (["--json", f"{a}/metrics.csv"], (f"{a}/metrics.csv",)),
        (["--json", REF], (f"--json {REF}", "not a `leapp-lab diff --json`")),
        (["--json", "mine.json"], ("--json mine.json",)),
        (["--json", a], (f"--json {a}", "is the input")),
        (["--html", f"{a}/d.html"], (f"--html {a}/d.html", "lies inside the input")),
        (["--html", "build/model.npz"], ("--html build/model.npz", "not an HTML report")),
        (["--out", a], (f"--out {a}", "lies inside the input")),
        (["--out", f"{b}/sub"], (f"--out {b}/sub", "lies inside the input")),
        (["--json", "x.json", "--html", "x.json"], ("x.json", "also given")),
    ]], cwd=d)
    # its own outputs are replaced on the next diff; a diff may be saved beside the runs it compares
    before_a = {k: v for k, v in tree(d).items() if k.startswith(a)}
    steps = [["diff", a, b, "--json", "d.json", "--html", "d.html", "--out", "runsD"]] * 2 + \
            [["diff", a, b, "--out", "runsA"]]
    for r in cli_many(steps, cwd=d):
        assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads((d / "d.json").read_text())["kind"] == "compare-rows"
    assert len(list((d / "runsD" / "runs").iterdir())) == 2
    assert {k: v for k, v in tree(d).items() if k.startswith(a)} == before_a


def test_repair_outputs_never_replace_an_input_and_are_checked_before_any_build(w):
    """Before: --json onto the reference or the ONNX replaced it after the sweep (exit 1); --html onto
    the input npz was refused only after the sweep, and --out inside the ONNX with a message naming
    a hidden .sweep folder."""
    d = w["dir"]
    refused_many(d, [(REPAIR + ["--jobs", "1", "--quiet", *args], names) for args, names in [
        (["--json", REF], (f"--json {REF}", "is the input")),
        (["--json", ONNX], (f"--json {ONNX}", "is the input")),
        (["--json", "build/model.npz"], ("--json build/model.npz", "is the input")),
        (["--json", "build/model.ort"], ("--json build/model.ort", "folder")),
        (["--html", "build/model.npz"], ("--html build/model.npz",)),
        (["--out", ONNX], (f"--out {ONNX}", "is the input", "a file; choose an output folder")),
        (["--json", "r.json", "--html", "r.json"], ("r.json", "also given")),
    ]], cwd=d)


def test_model_explorer_files_never_land_in_an_input_or_on_a_foreign_file(w, monkeypatch):
    """Before: the node-data files were written into the build (an input of the report) and over a
    file of the same name that leapp_lab did not write, one by one."""
    import leapp_lab
    from leapp_lab.model.errors import UnsafeOutput

    d = w["dir"]
    monkeypatch.chdir(d)
    rep = leapp_lab.load(w["A"])
    (d / "mx").mkdir()
    (d / "mx" / "model_nonfinite.json").write_text('{"mine": true}\n')
    before = tree(d)
    for target, says in [("build/model.ort", "lies inside the input build/model.ort"),
                         ("build/model.ort/mx", "lies inside the input build/model.ort"),
                         (REF, rf"is the input {REF} \(the reference npz\), a file"), (ONNX, f"{ONNX} is a file, not a folder"),
                         ("mx", "mx/model_nonfinite.json: already exists")]:
        with pytest.raises(UnsafeOutput, match=says):
            rep.to_model_explorer(target)
        _assert_unchanged(d, before)
    # a new folder, the run folder itself, and again onto what it wrote: every file, all replaced
    for target in ("mx2", w["A"], "mx2"):
        paths = rep.to_model_explorer(target)
        assert [p.name for p in paths] == [f"model_{m}.json" for m in
                                           ("nrmse", "max_abs", "mape", "nonfinite", "diverged")]
    assert not [p for p in (d / "mx2").iterdir() if p.name.startswith(".")]


def test_model_explorer_into_a_read_only_folder_names_it(w, mounted):
    import leapp_lab
    ro = mounted("ro", "ro,size=1m")
    rep = leapp_lab.load(w["dir"] / w["A"])
    with pytest.raises(OSError) as e:
        rep.to_model_explorer(ro / "mx")
    assert str(ro) in str(e.value) and e.value.errno is not None


# == 2. a failed or interrupted save never commits ==================================================

_REPAIR_SAVE_FULL = """
real = j.atomic_write_text
def atomic_write_text(path, text):
    p = os.path.abspath(str(path))
    if os.path.basename(p) == "report.json" and "-repair-" in os.path.basename(os.path.dirname(p)):
        raise OSError(28, "No space left on device", p)
    return real(path, text)
j.atomic_write_text = atomic_write_text
"""

_REPAIR_CTRL_C_IN_SWEEP = """
import leapp_lab.cli.repair as cr
def progress(stage, done, total):
    if stage.startswith("round 1"):
        os.kill(os.getpid(), signal.SIGINT)
cr._stderr_progress = progress
"""


def test_a_repair_that_fails_to_save_or_is_interrupted_leaves_nothing_behind(w, tmp_path):
    """Before: a disk that filled while the repair's report was saved left its kept builds and
    verify runs in <out>/repair/<id>/ with no run naming them; Ctrl-C in the sweep left an empty
    <out>/repair folder."""
    d = w["dir"]
    before = tree(d)
    r = interrupting(REPAIR + ["--jobs", "1", "--quiet"], _REPAIR_SAVE_FULL, d)
    assert_refused(r, "No space left on device", "build/leapp_lab/runs")
    _assert_unchanged(d, before, r)
    r = interrupting(REPAIR + ["--jobs", "1"], _REPAIR_CTRL_C_IN_SWEEP, d)
    assert r.returncode == 130 and "Traceback" not in r.stderr, r.stderr[-2000:]
    _assert_unchanged(d, before, r)


def test_ctrl_c_in_a_process_pool_sweep_leaves_nothing_behind(w, short_tmp):
    """A real SIGINT to the process group (a terminal's Ctrl-C reaches the pool's workers too), sent
    as soon as a sweep build is being written. Before: an empty <out>/repair/ was left; and now and
    then the sweep hung (a worker forked while the SIGINT landed was unknown to the pool and blocked
    on its queue for ever), or left onnxruntime's ort.quant.* folders in the temp directory."""
    d = w["dir"]
    tmpdir = short_tmp              # the fork server's socket goes there (conftest.short_tmp)
    before = tree(d)
    env = dict(os.environ, TMPDIR=str(tmpdir))
    env.pop("LEAPP_LAB_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "leapp_lab.cli", *REPAIR, "--jobs", "2"], cwd=d, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 240
    sweep = None
    while proc.poll() is None and time.monotonic() < deadline:
        sweep = next((s for s in (d / "build" / "leapp_lab" / "repair").glob("*/.sweep") if any(s.iterdir())),
                     None) if (d / "build" / "leapp_lab" / "repair").is_dir() else None
        if sweep is not None:
            break
        time.sleep(0.01)
    if sweep is None or proc.poll() is not None:
        proc.kill()
        raise AssertionError(("the sweep ended before it could be interrupted", proc.wait(),
                              proc.stderr.read()[-3000:]))
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:        # a sweep that hangs on Ctrl-C fails here, not the suite
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("Ctrl-C did not end the sweep within 120 s") from None
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    _assert_unchanged(d, before)
    # nothing of leapp_lab's (or the pool's) in the temp directory; `.ses` is the session-id file
    # onnxruntime_extensions writes there on import, in every run
    assert [p.name for p in tmpdir.iterdir() if p.name != ".ses"] == []


_COMPARE_CTRL_C = """
real = j.atomic_write_text
def atomic_write_text(path, text):
    p = os.path.abspath(str(path))
    if os.path.basename(p) == "report.json" and "-compare-" in p:
        os.kill(os.getpid(), signal.SIGINT)
    return real(path, text)
j.atomic_write_text = atomic_write_text
"""


def test_an_interrupted_compare_save_commits_no_compare_run(w):
    """The builds' verify runs and the compare run are written first and committed together at the
    end (check, then work, then commit): Ctrl-C in the compare's save commits none of them, and
    `latest` stays. (Before: the builds' runs were committed, only the compare was not.)"""
    d = w["dir"]
    before = tree(d)
    r = interrupting(["verify", REF, "build/model.ort", "build/model.ort-fp16", "--out", "runsC"],
                     _COMPARE_CTRL_C, d)
    assert r.returncode == 130 and "Traceback" not in r.stderr, r.stderr[-2000:]
    _assert_unchanged(d, before, r)


_REPLAY_CTRL_C = """
real = j.atomic_write_text
def atomic_write_text(path, text):
    if "replay.json" in os.path.basename(str(path)):
        os.kill(os.getpid(), signal.SIGINT)
    return real(path, text)
j.atomic_write_text = atomic_write_text
"""

_EXPORTERS_CTRL_C = """
import leapp_lab.deep.exporters as ex
real = ex.report_progress
def report_progress(progress, stage, done, total):
    if done == 1:
        os.kill(os.getpid(), signal.SIGINT)
    return real(progress, stage, done, total)
ex.report_progress = report_progress
"""


def _one_run(out: Path) -> Path:
    (run,) = [p for p in out.glob("*/leapp_lab/runs/*") if not p.name.startswith(".")]
    return run


def test_an_interrupted_deep_check_leaves_the_committed_run_as_it_was(w):
    """Before: Ctrl-C while the replay section was saved left replay.npz without its replay.json in
    the committed run; Ctrl-C in the exporter matrix left the re-runs' half of <run>/exporters/."""
    import leapp_lab

    d = w["dir"]
    r = interrupting(["run", "ws.py", "--replay", "3", "--quiet", "--", "out1"], _REPLAY_CTRL_C, d)
    assert r.returncode == 130 and "Traceback" not in r.stderr, r.stderr[-2000:]
    run = _one_run(d / "out1")
    names = sorted(p.name for p in run.iterdir())
    assert "report.json" in names and not [n for n in names if n.startswith(("replay", "."))], names
    assert leapp_lab.load(run).graph.replay is None

    r = interrupting(["run", "clean.py", "--exporters", "preprocess", "--quiet", "--", "out2"],
                     _EXPORTERS_CTRL_C, d)
    assert r.returncode == 130 and "Traceback" not in r.stderr, r.stderr[-2000:]
    run = _one_run(d / "out2")
    names = sorted(p.name for p in run.iterdir())
    assert "report.json" in names and not [n for n in names if n.startswith(("exporters", "."))], names
    assert leapp_lab.load(run).graph.exporters is None


# == 3. invalid options exit 2 before anything is done ===============================================

def test_invalid_repair_and_keep_fp32_options_exit_2_and_write_nothing(w):
    """Before: --jobs 0 / -1 and a malformed or unreachable --dask address were refused only after
    <onnx dir>/leapp_lab/repair/ had been made."""
    d = w["dir"]
    cases = [(REPAIR[:5] + [opt, value], (opt, value)) for opt, value in [
        ("--target-nrmse", "nan"), ("--target-nrmse", "-1"), ("--target-nrmse", "0"), ("--target-nrmse", "inf"),
        ("--budget", "0"), ("--budget", "-3"), ("--jobs", "0"), ("--jobs", "-1"),
    ]]
    # malformed, and a scheduler port nobody listens on (refused at once, before a Client is made)
    cases += [(REPAIR + ["--quiet", "--dask", addr], ("Dask", addr))
              for addr in ("notanaddress", "foo://x:1", "tcp://127.0.0.1:1")]
    cases += [(["compile", ONNX, "--engine", "ort-int8", "--keep-fp32", "no_such_node", "--out", "o.ort",
                "--quiet"], ("no_such_node",))]
    refused_many(d, cases, cwd=d)


def test_the_repair_api_refuses_them_with_invalid_option(w, monkeypatch):
    import leapp_lab
    from leapp_lab.model.errors import InvalidOption

    d = w["dir"]
    monkeypatch.chdir(d)
    before = tree(d)
    for kw, says in [({"target_nrmse": math.nan}, "target-nrmse"), ({"target_nrmse": -1.0}, "target-nrmse"),
                     ({"target_nrmse": 0}, "target-nrmse"), ({"budget": 0}, "budget"), ({"jobs": 0}, "jobs"),
                     ({"jobs": 2.5}, "jobs"), ({"engine": "ort"}, "engine")]:
        with pytest.raises(InvalidOption, match=says):
            leapp_lab.repair(REF, ONNX, **{"engine": "ort-int8", **kw})
    _assert_unchanged(d, before)


# == 4. unusable input exits 2 with one line; what verify can do without is a warning ================

def test_a_step_fn_that_cannot_be_imported_exits_2_before_the_script_runs(w):
    """Before: a --step-fn module that raised, called sys.exit() or did not parse at import gave a
    traceback and exit 3 (or the module's own exit status)."""
    d = w["dir"]
    (d / "raises.py").write_text("raise RuntimeError('boom at import')\n")
    (d / "exits.py").write_text("import sys\nsys.exit(4)\n")
    (d / "broken.py").write_text("def step(:\n")
    os.mkfifo(d / "pipe.py")            # before: "no such file pipe.py" for a FIFO and a folder
    (d / "folder.py").mkdir()
    run = ["run", "ws.py", "--replay", "2", "--quiet", "--step-fn"]
    refused_many(d, [(run + [spec, "--", "out"], names) for spec, names in [
        ("raises.py:step", ("--step-fn", "raises.py:step", "boom at import")),
        ("raises:step", ("--step-fn", "raises:step", "boom at import")),
        ("exits:step", ("--step-fn", "exits:step", "sys.exit(4)")),
        ("broken.py:step", ("--step-fn", "broken.py:step", "SyntaxError")),
        ("nocolon", ("--step-fn", "nocolon")),
        ("ws:no_such_fn", ("--step-fn", "no_such_fn")),
        ("missing.py:f", ("--step-fn", "missing.py")),
        ("pipe.py:step", ("--step-fn", "pipe.py", "is a FIFO")),
        ("folder.py:step", ("--step-fn", "folder.py", "is a folder")),
    ]], cwd=d)


def test_verify_local_and_expected_warn_when_they_cannot_run(w):
    """Before: an engine.onnx that is not a protobuf made `verify --local` end in a traceback (exit 3)."""
    d = w["dir"]
    for name, content in (("garbage", b"not an onnx model at all"), ("cut", None)):
        b = d / f"{name}.ort"
        shutil.copytree(d / "build" / "model.ort", b)
        data = (b / "engine.onnx").read_bytes()
        (b / "engine.onnx").write_bytes(content if content is not None else data[: len(data) // 3])
    # no prepare record: nothing to re-run (a moved or changed MODEL.py is refused, exit 2:
    # test_safety_exec.py)
    shutil.rmtree(d / "build" / "model.prepare")
    before = tree(d)
    for r in cli_many([["verify", REF, f"{n}.ort", "--no-save", "--local", "--expected", "fp16"]
                       for n in ("garbage", "cut")], cwd=d):
        assert r.returncode == 0, (r.args, r.stdout[-1500:], r.stderr[-3000:])
        assert "Traceback" not in r.stderr
        assert "no local error: engine.onnx" in r.stdout and "not a readable ONNX model" in r.stdout, r.stdout[-1500:]
        assert "no expected fp16 drift" in r.stdout and "no prepare report" in r.stdout
    _assert_unchanged(d, before)


def test_a_compare_run_with_a_malformed_side_names_that_file(w):
    """Before: the compare run's own report.json was named, with a TypeError, not the side's file."""
    d, c = w["dir"], w["C"]
    side = d / c / "sides" / "A" / "report.json"
    doc = json.loads(side.read_text())
    side.write_text(json.dumps({**doc, "rows": 5}))
    refused_many(d, [(["report", c, "-o", "c.html"], (f"{c}/sides/A/report.json", "'rows'")),
                     (["diff", c, w["B"]], (f"{c}/sides/A/report.json", "'rows'"))], cwd=d)


# == the notebook: a user's error is one line (UsageError), never a traceback ========================

@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell
    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    with redirect_stdout(io.StringIO()):
        assert sh.run_cell("%load_ext leapp_lab").error_in_exec is None
    yield sh
    InteractiveShell.clear_instance()


def test_magic_user_errors_are_one_line(w, shell, monkeypatch):
    """Before: %leapp_diff / %leapp_repair with --json on a folder, and %%leapp_trace --save-path on
    a file, showed a traceback; %leapp_diff --json onto RUN_A's report replaced it."""
    from IPython.core.error import UsageError

    d, a, b = w["dir"], w["A"], w["B"]
    monkeypatch.chdir(d)
    (d / "afile").write_text("mine\n")
    before = tree(d)
    cell = "x = annotate.input_tensors('n', {'o': torch.ones(2)})\n" \
           "annotate.output_tensors('n', {'a': x * 2}, export_with='jit')"
    cases = [(f"%leapp_diff {a} {b} --json {a}", ("%leapp_diff", a, "is the input")),
             (f"%leapp_diff {a} {b} --json build", ("%leapp_diff", "build", "folder")),
             (f"%leapp_diff {a} {b} --json {a}/report.json", ("%leapp_diff", "lies inside")),
             (f"%leapp_diff {a} afile", ("%leapp_diff", "afile")),
             (f"%leapp_repair {REF} {ONNX} --engine ort-int8 --jobs 0", ("%leapp_repair", "--jobs")),
             (f"%leapp_repair {REF} {ONNX} --engine ort-int8 --target-nrmse nan", ("%leapp_repair", "nan")),
             (f"%leapp_repair {REF} {ONNX} --engine ort-int8 --quiet --json build/model.ort",
              ("%leapp_repair", "build/model.ort", "folder")),
             (f"%%leapp_trace t1 --save-path afile --replay 2\n{cell}", ("--save-path", "afile")),
             (f"%%leapp_trace t1 --save-path out --replay 0\n{cell}", ("--replay 0",)),
             (f"%%leapp_trace t1 --save-path out --replay 2 --step-fn nofn\n{cell}", ("--step-fn", "nofn"))]
    for src, names in cases:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            res = shell.run_cell(src)
        text = out.getvalue() + err.getvalue()
        assert isinstance(res.error_in_exec, UsageError), (src, repr(res.error_in_exec), text[-2000:])
        assert "Traceback" not in text, (src, text[-2000:])
        msg = str(res.error_in_exec)
        assert all(n in msg for n in names), (src, msg)
    _assert_unchanged(d, before)

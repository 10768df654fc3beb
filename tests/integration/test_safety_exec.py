"""docs/safety.md, "Code execution": ``verify --expected`` runs only the exact MODEL.py prepare
recorded (its absolute path, its sha256 checked before it runs), never a same-named file of the
working folder; a missing, changed or unrecorded file is refused before it runs, and user code that
ends the process is exit 2 naming the file. Real prepare, compile and verify, in subprocesses."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from safety_helpers import MLP_POLICY, assert_refused, cli

#: mlp_policy, able to end the process at import when the test asks (prepare imports it unasked)
_DIE = '''import os
_die = os.environ.get("LEAPP_LAB_TEST_DIE")
if _die == "os._exit":
    os._exit(0)
if _die == "abort":
    os.abort()
if _die == "sys.exit":
    raise SystemExit(3)
'''
VERIFY = ["verify", "build/model.reference.npz", "build/model.ort", "--expected", "fp16"]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("exec")
    (d / "model.py").write_text(_DIE + MLP_POLICY.read_text())
    r = cli("prepare", "model.py", "--onnx-out", "build/model.onnx", "--npz-out", "build/model.npz",
            "--reference-out", "build/model.reference.npz", "--debug-taps", "all", "--quiet", cwd=d,
            timeout=600)
    assert r.returncode == 0, r.stderr
    r = cli("compile", "build/model.onnx", "--quiet", cwd=d, timeout=600)
    assert r.returncode == 0, r.stderr
    return d


def test_prepare_records_the_file_by_absolute_path_and_sha256(made):
    import hashlib
    d = json.loads((made / "build" / "model.prepare" / "report.json").read_text())
    assert d["model"] == "model.py"
    assert d["model_file"] == str((made / "model.py").resolve())
    assert d["model_sha256"] == hashlib.sha256((made / "model.py").read_bytes()).hexdigest()


def test_a_same_named_file_in_the_working_folder_is_never_run(made, tmp_path):
    """cd elsewhere && leapp-lab verify ../REF ../BUILD --expected fp16, beside an unrelated
    elsewhere/model.py (the recorded name): the recorded file runs, the other one never does."""
    elsewhere = made / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    marker = tmp_path / "MARKER"
    (elsewhere / "model.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    r = cli(*["../" + a if a.startswith("build/") else a for a in VERIFY], "--no-save",
            "--json", tmp_path / "v.json", cwd=elsewhere)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not marker.exists(), "a file of the working folder was executed"
    rows = [x for x in json.loads((tmp_path / "v.json").read_text())["rows"] if x["status"] == "compared"]
    assert rows and all(x["expected_nrmse"] is not None for x in rows), rows   # the right model ran


def test_a_changed_missing_or_unhashed_model_is_refused_before_it_runs(made, tmp_path):
    model = made / "model.py"
    record = made / "build" / "model.prepare" / "report.json"
    source, rec = model.read_text(), record.read_text()
    marker = tmp_path / "MARKER"
    out = tmp_path / "runs"
    try:
        # edited since prepare, so that it would write a marker at import: refused, never run
        model.write_text(source + f"\nopen({str(marker)!r}, 'w').write('ran')\n")
        line = assert_refused(cli(*VERIFY, "--out", out, cwd=made), str(model), "changed since prepare")
        assert str(record.relative_to(made)) in line
        assert not marker.exists() and not out.exists()
        # moved away: refused naming the recorded path
        model.rename(made / "moved.py")
        assert_refused(cli(*VERIFY, "--no-save", cwd=made), str(model), "not there any more")
        (made / "moved.py").rename(model)
        model.write_text(source)
        # a record without the hash (written by an older leapp_lab): refused, the file is not run
        model.write_text(source + f"\nopen({str(marker)!r}, 'w').write('ran')\n")
        d = json.loads(rec)
        del d["model_file"], d["model_sha256"]
        record.write_text(json.dumps(d))
        assert_refused(cli(*VERIFY, "--no-save", cwd=made), "records no sha256", "re-run prepare")
        assert not marker.exists()
    finally:
        if (made / "moved.py").exists():
            (made / "moved.py").rename(model)
        model.write_text(source)
        record.write_text(rec)
    assert cli(*VERIFY, "--no-save", cwd=made).returncode == 0     # restored: accepted again


@pytest.mark.parametrize("die,says", [("os._exit", "exit status 0"), ("abort", "killed by SIGABRT"),
                                      ("sys.exit", "sys.exit(3)")])
def test_user_code_that_ends_the_process_is_exit_2_naming_the_file(made, tmp_path, die, says):
    out = tmp_path / "runs"
    r = cli(*VERIFY, "--out", out, cwd=made, env={"LEAPP_LAB_TEST_DIE": die})
    line = assert_refused(r, str(made / "model.py"), says)
    assert "--expected" in line
    assert not out.exists(), "a refused verify saved a run"
    assert r.stdout == ""
    shutil.rmtree(out, ignore_errors=True)


# == run's deep checks run the script again: that file, by absolute path, unchanged ================

_EXPORT_PASS = (Path(__file__).resolve().parents[1] / "scripts" / "export_pass.py").read_text()


def test_run_again_is_the_script_by_absolute_path_never_a_same_named_file(tmp_path):
    """The script moves to another folder (os.chdir) that holds a file of the same name: the
    re-runs of --isolate run the script itself again (it used to be the other file)."""
    ran, wrong, other = tmp_path / "ran", tmp_path / "wrong", tmp_path / "other"
    other.mkdir()
    (other / "export.py").write_text(f"open({str(wrong)!r}, 'a').write('ran\\n')\n")
    (tmp_path / "export.py").write_text(f"import os\nopen({str(ran)!r}, 'a').write('ran\\n')\n"
                                        f"os.chdir({str(other)!r})\n" + _EXPORT_PASS)
    r = cli("run", "export.py", "--isolate", "--json", tmp_path / "r.json", "--", tmp_path / "out",
            cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert not wrong.exists(), "a same-named file of the working folder was run"
    assert ran.read_text().count("ran") > 1          # the first run and the re-runs


def test_a_script_that_changed_is_not_run_again(tmp_path):
    """The script edits itself during its first run: no re-run, and the section names the file."""
    ran = tmp_path / "ran"
    s = tmp_path / "export.py"
    s.write_text(f"open({str(ran)!r}, 'a').write('ran\\n')\n" + _EXPORT_PASS +
                 "\nopen(__file__, 'a').write('# edited\\n')\n")
    r = cli("run", "export.py", "--isolate", "--json", tmp_path / "r.json", "--", tmp_path / "out",
            cwd=tmp_path, timeout=600)
    assert ran.read_text() == "ran\n", "the changed script was run again"
    (g,) = json.loads((tmp_path / "r.json").read_text())["graphs"]
    assert g["isolation"]["status"] == "failed", g["isolation"]
    assert str(s) in g["isolation"]["reason"] and "changed" in g["isolation"]["reason"]

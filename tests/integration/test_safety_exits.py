"""docs/safety.md, "Exit status of every command": the exits as documented, in the cases that got
them wrong. A gate that judged no value fails (exit 1); a run folder that cannot be written is exit 2
whatever --no-fail says; an unknown --exporters node is exit 2 before the script runs again (an empty
one before it runs at all); repair refuses an npz holding a pickle before the sweep, in one line.
(User code that ends the process during --expected: test_safety_exec.py.) Real CLI, real files."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from safety_helpers import assert_refused, cli, copy_prepared

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def test_zero_samples_on_both_sides_fail_the_gate(tmp_path):
    """Every output "agrees" on 0 samples: nothing was judged, so --max-mape 1 must not PASS."""
    b = tmp_path / "model.ort"
    b.mkdir()
    z = np.zeros((0, 3), np.float32)
    np.savez(tmp_path / "ref.npz", out=z, other=np.zeros((0, 2, 2), np.float32))
    np.savez(b / "sample_outputs.npz", out=z, other=np.zeros((0, 2, 2), np.float32))
    r = cli("verify", tmp_path / "ref.npz", b, "--no-save", "--max-mape", "1", "--json", tmp_path / "v.json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "PASS" not in r.stdout and "judged nothing" in r.stdout and "0 samples on both sides" in r.stdout
    assert json.loads((tmp_path / "v.json").read_text())["exit_code"] == 1
    import leapp_lab
    assert leapp_lab.verify(tmp_path / "ref.npz", b, save=False, max_mape=1).exit_code == 1


def _script(tmp_path: Path, marker: Path) -> Path:
    """tests/scripts/export_pass.py, noting each run of it in ``marker``."""
    s = tmp_path / "export.py"
    s.write_text(f"open({str(marker)!r}, 'a').write('ran\\n')\n" + (SCRIPTS / "export_pass.py").read_text())
    return s


def test_a_run_folder_that_cannot_be_written_is_exit_2_whatever_no_fail_says(tmp_path):
    marker = tmp_path / "ran"
    s = _script(tmp_path, marker)
    # RLIMIT_FSIZE: LEAPP's own artifacts (2.4 kB at most) fit, the run folder's report.json (19 kB)
    # does not (EFBIG, as on a full disk)
    r = cli("run", s, "--no-fail", "--", tmp_path / "out", cwd=tmp_path, fsize=8 * 1024)
    assert marker.read_text() == "ran\n", r.stderr            # the script itself ran and passed
    assert r.returncode == 2, r.stdout + r.stderr
    assert "could not write the run folder of graph 'passing'" in r.stderr
    assert "File too large" in r.stderr and "exit 2 (a run folder could not be written" in r.stderr
    # without --no-fail it is the same exit: exit_status, on a real AttachResult of a saved report
    from leapp_lab.model.trace import TraceReport
    from leapp_lab.trace.attach import AttachResult, exit_status
    res = AttachResult(report=TraceReport(), script_raised=False, unsaved=["graph 'g': EFBIG"])
    assert exit_status(res, no_fail=False) == exit_status(res, no_fail=True) == 2


def test_an_empty_exporters_node_is_exit_2_before_the_script_runs(tmp_path):
    marker = tmp_path / "ran"
    r = cli("run", _script(tmp_path, marker), "--exporters", "", "--", tmp_path / "out", cwd=tmp_path)
    assert_refused(r, "--exporters ''")
    assert not marker.exists(), "the script ran"


def test_an_unknown_exporters_node_is_exit_2_before_the_script_runs_again(tmp_path):
    """The node names come from the graphs the script compiles: it runs once (its trace is its own
    run), then the unknown node is refused, naming the nodes, before any re-run."""
    marker = tmp_path / "ran"
    r = cli("run", _script(tmp_path, marker), "--exporters", "nosuchnode", "--", tmp_path / "out",
            cwd=tmp_path)
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("leapp-lab run: error")]
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "KeyError" not in r.stdout + r.stderr
    assert len(err) == 1 and "'nosuchnode'" in err[0] and "nodes: head, pre" in err[0], r.stderr
    assert marker.read_text() == "ran\n", "the script ran again for an unknown node"
    assert not list((tmp_path / "out").rglob("exporters"))


def test_repair_refuses_a_pickled_npz_before_the_sweep(tmp_path_factory, tmp_path):
    w = copy_prepared(tmp_path_factory, tmp_path / "w")
    with np.load(w["reference"]) as z:
        arrays = {k: z[k] for k in z.files}
    np.savez(tmp_path / "pickled_ref.npz", **arrays, extra=np.array([{"a": 1}], dtype=object))
    np.savez(tmp_path / "pickled_in.npz", obs=np.array([{"a": 1}], dtype=object))
    for args, names in (([tmp_path / "pickled_ref.npz", w["onnx"]], ("pickled_ref.npz", "'extra'")),
                        ([w["reference"], w["onnx"], "--npz", tmp_path / "pickled_in.npz"],
                         ("pickled_in.npz", "'obs'"))):
        t0 = time.monotonic()
        r = cli("repair", *args, "--engine", "ort-fp16", "--jobs", "2", "--out", tmp_path / "runs")
        line = assert_refused(r, *names, "never unpickled")
        # refused as the input it is, before any build (it was the baseline "cannot be built",
        # after a pool had started and built the engine)
        assert "cannot be built" not in line and "build raised" not in line, line
        assert "[leapp-lab repair]" not in r.stderr and time.monotonic() - t0 < 30
        assert not (tmp_path / "runs").exists()

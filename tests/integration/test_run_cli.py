"""``leapp-lab run SCRIPT`` on real, unchanged LEAPP export scripts (tests/scripts/)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import leapp
import leapp_lab
from leapp_lab.cli import main

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _json(path):
    d = json.loads(Path(path).read_text())      # strict JSON: json.loads would accept NaN, so check
    assert "NaN" not in Path(path).read_text() and "Infinity" not in Path(path).read_text()
    return d


def test_strict_failure_exit_2_report_written(tmp_path):
    """A real process: the exit status, the traceback on stderr, then the JSON and run folder."""
    out, js = tmp_path / "out", tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "leapp_lab.cli", "run", str(SCRIPTS / "export_strict_fail.py"),
                        "--json", str(js), "--", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "Traceback" in p.stderr and "Model validation failed for 1 node(s): ['norm']" in p.stderr
    assert "not reached" not in p.stdout                          # the script saw LEAPP's raise
    assert "norm/y" in p.stdout and "FAIL 2/3 samples (1,2)" in p.stdout
    d = _json(js)
    assert d["kind"] == "trace" and d["script_exit"] == 1 and "Model validation failed" in d["script_error"]
    (g,) = d["graphs"]
    assert g["name"] == "strictfail" and g["status"] == "compiled" and g["verdict"] == "fail"
    (n,) = g["nodes"]
    assert (n["name"], n["backend"], n["verdict"]) == ("norm", "jit-script", "fail")
    assert [p["name"] for p in n["ports"]] == ["obs", "y"]
    for h in g["hazards"]:
        assert set(h) >= {"kind", "node", "port", "samples", "message"}
    # LEAPP wrote every artifact before raising; our run folder is complete
    assert (out / "strictfail" / "norm.pt").is_file() and (out / "strictfail" / "strictfail.yaml").is_file()
    back = leapp_lab.load(out / "strictfail")
    assert back.graph.run_id == g["run_id"] and "norm/y/2/exported" in back.arrays()


def test_passing_script_exit_0(tmp_path, capsys):
    js = tmp_path / "p.json"
    rc = main(["run", str(SCRIPTS / "export_pass.py"), "--json", str(js), "--", str(tmp_path / "o")])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "compile_graph returned {'pre': True, 'head': True}" in cap.out   # the script's own print
    (g,) = _json(js)["graphs"]
    assert g["verdict"] == "pass" and [n["verdict"] for n in g["nodes"]] == ["pass", "pass"]
    assert not leapp.ExportManager.is_interpret_graph_enabled()
    assert leapp.compile_graph.__module__ == "leapp.leapp"      # the patches are gone


def test_nonstrict_failure_exit_1_and_no_fail(tmp_path, capsys):
    res = tmp_path / "seen.json"
    argv = ["run", str(SCRIPTS / "export_nonstrict_fail.py"), "--", str(tmp_path / "o"), str(res)]
    assert main(argv) == 1
    assert json.loads(res.read_text()) == {"norm": False, "ok": True}   # compile_graph's dict
    out = capsys.readouterr().out
    assert "norm/y" in out and "FAIL 2/3 samples (1,2)" in out
    assert main(argv[:2] + ["--no-fail"] + argv[2:]) == 0
    runs = leapp_lab.model.list_runs(tmp_path / "o" / "nonstrict" / "leapp_lab")
    assert len(runs) == 2                                   # two runs, two intact folders


def test_crash_before_compile_is_refused(tmp_path, capsys):
    js = tmp_path / "c.json"
    rc = main(["run", str(SCRIPTS / "export_crash_before_compile.py"), "--json", str(js), "--",
               str(tmp_path / "o")])
    assert rc == 2
    (g,) = _json(js)["graphs"]
    assert (g["name"], g["status"], g["verdict"]) == ("crashing", "refused", "error")
    assert "crashed before compile_graph" in g["error"]
    assert os.path.isfile(os.path.join(g["run_dir"], "report.json"))
    assert not leapp.ExportManager.is_interpret_graph_enabled()


def test_script_that_swallows_leapp_refusal(tmp_path, capsys):
    """LEAPP's FATAL at compile_graph, caught by the script itself: still a refused graph, exit 1."""
    script = tmp_path / "swallow.py"
    script.write_text(
        "import sys, torch, leapp\nfrom leapp import annotate\n"
        "leapp.start('swallow', save_path=sys.argv[1])\n"
        "annotate.input_tensors('n', {'obs': torch.randn(1, 2)})\n"
        "leapp.stop()\n"
        "try:\n    leapp.compile_graph(visualize=False)\nexcept Exception as e:\n    print('caught', e)\n")
    rc = main(["run", str(script), "--json", str(tmp_path / "s.json"), "--", str(tmp_path / "o")])
    assert rc == 1
    assert "caught The following nodes were created but never completed" in capsys.readouterr().out
    (g,) = _json(tmp_path / "s.json")["graphs"]
    assert g["status"] == "refused" and "never completed" in g["error"]
    assert not any(n.is_tracing for n in leapp.ExportManager().get_nodes().values())


def test_missing_script_is_a_usage_error(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.py")]) == 2
    assert "nope.py: no such script" in capsys.readouterr().err


def test_restart_before_compile_refuses_the_first_session(tmp_path, capsys):
    script = tmp_path / "restart.py"
    script.write_text(
        "import sys, torch, leapp\nfrom leapp import annotate\n"
        "obs = torch.randn(1, 2)\n"
        "def step():\n"
        "    x = annotate.input_tensors('n', {'obs': obs})\n"
        "    annotate.output_tensors('n', {'y': x * 3}, export_with='jit')\n"
        "leapp.start('first', save_path=sys.argv[1])\n"
        "step()\n"
        "leapp.start('second', save_path=sys.argv[1], max_cached_io=2)\n"
        "step(); step()\n"
        "leapp.stop()\n"
        "print('result', leapp.compile_graph(visualize=False))\n")
    rc = main(["run", str(script), "--json", str(tmp_path / "r.json"), "--", str(tmp_path / "o")])
    assert rc == 1
    assert "result {'n': True}" in capsys.readouterr().out
    first, second = _json(tmp_path / "r.json")["graphs"]
    assert (first["name"], first["status"]) == ("first", "refused")
    assert "called again before compile_graph" in first["error"]
    assert (second["name"], second["status"], second["verdict"]) == ("second", "compiled", "pass")


def test_options_may_come_before_the_script(tmp_path):
    js = tmp_path / "before.json"
    rc = main(["run", "--json", str(js), "--quiet", str(SCRIPTS / "export_pass.py"), "--", str(tmp_path / "o")])
    assert rc == 0
    (g,) = _json(js)["graphs"]
    assert all(n["verdict"] == "pass" for n in g["nodes"])

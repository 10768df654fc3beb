"""Acceptance cases a new user hit with `leapp-lab run` / `leapp-lab report` on their own scripts."""
from __future__ import annotations

import json
import textwrap

from leapp_lab.cli import main as cli_main

CRASH = """\
    import torch, leapp
    from leapp import annotate
    leapp.start("crashy", save_path={out!r})
    x = annotate.input_tensors("n", {{"x": torch.randn(2)}})
    raise RuntimeError("user bug in the loop")
    """

DRY = """\
    import torch, leapp
    from leapp import annotate, compile_graph
    def main():
        leapp.start("dry_graph", save_path={out!r}, dry_run=True, max_cached_io=2)
        for i in range(2):
            x = annotate.input_tensors("pre", {{"x": torch.randn(2, 3) * (i + 1)}})
            annotate.output_tensors("pre", {{"y": torch.relu(x)}}, export_with="onnx")
        leapp.stop()
        compile_graph()
    if __name__ == "__main__":
        main()
    """


def _script(tmp_path, name, body):
    f = tmp_path / name
    f.write_text(textwrap.dedent(body).format(out=str(tmp_path / "exports")))
    return f


def test_script_that_raises_is_not_blamed_on_leapp(tmp_path, capsys):
    f = _script(tmp_path, "crash.py", CRASH)
    rc = cli_main(["run", str(f), "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert rc == 2
    assert "LEAPP refused" not in out
    assert "not compiled: the script raised before compile_graph(): RuntimeError: user bug" in out
    assert "Fix the exception in the script's traceback" in out
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["graphs"][0]["status"] == "refused"          # the schema's status is unchanged
    assert [h["kind"] for h in d["graphs"][0]["hazards"]] == ["trace-refused"]


def test_report_accepts_the_json_file_written_by_run(tmp_path, capsys):
    f = _script(tmp_path, "dry.py", DRY)
    j = tmp_path / "combined.json"
    assert cli_main(["run", str(f), "--json", str(j)]) == 0
    capsys.readouterr()
    assert cli_main(["report", str(j)]) == 0
    html = (tmp_path / "combined.html").read_text()       # default: beside the JSON, same stem
    assert "dry_graph" in html
    out = tmp_path / "x.html"
    assert cli_main(["report", str(j), "-o", str(out)]) == 0
    assert out.stat().st_size > 10_000
    import leapp_lab
    r = leapp_lab.load(j)
    assert [g.name for g in r.graphs] == ["dry_graph"] and r.script == str(f)


def test_report_on_verify_json_summary_and_build_folder_say_what_to_pass(tmp_path, capsys):
    s = tmp_path / "rows.json"
    s.write_text(json.dumps({"kind": "verify-rows", "schema_version": 1, "rows": []}))
    assert cli_main(["report", str(s)]) == 2
    err = capsys.readouterr().err
    assert "rows.json" in err and "pass the verify run folder" in err
    b = tmp_path / "model.ort"
    b.mkdir()
    (b / "build.json").write_text(json.dumps({"kind": "build", "schema_version": 1}))
    assert cli_main(["report", str(b)]) == 2
    err = capsys.readouterr().err
    assert "model.ort" in err and "leapp-lab verify MODEL.reference.npz BUILD --html F" in err


def test_run_on_a_folder_says_it_is_a_folder(tmp_path, capsys):
    assert cli_main(["run", str(tmp_path)]) == 2
    assert "is a folder; pass the path of the export script" in capsys.readouterr().err

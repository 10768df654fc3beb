"""docs/taps.md's example runs as written and prints the table the page shows."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

import leapp_lab
from leapp_lab.cli import main as cli_main
from leapp_lab.model.jsonio import load_npz

DOC = Path(__file__).resolve().parents[2] / "docs" / "taps.md"
ROW = re.compile(r"\s+-?\d+\s+\S+\s+(manual|plugin|op|output)\s")


def _blocks(lang: str) -> list[str]:
    """Fenced code blocks of the given language ("" for plain fences), in page order."""
    blocks, cur, cur_lang = [], None, None
    for line in DOC.read_text().splitlines(keepends=True):
        if line.startswith("```"):
            if cur is None:
                cur, cur_lang = [], line[3:].strip()
            else:
                if cur_lang == lang:
                    blocks.append("".join(cur))
                cur = None
        elif cur is not None:
            cur.append(line)
    return blocks


def test_docs_example_model_cli_and_api(tmp_path, monkeypatch, capsys):
    model = next(b for b in _blocks("python") if b.startswith("# my_model.py"))
    (tmp_path / "my_model.py").write_text(model)
    monkeypatch.chdir(tmp_path)
    cmd = next(b for b in _blocks("bash") if "my_model.py" in b)
    argv = cmd.replace("\\\n", " ").split()
    assert argv[:2] == ["leapp-lab", "prepare"]
    assert cli_main(argv[1:]) == 0
    out = capsys.readouterr().out
    shown = next(b for b in _blocks("") if "prepare my_model.py" in b)
    table = [ln.split() for ln in shown.splitlines() if ROW.match(ln)]
    got = [ln.split() for ln in out.splitlines() if ROW.match(ln)]
    assert got == table                  # order, name, kind, reference source, op, source line
    for ln in shown.splitlines()[:5]:
        assert ln.strip() in out
    ref = load_npz(tmp_path / "build" / "model.reference.npz")
    assert ref["pooled"].shape == (4, 1, 8) and ref["benchmark_timings_ms"].shape == (4,)
    # the Python API snippet
    api = next(b for b in _blocks("python") if "leapp_lab.prepare(" in b and "progress" in b)
    ns: dict = {}
    exec(compile(api, "docs/taps.md", "exec"), ns)
    assert ns["report"].row("pooled").source == "my_model.py:17"
    assert list(ns["df"]["name"]) == ["backbone_act", "pooled", "logits"]
    # the manifest example is the real manifest of this model
    import json
    from leapp_lab.onnxio.manifest import read_manifest
    shown_json = json.loads(next(b for b in _blocks("json") if '"version": 1' in b))
    real = json.loads(read_manifest(tmp_path / "build" / "model.onnx").to_json())
    assert shown_json["inputs"] == real["inputs"] and shown_json["outputs"] == real["outputs"]
    assert shown_json["taps"][0] == next(t for t in real["taps"] if t["name"] == "pooled")
    # the manifest helpers snippet
    helpers = next(b for b in _blocks("python") if "strip_taps" in b)
    ns2: dict = {}
    exec(compile(helpers.replace("# ... convert / quantize `bare` ...", ""), "docs/taps.md", "exec"), ns2)
    assert ns2["unbound"] == {} and len(ns2["manifest"].taps) == 2
    assert [o.name for o in ns2["tapped"].graph.output] == ["logits", "backbone_act", "pooled"]
    np.testing.assert_array_equal(load_npz(tmp_path / "build" / "model.npz")["x"].shape, (4, 1, 3, 16, 16))
    assert leapp_lab.load(tmp_path / "build" / "model.prepare").kind == "prepare"


def test_docs_plugin_table_matches_a_real_prepare():
    from tests.models.builds import prepared
    shown = next(b for b in _blocks("") if "node_FastTanh_0__in0" in b)
    want = [ln.split() for ln in shown.splitlines() if ROW.match(ln)]
    rep = prepared("custom_op_model", taps=("all",), plugin=True).report
    got = [ln.split() for ln in str(rep).splitlines() if ROW.match(ln)]
    assert got == want

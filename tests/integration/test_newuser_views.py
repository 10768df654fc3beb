"""A new user's script compiled the same graph name twice (a seed sweep): the view must keep the two
graphs apart (unique row and node ids), in the HTML report as in the notebook view."""
from __future__ import annotations

import re
import textwrap

from leapp_lab.cli import main as cli_main

SWEEP = """\
    import torch, leapp
    from leapp import annotate
    for seed in (0, 1):
        torch.manual_seed(seed)
        leapp.start("sweep", save_path={out!r}, max_cached_io=2, dry_run=True)
        for i in range(2):
            x = annotate.input_tensors("n", {{"x": torch.randn(3)}})
            annotate.output_tensors("n", {{"y": x.sin()}}, export_with="onnx")
        leapp.stop()
        leapp.compile_graph()
    """


def test_same_graph_name_twice_gets_distinct_ids(tmp_path, capsys):
    f = tmp_path / "sweep.py"
    f.write_text(textwrap.dedent(SWEEP).format(out=str(tmp_path / "exports")))
    j = tmp_path / "sweep.json"
    assert cli_main(["run", str(f), "--json", str(j), "--quiet"]) == 0
    import leapp_lab
    from leapp_lab.views.viewdict import build_view
    report = leapp_lab.load(j)
    assert [g.name for g in report.graphs] == ["sweep", "sweep"]
    view = build_view(report)
    ids = [r["id"] for r in view["table"]["rows"]]
    assert len(ids) == len(set(ids)) == 4
    assert {i.split(":")[0] for i in ids} == {"sweep", "sweep#2"}
    assert sorted(view["nodes"]) == ["sweep#2:n", "sweep:n"]
    assert cli_main(["report", str(j)]) == 0
    html = (tmp_path / "sweep.html").read_text()
    rows = re.findall(r'data-leapp-row="([^"]*)"', html)
    assert rows and len(rows) == len(set(rows))


def test_combined_report_reads_each_graphs_inputs_from_its_run_folder(tmp_path):
    import numpy as np

    import leapp_lab
    from leapp_lab.model.jsonio import load_npz
    from leapp_lab.views.viewdict import build_view
    f = tmp_path / "sweep.py"
    f.write_text(textwrap.dedent(SWEEP).format(out=str(tmp_path / "exports")))
    j = tmp_path / "sweep.json"
    assert cli_main(["run", str(f), "--json", str(j), "--quiet"]) == 0
    report = leapp_lab.load(j)
    rows = {r["id"]: r for r in build_view(report)["table"]["rows"]}
    for g, prefix in zip(report.graphs, ("sweep:", "sweep#2:")):
        x = load_npz(f"{g.run_dir}/arrays.npz")["n/x/0/input"]
        (inp,) = rows[f"{prefix}n/y/0"]["samples"][0]["inputs"]
        assert inp["name"] == "x" and inp["shape"] == list(x.shape)
        assert inp["range"] == [float(np.min(x)), float(np.max(x))]

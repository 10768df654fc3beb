"""Every notebook in notebooks/ runs headless (nbclient, a real kernel) and shows its views."""
import re
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
WIDGET = "application/vnd.jupyter.widget-view+json"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _outputs(cell):
    return [o for o in cell.get("outputs", [])]


def _html(cell) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for o in _outputs(cell))


_CACHE: dict = {}


def execute(path: Path, tmp_path_factory, artifacts_dir):
    """Execute a notebook once per session in its own folder; returns (nb, folder, seconds)."""
    if path not in _CACHE:
        nb = nbformat.read(path, as_version=4)
        work = tmp_path_factory.mktemp(path.stem)
        t0 = time.perf_counter()
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(work)}}).execute()
        _CACHE[path] = (nb, work, time.perf_counter() - t0)
        nbformat.write(nb, artifacts_dir / f"executed-{path.name}")
    return _CACHE[path]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_headless(path, tmp_path_factory, artifacts_dir):
    nb, _, elapsed = execute(path, tmp_path_factory, artifacts_dir)
    errors = [o for c in nb.cells for o in _outputs(c) if o.get("output_type") == "error"]
    assert not errors, errors[0]
    assert elapsed < 240


@pytest.mark.slow
def test_tutorial_views(tmp_path_factory, artifacts_dir):
    """The tutorial's views: the frozen constant found, the int8 divergence located."""
    nb, work, _ = execute(ROOT / "notebooks" / "workbench_tutorial.ipynb", tmp_path_factory, artifacts_dir)
    code = [c for c in nb.cells if c.cell_type == "code"]
    text = "".join(o.get("text", "") for c in code for o in _outputs(c))
    assert "TUTORIAL-DONE" in text and "report written: True" in text
    trace_cell = next(c for c in code if c.source.startswith("%%leapp_trace frozen_demo"))
    # one live widget, preceded by its static stand-in (what a reopened notebook without kernel shows)
    widgets = [o["data"] for o in _outputs(trace_cell) if "data" in o and WIDGET in o["data"]]
    statics = [o["data"]["text/html"] for o in _outputs(trace_cell)
               if "data" in o and "data-leapp-static" in o["data"].get("text/html", "")]
    assert len(widgets) == 1 and "text/plain" in widgets[0] and len(statics) == 1
    html = statics[0]
    first = re.findall(r'data-leapp-row="([^"]+)" data-leapp-status="fail" data-leapp-first-divergent="true"', html)
    assert first == ["normalize/y/1"]
    assert 'data-leapp-row="normalize/y/0" data-leapp-status="pass"' in html
    assert "frozen-constant" in html
    fixed_cell = next(c for c in code if c.source.startswith("print(fixed.ok"))
    assert "True" in fixed_cell.outputs[0]["text"]
    verify_cell = next(c for c in code if c.source.startswith("%leapp_verify"))
    vhtml = _html(verify_cell)
    assert re.findall(r'data-leapp-row="([^"]+)" data-leapp-status="fail" data-leapp-tap-status="compared" '
                      r'data-leapp-first-divergent="true"', vhtml) == ["hidden_1"]
    assert vhtml.index('data-leapp-row="hidden_1"') < vhtml.index('data-leapp-row="hidden_2"') \
        < vhtml.index('data-leapp-row="output_0"')                     # model order
    assert any(WIDGET in o.get("data", {}) for o in _outputs(verify_cell))
    report = (work / "verify_report.html").read_text(encoding="utf-8")
    assert 'data-leapp-row="hidden_1"' in report and "<script" in report

"""The workbench in real JupyterLab 4 and Notebook 7 (headless Chromium): the tutorial notebook's
trace view (frozen constant) and accuracy view (onnxruntime int8 diverging), clicked through."""
import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from harness import hist_state, open_notebook, run_all, run_cell, wait_hist, wait_text

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
# the live views only: a static copy (class leapp-static) stands in each output until its view renders
TRACE = ".leapp-view:not(.leapp-static)[data-leapp-kind='trace']"
VERIFY = ".leapp-view:not(.leapp-static)[data-leapp-kind='verify']"


def _rows(page, scope):
    return page.evaluate("s => [...document.querySelector(s).querySelectorAll('tr[data-leapp-row]')]"
                         ".map(e => [e.dataset.leappRow, e.dataset.leappStatus])", scope)


def test_tutorial_in_jupyterlab(lab, page, artifacts_dir):
    base, token, root = lab
    shutil.copy(ROOT / "notebooks" / "workbench_tutorial.ipynb", root / "tutorial.ipynb")
    open_notebook(page, base, token, "tutorial.ipynb")
    run_all(page)
    wait_text(page, "TUTORIAL-DONE", timeout_ms=180000)
    assert page.locator("[data-mime-type='application/vnd.jupyter.stderr'] .jp-RenderedText:has-text('Traceback')").count() == 0

    # -- trace view: the frozen constant ------------------------------------------------------------
    trace = page.locator(TRACE).first
    trace.scroll_into_view_if_needed()
    first = trace.locator("tr[data-leapp-first-divergent='true']")
    assert first.count() == 1 and first.get_attribute("data-leapp-row") == "normalize/y/1"
    assert first.get_attribute("data-leapp-status") == "fail"
    assert trace.locator("tr[data-leapp-row='normalize/y/0']").get_attribute("data-leapp-status") == "pass"
    first.click()
    h1 = wait_hist(page, TRACE, "normalize/y/1", "1")
    # another sample of the same port through the sample picker
    trace.locator("select[data-leapp-sample-picker]").select_option("normalize/y/3")
    h3 = wait_hist(page, TRACE, "normalize/y/3", "3")
    assert h3["bars"] != h1["bars"] and h3["title"] != h1["title"]
    assert trace.locator("tr.leapp-selected").get_attribute("data-leapp-row") == "normalize/y/3"
    page.screenshot(path=str(artifacts_dir / "lab_trace_view.png"))
    # graph node -> node panel with the frozen literal
    trace.locator("[data-leapp-tab='graph']").click()
    trace.locator("svg [data-leapp-node='normalize']").click()
    page.wait_for_selector(f"{TRACE} [data-leapp-node-panel='normalize']")
    assert trace.locator("[data-leapp-suspect]").count() >= 1
    page.screenshot(path=str(artifacts_dir / "lab_trace_node.png"))

    # -- accuracy view: ort-int8 against torch ------------------------------------------------------
    verify = page.locator(VERIFY).first
    verify.scroll_into_view_if_needed()
    rows = _rows(page, VERIFY)
    assert [r[0] for r in rows] == ["hidden_1", "hidden_2", "output_0"]            # model order
    first = verify.locator("tr[data-leapp-first-divergent='true']")
    assert first.get_attribute("data-leapp-row") == "hidden_1"
    assert first.get_attribute("data-leapp-tap-status") == "compared"
    first.click()
    a = wait_hist(page, VERIFY, "hidden_1", "all")
    verify.locator("select[data-leapp-sample-picker]").select_option("2")
    b = wait_hist(page, VERIFY, "hidden_1", "2")
    assert b["bars"] != a["bars"] and "sample 2" in b["title"]
    # keyboard: down selects the next row in model order
    verify.locator(".leapp-tablewrap").focus()
    active = "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"
    cell_before = page.evaluate(active)
    page.keyboard.press("ArrowDown")
    c = wait_hist(page, VERIFY, "hidden_2", "all")
    assert c["bars"] != a["bars"]
    assert page.evaluate(active) == cell_before          # Lab did not also move to the next cell
    # sort by MAPE (descending), then the divergent-only filter
    verify.locator("th[data-leapp-col='mape']").click()
    sorted_ids = [r[0] for r in _rows(page, VERIFY)]
    assert sorted_ids != ["hidden_1", "hidden_2", "output_0"] and sorted(sorted_ids) == sorted(["hidden_1", "hidden_2", "output_0"])
    verify.locator("input[data-leapp-filter]").check()
    assert {r[1] for r in _rows(page, VERIFY)} == {"fail"}
    verify.locator("[data-leapp-sort-reset]").click()
    # after a toolbar click the keys still belong to the table, not to the notebook's cells
    selected = verify.locator("tr.leapp-selected").get_attribute("data-leapp-row")
    cell_before = page.evaluate(active)
    page.keyboard.press("ArrowDown")
    page.keyboard.press("j")
    assert page.evaluate(active) == cell_before
    page.wait_for_function(f"() => document.querySelector(\"{VERIFY} tr.leapp-selected\")"
                           f".getAttribute('data-leapp-row') !== {selected!r}", timeout=5000)
    page.screenshot(path=str(artifacts_dir / "lab_verify_view.png"))
    verify.locator("[data-leapp-tab='profile']").click()
    page.wait_for_selector(f"{VERIFY} .leapp-profile .main-svg")
    page.screenshot(path=str(artifacts_dir / "lab_verify_profile.png"))
    assert page.errors == []


def test_trace_view_in_notebook7(lab, page, artifacts_dir):
    """Notebook 7: the trace view, and its selection synced both ways with the Python widget."""
    base, token, root = lab
    body = "import torch\nfrom leapp import annotate\nfrom leapp_lab.views.widget import show\ntorch.manual_seed(1);\n"
    cell = ("%%leapp_trace nb7 --save-path leapp_out --max-cached-io 3\n"
            "for step in range(3):\n"
            "    x = annotate.input_tensors('scale', {'obs': torch.randn(2, 3) * (step + 1)})\n"
            "    annotate.output_tensors('scale', {'y': x * x.abs().max().item()}, export_with='jit')\n")
    nb = new_notebook(cells=[new_code_cell("%load_ext leapp_lab"), new_code_cell(body), new_code_cell(cell),
                             new_code_cell("w = show(_leapp)"), new_code_cell("print('NB7-DONE')"),
                             new_code_cell("w.select('scale/y/0')"),
                             new_code_cell("print('SEL', repr(w.selected), repr(w.sample))")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "nb7.ipynb")
    open_notebook(page, base, token, "nb7.ipynb", ui="notebook")
    run_all(page)
    wait_text(page, "SEL 'scale/y/0' ''", timeout_ms=120000)
    view = page.locator(TRACE).first
    first = view.locator("tr[data-leapp-first-divergent='true']")
    assert first.get_attribute("data-leapp-row") == "scale/y/1"
    first.click()
    h1 = wait_hist(page, TRACE, "scale/y/1", "1")
    view.locator("select[data-leapp-sample-picker]").select_option("scale/y/2")
    h2 = wait_hist(page, TRACE, "scale/y/2", "2")
    assert h2["bars"] != h1["bars"]
    page.screenshot(path=str(artifacts_dir / "notebook7_trace_view.png"))
    # the second view is the one `w` holds: Python set its selection; a click goes back to Python
    wait_hist(page, TRACE, "scale/y/0", "0", index=1)
    second = page.locator(TRACE).nth(1)
    second.locator("tr[data-leapp-row='scale/y/2']").click()
    wait_hist(page, TRACE, "scale/y/2", "2", index=1)
    run_cell(page, -1)
    wait_text(page, "SEL 'scale/y/2' '2'", timeout_ms=30000)
    run_cell(page, -2)                                   # w.select('scale/y/0') from Python
    wait_hist(page, TRACE, "scale/y/0", "0", index=1)
    assert hist_state(page, TRACE, 0)["row"] == "scale/y/2"     # the other view is independent
    # Notebook 7 itself throws a couple of errors on load (also without leapp_lab: "reading 'schema'",
    # "Command 'filebrowser:open-path' not registered"); ours would come from the widget's module,
    # which anywidget loads from a blob: URL
    assert [e for e in page.errors if "blob:" in e or "leapp" in e.lower()] == []

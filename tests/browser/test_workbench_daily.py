"""Daily use of the workbench in real JupyterLab: two trace views in one notebook stay independent,
a re-run cell keeps exactly one view, and the histogram stays readable under the dark theme."""
import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from harness import KERNEL_IDLE_JS, hist_state, open_notebook, run_all, run_cell, wait_hist, wait_text

pytestmark = pytest.mark.browser

TRACE_A = """%%leapp_trace daily_a --save-path leapp_out --max-cached-io 3 --out ra
for step in range(3):
    x = annotate.input_tensors('scale', {'obs': torch.randn(2, 3) * (step + 1)})
    annotate.output_tensors('scale', {'y': x * x.abs().max().item()}, export_with='jit')"""
TRACE_B = """%%leapp_trace daily_b --save-path leapp_out --max-cached-io 3 --out rb
for step in range(3):
    x = annotate.input_tensors('scale', {'obs': torch.randn(2, 3) * (step + 1)})
    annotate.output_tensors('scale', {'y': x * 2.0}, export_with='jit')"""
A = ".jp-Notebook .jp-Cell:nth-child(3) .leapp-view:not(.leapp-static)"
B = ".jp-Notebook .jp-Cell:nth-child(4) .leapp-view:not(.leapp-static)"


def _luminance(css_rgb: str) -> float:
    r, g, b = (int(x) for x in re.findall(r"\d+", css_rgb)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_two_views_rerun_and_dark_theme(lab, page, artifacts_dir):
    base, token, root = lab
    nb = new_notebook(cells=[new_code_cell("%load_ext leapp_lab"),
                             new_code_cell("import torch\nfrom leapp import annotate\ntorch.manual_seed(3);"),
                             new_code_cell(TRACE_A), new_code_cell(TRACE_B), new_code_cell("print('DAILY-DONE')")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "daily.ipynb")
    open_notebook(page, base, token, "daily.ipynb")
    run_all(page)
    wait_text(page, "DAILY-DONE", timeout_ms=120000)

    # the same node/port names in both views: a click in one never moves the other
    wait_hist(page, A, "scale/y/1", "1")                  # A opens on its first failing row
    b_before = wait_hist(page, B, "scale/y/0")           # B live too (its static output is off the page)
    page.locator(A).locator("tr[data-leapp-row='scale/y/2']").click()
    wait_hist(page, A, "scale/y/2", "2")
    page.keyboard.press("ArrowUp")
    wait_hist(page, A, "scale/y/1", "1")
    assert hist_state(page, B)["row"] == b_before["row"] == "scale/y/0"
    assert page.locator(B).locator("tr.leapp-selected").get_attribute("data-leapp-row") == "scale/y/0"

    # re-running a trace cell replaces its view: still one view per cell
    for _ in range(3):
        run_cell(page, 2)
        page.wait_for_function(KERNEL_IDLE_JS, timeout=30000)
    page.wait_for_function(f"() => document.querySelectorAll(\"{A}\").length === 1 && "
                           f"document.querySelectorAll(\"{A} tr[data-leapp-row]\").length === 3", timeout=30000)
    # and no static stand-in left beside the two live views
    page.wait_for_function("() => document.querySelectorAll('.jp-Notebook .leapp-view').length === 2", timeout=10000)

    # dark theme: plotly's axis labels take the view's (light) text colour, not plotly's dark grey
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    try:
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=15000)
        _check_dark(page, artifacts_dir)
    finally:     # the theme is a server-side setting: later tests on this server expect the light one
        page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=15000)
    assert page.errors == []


def _check_dark(page, artifacts_dir):
    page.locator(A).locator("tr[data-leapp-row='scale/y/2']").click()
    wait_hist(page, A, "scale/y/2", "2")
    fills = page.evaluate(f"""() => {{ const p = document.querySelector("{A} [data-leapp-hist-row]");
        return {{view: getComputedStyle(p).color, tick: p.querySelector('.xtick text').style.fill,
                 title: p.querySelector('.gtitle').style.fill}}; }}""")
    page.locator(A).screenshot(path=str(artifacts_dir / "lab_dark_trace_view.png"))
    assert _luminance(fills["view"]) > 0.6, fills
    assert _luminance(fills["tick"]) > 0.6 and _luminance(fills["title"]) > 0.6, fills

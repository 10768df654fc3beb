"""Inside a LEAPP node (issue 19): the trace view's Layers panel and pipeline table clicked through in
real Chromium, in the offline report (network blocked) and in a live JupyterLab trace view.

The pipeline is tests/node_pipelines/encoded_policy.py traced with ``--engine ort-int8 --taps all
--local``: the int8 engine diverges in ``policy``, whose largest local error is ``l3``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from harness import open_notebook, open_offline, run_all, wait_hist, wait_text
from leapp_lab.views.html import to_html

pytestmark = pytest.mark.browser
TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
from node_pipelines import encoded_policy  # noqa: E402

LAYERS = "[data-leapp-layers='policy'][data-leapp-layers-engine='ort-int8']"


@pytest.fixture(scope="module")
def engine_trace(tmp_path_factory):
    import leapp_lab
    out = tmp_path_factory.mktemp("layers_view")
    with leapp_lab.trace("ep", save_path=str(out), engines=["ort-int8"], taps="all", local=True,
                         **encoded_policy.OPTIONS) as t:
        encoded_policy.body()
    return t.report


def _selected(page, scope: str) -> str | None:
    return page.evaluate("s => { const r = document.querySelector(s + ' tr.leapp-selected'); return r && r.dataset.leappRow; }", scope)


def _layers_to_histogram(page, root: str) -> dict:
    """Validation row of policy -> its panel's Layers button -> the Layers panel -> row l3 -> its
    histogram. ``root``: the trace view's selector."""
    page.click(f"{root} tr[data-leapp-row='policy/action/0']")
    page.click(f"{root} [data-leapp-panel='table'] [data-leapp-open-layers='policy'][data-leapp-engine='ort-int8']")
    page.wait_for_selector(f"{root} {LAYERS} .leapp-view[data-leapp-kind='verify'] tr[data-leapp-row]")
    scope = f"{root} {LAYERS}"
    # the node's accuracy table in model order, opened on the row its finding names first (the layer
    # that adds the error: issue 21)
    rows = page.evaluate("s => [...document.querySelectorAll(s + ' tr[data-leapp-row]')].map(e => e.dataset.leappRow)", scope)
    assert rows == ["l0", "l1", "l2", "l3", "action"]
    first = page.locator(f"{scope} [data-leapp-finding-row]").first.get_attribute("data-leapp-finding-row")
    wait_hist(page, scope, first)
    # the largest local error is named in the panel's head and as a badge that goes to its row
    head = page.locator(f"{root} [data-leapp-panel='layers'] .leapp-layers-head")
    assert head.get_attribute("data-leapp-worst-local") == "l3" and "largest local errorl3" in head.text_content()
    page.click(f"{scope} button[data-leapp-badge-row='l3']")
    h = wait_hist(page, scope, "l3")
    assert _selected(page, scope) == "l3" and "l3" in h["title"] and h["bars"]
    # a sample of that row
    page.select_option(f"{scope} [data-leapp-sample-picker]", "2")
    h2 = wait_hist(page, scope, "l3", "2")
    assert h2["bars"] != h["bars"]
    return h2


def _pipeline_first_divergent(page, root: str) -> None:
    page.click(f"{root} [data-leapp-tab='pipeline']")
    table = f"{root} [data-leapp-panel='pipeline']"
    assert page.locator(f"{table} [data-leapp-pipeline='ort-int8'] [data-leapp-first-divergent-node]").get_attribute(
        "data-leapp-first-divergent-node") == "policy"
    order = page.evaluate("s => [...document.querySelectorAll(s + ' tr[data-leapp-pipeline-row]')].map(e => [e.dataset.leappPipelineRow, e.dataset.leappFirstDivergent])", table)
    assert order == [["encoder/latent", "false"], ["policy/action", "true"]]
    page.click(f"{table} tr[data-leapp-first-divergent='true']")
    page.wait_for_selector(f"{root} {LAYERS} .leapp-view[data-leapp-kind='verify']")
    assert page.locator(f"{root} [data-leapp-panel='layers']").is_visible()


def test_layers_panel_and_pipeline_table_offline(page, engine_trace, tmp_path, artifacts_dir):
    f = tmp_path / "layers.html"
    to_html(engine_trace, f)
    blocked = open_offline(page, f, "[data-leapp-tab='layers']", timeout=15000)
    root = ".leapp-view[data-leapp-kind='trace']"
    _layers_to_histogram(page, root)
    page.screenshot(path=str(artifacts_dir / "layers_offline.png"), full_page=True)
    # the accuracy graph of the node's engine, inside the panel
    page.click(f"{LAYERS} [data-leapp-tab='graph']")
    page.wait_for_selector(f"{LAYERS} [data-leapp-panel='graph'] svg [data-leapp-node]")
    # from the connectivity graph and from the Node tab: the encoder's Layers
    page.click(f"{root} > .leapp-tabs [data-leapp-tab='graph']")
    page.click("[data-leapp-graph-layers] [data-leapp-open-layers='encoder']")
    page.wait_for_selector("[data-leapp-layers='encoder'] .leapp-view[data-leapp-kind='verify'] tr[data-leapp-row='latent']")
    page.click(f"{root} > .leapp-tabs [data-leapp-tab='node']")
    page.select_option("[data-leapp-node-picker]", "policy")
    page.click("[data-leapp-node-engines] [data-leapp-open-layers='policy']")
    page.wait_for_selector(f"{LAYERS} .leapp-view[data-leapp-kind='verify']")
    _pipeline_first_divergent(page, root)
    page.screenshot(path=str(artifacts_dir / "layers_pipeline_offline.png"), full_page=True)
    assert blocked == [] and page.errors == []


TRACE = ".leapp-view:not(.leapp-static)[data-leapp-kind='trace']"


def test_layers_panel_and_pipeline_table_in_jupyterlab(lab, page, artifacts_dir):
    base, token, root = lab
    nb = new_notebook(cells=[
        new_code_cell("%load_ext leapp_lab"),
        new_code_cell(f"import sys\nsys.path.insert(0, {str(TESTS)!r})\nfrom node_pipelines import encoded_policy"),
        new_code_cell("%%leapp_trace ep --save-path leapp_out --max-cached-io 4 --engine ort-int8 --taps all --local\n"
                      "encoded_policy.body()"),
        new_code_cell("print('LAYERS-DONE', _leapp.graph.node('policy').engines[0].worst_local)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "layers.ipynb")
    open_notebook(page, base, token, "layers.ipynb")
    run_all(page)
    wait_text(page, "LAYERS-DONE l3", timeout_ms=240000)
    page.locator(TRACE).first.scroll_into_view_if_needed()
    _layers_to_histogram(page, TRACE)
    page.screenshot(path=str(artifacts_dir / "lab_layers.png"))
    _pipeline_first_divergent(page, TRACE)
    assert [e for e in page.errors if "leapp" in e.lower() or "blob:" in e] == []

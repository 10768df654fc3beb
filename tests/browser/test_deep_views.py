"""The deep-check tabs (replay, parity, adapters, exporters, isolation) clicked through in real
Chromium: in the offline HTML report (network blocked) and in a live JupyterLab trace view."""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from harness import open_notebook, open_offline, run_all, wait_text
from leapp_lab.views.html import to_html

pytestmark = pytest.mark.browser
PIPELINES = Path(__file__).resolve().parents[1] / "pipelines"
sys.path.insert(0, str(PIPELINES.parent / "integration"))
from deep_pipelines import load_pipeline, trace  # noqa: E402


@pytest.fixture(scope="module")
def deep_reports(tmp_path_factory):
    """Real runs: warm_start with replay + parity, adapter_mismatch (adapters), onnx_cumprod with
    the exporter matrix and the isolation runs."""
    import leapp_lab
    out = tmp_path_factory.mktemp("deep_views")
    warm = load_pipeline("warm_start")
    w = trace(warm, out)
    leapp_lab.replay(w, step_fn=warm.Original(), steps=8)
    leapp_lab.parity(w, warm.Original(), n=3)
    a = trace(load_pipeline("adapter_mismatch"), out)
    cp = load_pipeline("onnx_cumprod")
    session = leapp_lab.trace(cp.NAME, save_path=str(out), **cp.OPTIONS)
    with warnings.catch_warnings(), pytest.raises(Exception):
        warnings.simplefilter("ignore")
        with session:
            cp.body()
    leapp_lab.exporters(session.report, cp.body, node="discount")
    leapp_lab.isolate(session.report, cp.body)
    return {"warm": w, "adapters": a, "cumprod": session.report}


def _click_point(page, scope, index):
    pts = page.locator(f"{scope} .scatterlayer .point")
    box = pts.nth(index).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def test_replay_and_parity_tabs_offline(page, deep_reports, tmp_path, artifacts_dir):
    rep = deep_reports["warm"]
    f = tmp_path / "warm.html"
    to_html(rep, f)
    blocked = open_offline(page, f, "[data-leapp-tab='table']", timeout=15000)
    tabs = page.evaluate("() => [...document.querySelectorAll('[data-leapp-tab]')].map(e => e.dataset.leappTab)")
    assert tabs[-2:] == ["replay", "parity"]
    page.click("[data-leapp-tab='replay']")
    panel = "[data-leapp-panel='replay']"
    page.wait_for_selector(f"{panel} [data-leapp-replay-plot='warm_start:a'] .main-svg")
    run = rep.graph.replay.closed_loop
    assert page.locator(f"{panel} .scatterlayer .point").count() == len(run.rows)      # one per step and output
    assert page.locator(f"{panel} .shapelayer path").count() == len(run.resets) + 1    # resets + first divergent
    rows = page.locator(f"{panel} tr[data-leapp-section='replay']")
    assert rows.count() == len(run.rows)
    # in a narrow window the per-output summary keeps each value on one line and scrolls sideways
    # (at 800 px it broke '4.470e-08' and 'steady' in two)
    page.set_viewport_size({"width": 600, "height": 1000})
    broken = page.evaluate("""p => [...document.querySelectorAll(p + " [data-leapp-replay-outputs] td")]
                                   .filter(td => { const r = document.createRange(); r.selectNodeContents(td);
                                           return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1; })
                                   .map(td => td.textContent)""", panel)
    page.set_viewport_size({"width": 1400, "height": 1000})
    assert broken == [], broken
    # no bare "null" under the run's facts (DOM replaceChildren(null) writes the word; an engine-less run printed it)
    assert not page.evaluate(f"""() => [...document.querySelectorAll("{panel} *")].some(e => [...e.childNodes]
                                  .some(n => n.nodeType === 3 && n.textContent.trim() === 'null'))""")
    fails = page.evaluate(f"() => [...document.querySelectorAll(\"{panel} tr[data-leapp-status='fail']\")].map(e => e.dataset.leappRow)")
    assert fails == [f"warm_start:a/{r.step}/{r.output}" for r in run.rows if r.passed is False]
    # a point of the plot finds its row: policy/action (the third series) at step 3, the reset
    _click_point(page, panel, 2 * run.steps + 3)
    page.wait_for_function(f"() => !!document.querySelector(\"{panel} tr.leapp-selected\")")
    assert page.locator(f"{panel} tr.leapp-selected").get_attribute("data-leapp-row") == "warm_start:a/3/policy/action"
    page.screenshot(path=str(artifacts_dir / "deep_replay_offline.png"), full_page=True)
    # tier (b) through the picker
    page.select_option(f"{panel} select[data-leapp-replay-run]", "warm_start:b")
    page.wait_for_selector(f"{panel} [data-leapp-replay-plot='warm_start:b'] .main-svg")
    assert rows.count() == len(rep.graph.replay.fresh.rows)
    page.click("[data-leapp-tab='parity']")
    prow = page.locator("[data-leapp-panel='parity'] tr[data-leapp-section='parity']")
    assert prow.count() == len(rep.graph.parity.checks) == 9
    # a deep table is as tall as its rows (up to its cap), not the main table's 480 px box of blank space
    wrap, table = page.evaluate("""() => { const t = document.querySelector("[data-leapp-deep-table='parity']");
                                   return [t.parentElement.clientHeight, t.offsetHeight]; }""")
    assert wrap <= table + 2, (wrap, table)
    assert page.locator("[data-leapp-panel='parity'] [data-leapp-deep-status='diverged']").count() == 1
    assert page.locator("[data-leapp-panel='replay']").is_hidden()
    page.screenshot(path=str(artifacts_dir / "deep_parity_offline.png"), full_page=True)
    assert blocked == [] and page.errors == []


def test_adapters_exporters_isolation_tabs_offline(page, deep_reports, tmp_path, artifacts_dir):
    f = tmp_path / "adapters.html"
    to_html(deep_reports["adapters"], f)
    blocked = open_offline(page, f, "[data-leapp-tab='table']", timeout=15000)
    page.click("[data-leapp-tab='adapters']")
    cases = page.evaluate("() => [...document.querySelectorAll(\"tr[data-leapp-section='adapters']\")]"
                          ".map(e => [e.dataset.leappRow.split('/').pop(), e.dataset.leappStatus])")
    assert cases == [["captured 0", "pass"], ["perturbed 0 (noise)", "pass"], ["perturbed 0 (scaled)", "pass"],
                     ["perturbed 0 (negated)", "fail"]]
    assert page.locator("[data-leapp-adapter='adapter_mismatch_lib.normalize'][data-leapp-status='fail']").count() == 1
    page.screenshot(path=str(artifacts_dir / "deep_adapters_offline.png"), full_page=True)

    f2 = tmp_path / "cumprod.html"
    to_html(deep_reports["cumprod"], f2)
    blocked += open_offline(page, f2, "[data-leapp-tab='table']", timeout=15000)
    page.click("[data-leapp-tab='exporters']")
    outcome = page.evaluate("() => Object.fromEntries([...document.querySelectorAll('td[data-leapp-exporter]')]"
                            ".map(e => [e.dataset.leappExporter, e.dataset.leappOutcome]))")
    assert outcome["discount/onnx"] == "export-error"
    assert [outcome[f"discount/{b}"] for b in ("jit", "jit-trace", "pt2")] == ["pass"] * 3
    assert "jit, jit-trace, pt2 export and validate" in page.locator("[data-leapp-advice='discount']").text_content()
    page.click("tr[data-leapp-section='exporters'][data-leapp-row$='/pt2']")
    assert page.locator("tr.leapp-selected").get_attribute("data-leapp-row").endswith("discount/pt2")
    page.screenshot(path=str(artifacts_dir / "deep_exporters_offline.png"), full_page=True)
    page.click("[data-leapp-tab='isolation']")
    assert page.locator("[data-leapp-decision]").get_attribute("data-leapp-decision") == "export"
    assert page.locator("tr[data-leapp-decision-row][data-leapp-matched='true']").get_attribute("data-leapp-decision-row") == "6"
    labels = page.evaluate("() => [...document.querySelectorAll(\"tr[data-leapp-section='isolation']\")].map(e => e.dataset.leappRow)")
    assert labels[:4] == [f"onnx_cumprod:{x}" for x in ("baseline", "dry_run", "non_traced", "global_patching_off")]
    page.screenshot(path=str(artifacts_dir / "deep_isolation_offline.png"), full_page=True)
    assert blocked == [] and page.errors == []


CELL = """%%leapp_trace warmlab --save-path leapp_out --max-cached-io 6 --replay 6 --step-fn step --isolate
w, p = warm_start.weights()
h, prev = torch.zeros(1, 4), torch.zeros(1, 2)
for _ in range(3):
    h, prev = warm_start.policy_step(torch.randn(1, 4), prev, h, w, p)
for t in range(6):
    if t == 3:
        h, prev = torch.zeros(1, 4), torch.zeros(1, 2)
    o, pa = annotate.input_tensors("encoder", {"obs": torch.randn(1, 4), "prev_action": prev})
    h_in = annotate.state_tensors("encoder", {"h": h})
    h_new = torch.tanh(o @ w + h_in + pa.sum())
    annotate.update_state("encoder", {"h": h_new})
    latent = annotate.output_tensors("encoder", {"latent": h_new * 1.0}, export_with="jit")
    lat = annotate.input_tensors("policy", {"latent": latent})
    action = annotate.output_tensors("policy", {"action": torch.tanh(lat @ p)}, export_with="jit")
    h, prev = h_new, action
"""
TRACE = ".leapp-view:not(.leapp-static)[data-leapp-kind='trace']"


def test_deep_tabs_in_jupyterlab(lab, page, artifacts_dir):
    base, token, root = lab
    setup = (f"import sys, torch\nsys.path.insert(0, {str(PIPELINES)!r})\nimport warm_start\n"
             "from leapp import annotate\nstep = warm_start.Original()\ntorch.manual_seed(0);\n")
    nb = new_notebook(cells=[new_code_cell("%load_ext leapp_lab"), new_code_cell(setup), new_code_cell(CELL),
                             new_code_cell("print('DEEP-DONE', _leapp.graph.isolation.decision)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "deep.ipynb")
    open_notebook(page, base, token, "deep.ipynb")
    run_all(page)
    wait_text(page, "DEEP-DONE none", timeout_ms=180000)
    view = page.locator(TRACE).first
    view.scroll_into_view_if_needed()
    badges = view.locator(".leapp-badge").all_text_contents()
    assert any(b.startswith("replay") and "diverged" in b for b in badges)
    view.locator("[data-leapp-tab='replay']").click()
    page.wait_for_selector(f"{TRACE} [data-leapp-replay-plot='warmlab:a'] .main-svg")
    first = view.locator("[data-leapp-panel='replay'] tr[data-leapp-status='fail']").first
    assert first.get_attribute("data-leapp-row") == "warmlab:a/3/encoder/latent"
    first.click()
    assert view.locator("[data-leapp-panel='replay'] tr.leapp-selected").get_attribute("data-leapp-row") == "warmlab:a/3/encoder/latent"
    assert "warm start" in view.locator("[data-leapp-panel='replay']").text_content()
    page.screenshot(path=str(artifacts_dir / "lab_deep_replay.png"))
    view.locator("[data-leapp-tab='isolation']").click()
    assert view.locator("[data-leapp-decision]").get_attribute("data-leapp-decision") == "none"
    assert view.locator("tr[data-leapp-section='isolation']").count() == 5
    page.screenshot(path=str(artifacts_dir / "lab_deep_isolation.png"))
    assert [e for e in page.errors if "leapp" in e.lower() or "blob:" in e] == []

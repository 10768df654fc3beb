"""Replay on an engine, taps over time and errors by meaning clicked through in real Chromium
(issue 20, Must show): the own vs inherited plot, the steps × taps heatmap (a cell opens that step's
histogram; the first cell beyond the rule is marked) and the per-element bar chart, in the offline
HTML report (network blocked) and in a live JupyterLab trace view."""
from __future__ import annotations

import sys
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

ENGINE = "ort-int8"


@pytest.fixture(scope="module")
def tapped(tmp_path_factory):
    import leapp_lab
    mod = load_pipeline("lstm_tapped_policy")
    rep = trace(mod, tmp_path_factory.mktemp("replay_engine_views"))
    leapp_lab.replay(rep, steps=8, step_fn=mod.Original(), engine=ENGINE)
    return mod, rep


def _click_at(page, x, y):
    page.mouse.move(x - 3, y - 3)
    page.mouse.move(x, y)
    page.mouse.click(x, y)


def check_engine_replay(page, scope, graph, mod, sec, artifacts_dir, shot):
    """Pick the engine's tier (a) sequence, click the split plot, a bar, a heatmap cell."""
    eng = sec.engine(ENGINE)
    key = f"{graph}:{ENGINE}:a"
    panel = f"{scope} [data-leapp-panel='replay']"
    page.locator(f"{scope} [data-leapp-tab='replay']").click()
    page.select_option(f"{panel} select[data-leapp-replay-run]", key)
    page.wait_for_selector(f"{panel} [data-leapp-replay-plot='{key}'] .main-svg")
    assert page.locator(f"{panel} [data-leapp-replay-engine='{ENGINE}'] tr[data-leapp-engine-node='policy']").count() == 1
    # the own vs inherited plot: three curves; a point finds its row and the row's per-element chart
    split = f"{panel} [data-leapp-replay-split='{key}/policy/action']"
    page.wait_for_selector(f"{split} .main-svg")
    assert page.locator(f"{split} .scatterlayer .trace").count() == 3
    pts = page.locator(f"{split} .scatterlayer .trace").nth(1).locator(".point")
    assert pts.count() == eng.closed_loop.steps
    pts.nth(5).scroll_into_view_if_needed()
    box = pts.nth(5).bounding_box()
    _click_at(page, box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    row_id = f"{key}/5/policy/action"
    page.wait_for_selector(f"{panel} tr.leapp-selected[data-leapp-row='{row_id}']")
    row = next(r for r in eng.closed_loop.rows if (r.step, r.output) == (5, "policy/action"))
    els = f"{panel} [data-leapp-elements='{row_id}']"
    page.wait_for_selector(f"{els} [data-leapp-element-plot] .main-svg")
    names = page.evaluate(f"() => [...document.querySelectorAll(\"{els} tr[data-leapp-element]\")].map(e => e.dataset.leappElement)")
    assert names == mod.JOINTS
    assert page.locator(f"{els} tr[data-leapp-worst='true']").get_attribute("data-leapp-element") == row.worst_element
    bars = page.locator(f"{els} .barlayer .point")
    assert bars.count() == 6
    bars.nth(2).scroll_into_view_if_needed()
    b = bars.nth(2).bounding_box()
    _click_at(page, b["x"] + b["width"] / 2, b["y"] + b["height"] - 2)
    page.wait_for_function(f"() => document.querySelector(\"{els} [data-leapp-element-picked]\").dataset.leappElementPicked === 'left_ankle'")
    # the steps × taps heatmap: the first cell beyond the rule marked; a cell opens its histogram
    t = eng.taps
    heat = f"{panel} [data-leapp-taps-heatmap='{graph}:{ENGINE}:taps']"
    cells = page.evaluate(f"() => [...document.querySelectorAll(\"{heat} td[data-leapp-taps-at]\")].map(e => e.dataset.leappTapsAt)")
    assert cells == [f"{k}/{tap}" for k in t.steps for tap in t.taps]
    first = page.locator(f"{panel} [data-leapp-taps-first]").get_attribute("data-leapp-taps-first")
    assert first == f"{t.first['step']}/{t.first['tap']}"
    marked = page.locator(f"{heat} td[data-leapp-taps-first-cell]")
    assert marked.count() == 1 and marked.get_attribute("data-leapp-taps-at") == first and marked.text_content() == "✕"
    i, j = len(t.steps) - 1, t.taps.index("h_next")
    page.locator(f"{heat} td[data-leapp-taps-at='{t.steps[i]}/h_next']").click()
    cell = f"{panel} [data-leapp-taps-cell]"
    assert page.locator(cell).get_attribute("data-leapp-taps-cell") == f"{t.steps[i]}/h_next"
    assert f"step {t.steps[i]} · h_next: nrmse" in page.locator(cell).text_content()
    page.wait_for_selector(f"{panel} [data-leapp-taps-hist] .main-svg")
    assert page.locator(f"{panel} [data-leapp-taps-hist] .barlayer .point").count() > 0
    assert page.locator(f"{heat} td.leapp-selected").get_attribute("data-leapp-taps-at") == f"{t.steps[i]}/h_next"
    # local values: the checkbox redraws the grid from the teacher-forced taps and their first cell
    page.locator(f"{panel} [data-leapp-taps-local]").check()
    fl = t.first_local
    page.wait_for_function(f"() => document.querySelector(\"{heat} td[data-leapp-taps-first-cell]\")"
                           f".dataset.leappTapsAt === '{fl['step']}/{fl['tap']}'")
    page.locator(f"{heat} td[data-leapp-taps-at='{t.steps[1]}/gates']").click()
    assert "(local)" in page.locator(cell).text_content()
    page.screenshot(path=str(artifacts_dir / shot), full_page=True)


def test_engine_replay_offline(page, tapped, tmp_path, artifacts_dir):
    mod, rep = tapped
    f = tmp_path / "engine_replay.html"
    to_html(rep, f)
    blocked = open_offline(page, f, "[data-leapp-tab='table']", timeout=15000)
    check_engine_replay(page, "body", mod.NAME, mod, rep.graph.replay, artifacts_dir, "replay_engine_offline.png")
    assert blocked == [] and page.errors == []


CELL = """%%leapp_trace lab_taps --save-path leapp_out --max-cached-io 12 --replay 8 --step-fn step --engine ort-int8
lstm_tapped_policy.body()
"""
TRACE = ".leapp-view:not(.leapp-static)[data-leapp-kind='trace']"


def test_engine_replay_in_jupyterlab(lab, page, artifacts_dir):
    base, token, root = lab
    setup = (f"import sys\nsys.path.insert(0, {str(PIPELINES)!r})\nimport lstm_tapped_policy\n"
             "step = lstm_tapped_policy.Original()\n")
    nb = new_notebook(cells=[new_code_cell("%load_ext leapp_lab"), new_code_cell(setup), new_code_cell(CELL),
                             new_code_cell("print('TAPS-DONE', _leapp.graph.replay.engine('ort-int8').taps.first)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "replay_taps.ipynb")
    open_notebook(page, base, token, "replay_taps.ipynb")
    run_all(page)
    wait_text(page, "TAPS-DONE {'step'", timeout_ms=240000)
    import leapp_lab
    runs = sorted((root / "leapp_out" / "lab_taps" / "leapp_lab" / "runs").iterdir())
    rep = leapp_lab.load(runs[-1])
    view = page.locator(TRACE).first
    view.scroll_into_view_if_needed()
    page.evaluate("el => el.setAttribute('data-test-scope', '1')", view.element_handle())
    mod = load_pipeline("lstm_tapped_policy")
    check_engine_replay(page, f"{TRACE}[data-test-scope='1']", "lab_taps", mod, rep.graph.replay, artifacts_dir,
                        "lab_replay_engine.png")
    assert [e for e in page.errors if "leapp" in e.lower() or "blob:" in e] == []


def test_verify_of_a_prepared_node_draws_the_joints_offline(page, tmp_path, artifacts_dir):
    """Errors by meaning in verify: a node prepared from the trace (its knee offset frozen by the
    export), verified on ort; its output row's panel draws the per-joint bars, the worst one named,
    and the row's why names the joint with its kind and unit."""
    import leapp_lab
    from leapp_lab.cli import main
    mod = load_pipeline("joint_semantics")
    rep = trace(mod, tmp_path / "t")
    d = tmp_path / "b"
    leapp_lab.prepare(rep, d / "policy.onnx", d / "policy.npz", d / "policy.reference.npz", node="policy")
    assert main(["compile", str(d / "policy.onnx"), "--engine", "ort", "--npz", str(d / "policy.npz"),
                 "--out", str(d / "build"), "--quiet"]) == 0
    v = leapp_lab.verify(d / "policy.reference.npz", d / "build", save=False)
    f = tmp_path / "verify.html"
    v.to_html(f)
    page.goto(f.as_uri())
    page.wait_for_selector("[data-leapp-tab='table']", timeout=15000)
    page.click("tr[data-leapp-row='action']")
    els = "[data-leapp-elements='action']"
    page.wait_for_selector(f"{els} [data-leapp-element-plot] .main-svg")
    names = page.evaluate(f"() => [...document.querySelectorAll(\"{els} tr[data-leapp-element]\")].map(e => e.dataset.leappElement)")
    assert names == mod.JOINTS
    assert page.locator(f"{els} tr[data-leapp-worst='true']").get_attribute("data-leapp-element") == "left_knee"
    assert "target/joint/position, rad" in page.locator(els).text_content()
    assert "worst element left_knee (target/joint/position, rad)" in page.locator(".leapp-why").first.text_content()
    bar = page.locator(f"{els} .barlayer .point").nth(1)        # the knee: the others are ~0 tall
    bar.scroll_into_view_if_needed()
    b = bar.bounding_box()
    _click_at(page, b["x"] + b["width"] / 2, b["y"] + b["height"] - 1)
    page.wait_for_function(f"() => document.querySelector(\"{els} [data-leapp-element-picked]\").dataset.leappElementPicked === 'left_knee'")
    assert "(worst element)" in page.locator(f"{els} [data-leapp-element-picked]").text_content()
    page.screenshot(path=str(artifacts_dir / "verify_elements_offline.png"), full_page=True)
    assert page.errors == []

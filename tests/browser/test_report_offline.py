"""The standalone HTML report in real Chromium with every network request blocked."""
import pytest

from harness import hist_state, open_offline, wait_hist
from leapp_lab.views.html import to_html

pytestmark = pytest.mark.browser


def test_trace_report_offline(page, frozen_trace, tmp_path, artifacts_dir):
    f = tmp_path / "trace.html"
    to_html(frozen_trace, f)
    blocked = open_offline(page, f, "[data-leapp-hist-row] .main-svg", timeout=15000)
    first = page.locator("tr[data-leapp-first-divergent='true']")
    assert first.count() == 1
    fid = first.get_attribute("data-leapp-row")
    assert fid == "scale/y/1" and first.get_attribute("data-leapp-status") == "fail"
    assert page.locator("tr[data-leapp-row]").count() == 8
    assert page.locator("tr[data-leapp-status='pass']").count() == 5
    h0 = wait_hist(page, "body", fid, "1")
    assert h0["row"] == fid and h0["sample"] == "1" and "scale/y/1" in h0["title"]   # first divergent shown first
    # click another failing row: hooks, title and bars change
    page.click("tr[data-leapp-row='scale/y/3']")
    h1 = wait_hist(page, "body", "scale/y/3", "3")
    assert h1["sample"] == "3" and h1["bars"] != h0["bars"] and "scale/y/3" in h1["title"]
    # keyboard: down moves to the next row
    page.focus(".leapp-tablewrap")
    page.keyboard.press("ArrowDown")
    page.wait_for_function("() => document.querySelector('[data-leapp-hist-row]').getAttribute('data-leapp-hist-row') === 'head/out/0'")
    assert page.locator("tr.leapp-selected").get_attribute("data-leapp-row") == "head/out/0"
    page.keyboard.press("ArrowUp")
    page.wait_for_function("() => document.querySelector('[data-leapp-hist-row]').getAttribute('data-leapp-hist-row') === 'scale/y/3'")
    page.screenshot(path=str(artifacts_dir / "report_trace_offline.png"), full_page=True)
    # graph: click a node, the node panel opens with its FX graph and the flagged literal
    page.click("[data-leapp-tab='graph']")
    page.click("svg [data-leapp-node='scale']")
    page.wait_for_selector("[data-leapp-node-panel='scale']")
    assert page.locator("[data-leapp-panel='node'] [data-leapp-suspect]").count() >= 1
    assert page.locator("[data-leapp-panel='node'] svg [data-leapp-fx]").count() >= 3
    page.screenshot(path=str(artifacts_dir / "report_trace_node.png"), full_page=True)
    # hazards: the explanation wraps inside the page instead of running off to the right
    # (scoped to the hazards table: the node tab's port-meaning cells are td.leapp-wrap too, hidden now)
    page.click("[data-leapp-tab='hazards']")
    cell = page.locator(".leapp-hazards-table td.leapp-wrap").first
    cell.wait_for(state="visible")
    box = cell.bounding_box()
    assert box["x"] + box["width"] <= page.viewport_size["width"]
    assert page.evaluate("e => e.scrollWidth <= e.clientWidth + 1", cell.element_handle())
    # log filter
    page.click("[data-leapp-tab='log']")
    total = page.locator(".leapp-logline").count()
    page.select_option("select[data-leapp-log-level]", label="ERROR and above")
    errors = page.locator(".leapp-logline").count()
    assert 0 < errors < total
    assert page.locator(".leapp-logline:not([data-leapp-log-level='ERROR']):not([data-leapp-log-level='FATAL'])").count() == 0
    page.select_option("select[data-leapp-log-level]", label="all levels")
    sections = sorted({r.section for r in frozen_trace.graph.log if r.section})
    page.select_option("select[data-leapp-log-section]", sections[-1])
    shown = page.locator(".leapp-logline").count()
    assert shown == sum(r.section == sections[-1] for r in frozen_trace.graph.log) and shown < total
    assert blocked == [] and page.errors == []


def test_verify_report_offline(page, int8_verify, tmp_path, artifacts_dir):
    rep = int8_verify
    f = tmp_path / "verify.html"
    to_html(rep, f)
    blocked = open_offline(page, f, "[data-leapp-hist-row] .main-svg", timeout=15000)
    ids = page.evaluate("() => [...document.querySelectorAll('tr[data-leapp-row]')].map(e => e.dataset.leappRow)")
    assert ids == [r.name for r in rep.table()]                                # model order, as the model says
    first = page.locator("tr[data-leapp-first-divergent='true']")
    assert first.count() == 1 and first.get_attribute("data-leapp-row") == rep.first_divergent
    assert first.get_attribute("data-leapp-status") == "fail"
    a = wait_hist(page, "body", rep.first_divergent, "all")
    page.select_option("select[data-leapp-sample-picker]", "1")
    b = wait_hist(page, "body", rep.first_divergent, "1")
    assert b["bars"] != a["bars"]
    assert "inputs of this sample" in b["text"] and "obs" in b["text"]     # model.npz, sample 1
    other = next(r.name for r in rep.table() if r.name != rep.first_divergent and r.samples)
    page.click(f"tr[data-leapp-row='{other}']")
    c = wait_hist(page, "body", other, "all")
    assert c["bars"] != a["bars"] and other in c["title"]
    page.screenshot(path=str(artifacts_dir / "report_verify_offline.png"), full_page=True)
    page.click("[data-leapp-tab='profile']")
    page.wait_for_selector(".leapp-profile .main-svg")
    points = page.locator(".leapp-profile .scatterlayer .point")
    assert points.count() == len(rep.profile())
    # clicking a point selects its row: back on the table, its histogram shown
    i, name = next((i, p.name) for i, p in enumerate(rep.profile()) if p.name != other)
    box = points.nth(i).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    wait_hist(page, "body", name)
    assert page.locator("tr.leapp-selected").get_attribute("data-leapp-row") == name
    assert blocked == [] and page.errors == []

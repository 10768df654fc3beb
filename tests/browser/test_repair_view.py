"""The repair view in real Chromium, offline: the ranked table, a row's panel, the bar charts."""
import pytest

from harness import open_offline
from leapp_lab.views.html import to_html
from tests.models.repairs import int8_repair

pytestmark = pytest.mark.browser


def test_repair_report_offline(page, tmp_path, artifacts_dir):
    r = int8_repair()
    f = tmp_path / "repair.html"
    to_html(r, f)
    blocked = open_offline(page, f, "tr[data-leapp-row]")
    ranked = [t.added for t in r.ranking()]
    assert [page.locator("tr[data-leapp-row]").nth(i).get_attribute("data-leapp-row")
            for i in range(len(ranked))] == ranked
    kept = page.locator("tr[data-leapp-status='pass']")
    assert sorted(kept.nth(i).get_attribute("data-leapp-row") for i in range(kept.count())) == sorted(r.chosen)
    # the first row is open: its metrics, no histogram
    panel = page.locator("[data-leapp-hist-row]")
    assert panel.get_attribute("data-leapp-hist-row") == ranked[0]
    assert page.locator(".leapp-histplot .main-svg").count() == 0
    page.click(f"tr[data-leapp-row='{ranked[1]}']")
    page.wait_for_function(f"() => document.querySelector('[data-leapp-hist-row]').getAttribute('data-leapp-hist-row') === '{ranked[1]}'")
    assert "largest output nrmse" in panel.inner_text()
    page.screenshot(path=str(artifacts_dir / "repair_table.png"), full_page=True)
    # the bars: one per candidate, then the steps before -> after
    page.click("[data-leapp-tab='bars']")
    page.wait_for_selector("[data-leapp-bars-plot='candidates'] .main-svg")
    page.wait_for_selector("[data-leapp-bars-plot='steps'] .main-svg")
    assert page.locator("[data-leapp-bars-plot='candidates'] g.point").count() == len(ranked)
    assert page.locator("[data-leapp-bars-plot='steps'] g.point").count() == len(r.steps()) + 2
    page.screenshot(path=str(artifacts_dir / "repair_bars.png"), full_page=True)
    # a click on a bar opens its row in the table
    # plotly takes clicks on its drag layer and finds the bar under the pointer: click the bar's top
    # (a log bar's path runs far below the clipped plot area)
    box = page.locator("[data-leapp-bars-plot='candidates'] g.point path").nth(2).bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + 4)
    page.wait_for_function(f"() => document.querySelector('[data-leapp-hist-row]').getAttribute('data-leapp-hist-row') === '{ranked[2]}'")
    assert page.locator("[data-leapp-panel='table']").is_visible()
    assert not blocked and not page.errors

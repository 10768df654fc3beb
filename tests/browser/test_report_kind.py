"""A report kind added as docs/contributing.md shows (one Python module + a registration) is drawn
by the shared front-end, offline in real Chromium: its table with no front-end code of its own, and
its own "summary" tab by the one front-end module the page adds (bundled as the page says)."""
import pytest

from harness import open_offline
from leapp_lab.model import base
from leapp_lab.views import assets, registry
from tests.contributing_example import bundle_with_example, run_example

pytestmark = pytest.mark.browser


def test_the_contributing_example_kind_in_chromium(page, tmp_path, monkeypatch, artifacts_dir):
    monkeypatch.setattr(registry, "_RENDERERS", dict(registry._RENDERERS))
    monkeypatch.setattr(base, "_KINDS", dict(base._KINDS))
    with run_example(tmp_path) as (ns, _, _):
        f = tmp_path / "doctor.html"
        ns["report"].to_html(f)
    blocked = open_offline(page, f, ".leapp-view:not(.leapp-static) tr[data-leapp-row]")
    live = page.locator(".leapp-view:not(.leapp-static)")
    assert live.get_attribute("data-leapp-kind") == "doctor" and live.get_attribute("data-leapp-status") == "fail"
    rows = live.locator("tr[data-leapp-row]")
    assert [(rows.nth(i).get_attribute("data-leapp-row"), rows.nth(i).get_attribute("data-leapp-status"))
            for i in range(rows.count())] == [("onnxruntime", "pass"), ("tensorrt", "fail")]
    assert "failing" in rows.nth(1).inner_text()          # the kind's own status label
    assert live.locator(".leapp-rule").inner_text() == "status: a check fails when what it looks for is missing"
    # the shared parts work for it: the filter keeps the failing check, a click opens a row
    page.check("[data-leapp-filter]")
    page.wait_for_function("() => document.querySelectorAll('.leapp-view:not(.leapp-static) tr[data-leapp-row]').length === 1")
    page.click("tr[data-leapp-row='tensorrt']")
    page.wait_for_function("() => document.querySelector('[data-leapp-hist-row]').getAttribute('data-leapp-hist-row') === 'tensorrt'")
    page.screenshot(path=str(artifacts_dir / "report_kind_doctor.png"), full_page=True)
    assert not blocked and not page.errors, page.errors


def test_the_contributing_example_tab_in_chromium(page, tmp_path, monkeypatch, artifacts_dir):
    """One Python module (the view dict's "summary") and one JS module (src/views/doctor.js, one
    line in src/tabs.js): the tab lists the checks, a click there selects the row everywhere, and a
    row selected in the table is marked on the tab."""
    monkeypatch.setattr(registry, "_RENDERERS", dict(registry._RENDERERS))
    monkeypatch.setattr(base, "_KINDS", dict(base._KINDS))
    bundle = bundle_with_example(tmp_path / "build")
    monkeypatch.setattr(assets, "renderer_js", lambda: bundle)
    with run_example(tmp_path) as (ns, _, _):
        f = tmp_path / "doctor.html"
        ns["report"].to_html(f)
    live = ".leapp-view:not(.leapp-static)"
    blocked = open_offline(page, f, f"{live} tr[data-leapp-row]")
    page.click(f"{live} [data-leapp-tab='summary']")
    items = page.locator(f"{live} [data-leapp-panel='summary'] li[data-leapp-summary-row]")
    assert [items.nth(i).inner_text() for i in range(items.count())] == ["onnxruntime: ok", "tensorrt: failing"]
    items.nth(1).click()
    page.wait_for_function("() => document.querySelector('[data-leapp-hist-row]')"
                           ".getAttribute('data-leapp-hist-row') === 'tensorrt'")
    assert "leapp-selected" in (items.nth(1).get_attribute("class") or "")
    page.click(f"{live} [data-leapp-tab='table']")
    page.click(f"{live} tr[data-leapp-row='onnxruntime']")
    page.click(f"{live} [data-leapp-tab='summary']")
    assert "leapp-selected" in (items.nth(0).get_attribute("class") or "")
    assert "leapp-selected" not in (items.nth(1).get_attribute("class") or "")
    page.screenshot(path=str(artifacts_dir / "report_kind_doctor_summary.png"), full_page=True)
    assert not blocked and not page.errors, page.errors

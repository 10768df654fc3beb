"""The accuracy view at 2,000 rows (a real verify run, tests/scale_report.py), in the offline report and
in JupyterLab: search, next-divergent keys, plot click and Python selection scrolling the row into
view, the permalink restoring a row, a non-finite row showing its reason, CSV of the current table."""
from __future__ import annotations

import csv
import io

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from harness import open_notebook, open_offline, run_cell, wait_hist, wait_text
from leapp_lab.views.html import to_html
from tests.scale_report import ALL_NONFINITE, OVERFLOW_ROW, scale_verify

pytestmark = pytest.mark.browser
LIVE = ".leapp-view:not(.leapp-static)[data-leapp-kind='verify']"

IN_VIEW = """([scope, id]) => { const root = document.querySelector(scope);
    const tr = [...root.querySelectorAll('tr[data-leapp-row]')].find(e => e.dataset.leappRow === id);
    if (!tr) return false;
    const w = root.querySelector('.leapp-tablewrap').getBoundingClientRect(), r = tr.getBoundingClientRect();
    return r.height > 0 && r.top >= w.top && r.bottom <= w.bottom + 1 && tr.classList.contains('leapp-selected'); }"""


@pytest.fixture(scope="module")
def scale(tmp_path_factory):
    return scale_verify(tmp_path_factory.mktemp("scale"))


def _in_view(page, scope, row_id, timeout_ms=10000):
    page.wait_for_function(IN_VIEW, arg=[scope, row_id], timeout=timeout_ms)
    return True


def _next_fail(rep, after, step=1):
    rows = rep.table()
    i = [r.name for r in rows].index(after)
    j = i + step
    while 0 <= j < len(rows):
        if rows[j].in_rule and rows[j].diverged:
            return rows[j].name
        j += step
    return None


def _click_profile_point(page, scope, index):
    """Zoom the error-growth plot around point ``index`` (plotly's own zoom), then click the point."""
    page.evaluate("""([s, i]) => { const d = document.querySelector(s + ' .leapp-profile');
        return Plotly.relayout(d, {'xaxis.range': [i - 8, i + 8]}); }""", [scope, index])
    xy = page.evaluate("""([s, i]) => { const d = document.querySelector(s + ' .leapp-profile');
        const fl = d._fullLayout, y = d.data[0].y[i], box = d.getBoundingClientRect();
        return [box.left + fl.xaxis._offset + fl.xaxis.c2p(i), box.top + fl.yaxis._offset + fl.yaxis.c2p(y)]; }""",
                       [scope, index])
    page.mouse.move(*xy)
    page.mouse.click(*xy)


def test_offline_report_at_2000_rows(page, scale, tmp_path, artifacts_dir):
    rep = scale
    f = tmp_path / "scale.html"
    to_html(rep, f)
    blocked = open_offline(page, f)
    first = rep.first_divergent
    wait_hist(page, "body", first, "all")
    # virtual: a screenful of rows exists, the table says 2000, the first divergent row is in view
    assert 20 < page.locator("tr[data-leapp-row]").count() < 200
    assert page.locator("[data-leapp-count]").text_content() == f"{len(rep.table())} rows"
    _in_view(page, "body", first)
    wrap_h = page.evaluate("() => document.querySelector('.leapp-tablewrap').getBoundingClientRect().height")
    assert wrap_h > 600                                   # the table takes the window (1000 px tall)
    page.screenshot(path=str(artifacts_dir / "scale_offline_table.png"))

    # n / j: next divergent row, scrolled into view; p / k back
    nxt = _next_fail(rep, first)
    page.keyboard.press("n")
    wait_hist(page, "body", nxt, "all")
    _in_view(page, "body", nxt)
    page.keyboard.press("k")
    wait_hist(page, "body", first, "all")

    # search by module scope: only that module's rows, the count says so
    want = [r.name for r in rep.table() if r.scope and (r.scope == "blocks.115" or r.scope.startswith("blocks.115."))]
    page.fill("input[data-leapp-search]", "scope:blocks.115")
    page.wait_for_function("n => document.querySelector('[data-leapp-count]').textContent.startsWith(n + ' of')",
                           arg=len(want))
    shown = page.evaluate("() => [...document.querySelectorAll('tr[data-leapp-row]')].map(e => e.dataset.leappRow)")
    assert shown == want
    # a non-finite row: search its reason, Enter opens the first match, the panel says why
    page.fill("input[data-leapp-search]", "reason:non-finite")
    page.wait_for_function("n => document.querySelector('[data-leapp-count]').textContent.startsWith(n + ' of')",
                           arg=ALL_NONFINITE + 1)
    page.keyboard.press("ArrowDown")       # focus stays in the search box: arrows do not move rows there
    page.focus("input[data-leapp-search]")
    page.keyboard.press("Enter")
    ov = rep.rows[OVERFLOW_ROW]
    wait_hist(page, "body", ov.name, "all")
    page.click(f"tr[data-leapp-row='{rep.rows[OVERFLOW_ROW + 3].name}']")
    gone = rep.rows[OVERFLOW_ROW + 3]
    h = wait_hist(page, "body", gone.name, "all")
    why = page.locator("[data-leapp-why]")
    assert why.get_attribute("data-leapp-why") == "non-finite, nothing-compared"
    assert "more non-finite engine values than reference ones" in why.text_content()
    assert f"non-finite {gone.nonfinite_pairs}" in h["text"]             # the histogram's own bar
    assert page.locator(f"tr[data-leapp-row='{gone.name}'] td.leapp-status").get_attribute("title") == \
        "why: non-finite, nothing-compared"
    page.screenshot(path=str(artifacts_dir / "scale_offline_nonfinite.png"))

    # download CSV of the current (filtered) table, full precision
    with page.expect_download() as dl:
        page.click("[data-leapp-download-csv]")
    lines = list(csv.DictReader(io.StringIO(open(dl.value.path(), encoding="utf-8").read())))
    assert [x["name"] for x in lines] == [r.name for r in rep.table() if r.reason and "non-finite" in r.reason]
    assert float(lines[0]["nrmse"]) == ov.nrmse and lines[0]["reason"] == "non-finite"

    # the permalink: sample 1 of this row, restored by opening the link
    page.select_option("select[data-leapp-sample-picker]", "1")
    wait_hist(page, "body", gone.name, "1")
    page.click("[data-leapp-copy-link]")
    link = page.locator("input[data-leapp-link]").input_value()
    assert "row=" + gone.name in link and "sample=1" in link and "view=verify" in link
    page.keyboard.press("Escape")
    other = page.context.new_page()
    other.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:", "blob:", "about:"))
                else (blocked.append(r.request.url), r.abort()))
    other.goto(link)
    wait_hist(other, "body", gone.name, "1")
    _in_view(other, "body", gone.name)
    assert other.locator("input[data-leapp-search]").input_value() == "reason:non-finite"
    other.screenshot(path=str(artifacts_dir / "scale_offline_permalink.png"))
    other.close()

    # pinned name and status: the name cell stays at the left edge when the table scrolls sideways
    page.fill("input[data-leapp-search]", "")
    page.evaluate("() => { const w = document.querySelector('.leapp-tablewrap'); w.scrollLeft = w.scrollWidth; }")
    left = page.evaluate("""() => { const w = document.querySelector('.leapp-tablewrap');
        const td = document.querySelector('tr.leapp-selected td.leapp-name');
        return [w.scrollLeft, td.getBoundingClientRect().left - w.getBoundingClientRect().left]; }""")
    assert left[0] > 0 and abs(left[1]) <= 2, left

    # the worst badge goes to its row (the first row that lost every value)
    page.click(f"button[data-leapp-badge-row='{rep.worst_tap}']")
    wait_hist(page, "body", rep.worst_tap, "all")
    _in_view(page, "body", rep.worst_tap)
    # columns: hide one; fold the side panel away and the table gets the width
    assert page.locator("th[data-leapp-col='cosine']").count() == 1
    assert page.locator("th[data-leapp-col='mse']").count() == 0          # behind "columns" (issue 21)
    page.click(".leapp-colmenu > summary")
    page.uncheck("input[data-leapp-col-toggle='cosine']")
    assert page.locator("th[data-leapp-col='cosine']").count() == 0
    page.click(".leapp-colmenu > summary")
    width = lambda: page.evaluate("() => document.querySelector('.leapp-tablewrap').clientWidth")  # noqa: E731
    before = width()
    page.click("[data-leapp-panel-toggle]")
    assert page.locator(".leapp-hist").is_hidden() and width() > before + 300
    page.click("[data-leapp-panel-toggle]")
    # group by scope: one header per module, a click folds it
    page.check("input[data-leapp-group]")
    scope = rep.row(rep.worst_tap).scope
    header = page.locator(f"tr[data-leapp-group-row='{scope}']")
    n_scope = sum(r.scope == scope for r in rep.table())
    assert header.count() == 1 and f"{n_scope} rows" in header.text_content()
    header.click()
    assert page.locator(f"tr[data-leapp-row='{rep.worst_tap}']").count() == 0
    page.locator(f"tr[data-leapp-group-row='{scope}']").click()
    _in_view(page, "body", rep.worst_tap)
    page.uncheck("input[data-leapp-group]")

    # error growth: nrmse by default, every judged row plotted; a click far down opens that row in view
    page.click("[data-leapp-tab='profile']")
    page.wait_for_selector(".leapp-profile .main-svg")
    assert page.locator("select[data-leapp-profile-metric]").input_value() == "nrmse"
    assert page.evaluate("() => document.querySelector('.leapp-profile').data.map(t => t.x.length)") == \
        [len(rep.profile()), ALL_NONFINITE]
    page.screenshot(path=str(artifacts_dir / "scale_offline_growth.png"))
    target = len(rep.profile()) - 30
    _click_profile_point(page, "body", target)
    name = rep.profile()[target].name
    wait_hist(page, "body", name, "all")
    _in_view(page, "body", name)
    assert blocked == [] and page.errors == []


def test_lab_at_2000_rows(lab, page, scale, artifacts_dir):
    base, token, root = lab
    rep = scale
    nb = new_notebook(cells=[
        new_code_cell(f"import leapp_lab\nfrom leapp_lab.views.widget import show\nr = leapp_lab.load({str(rep.path)!r})"),
        new_code_cell("w = show(r)"), new_code_cell("print('SCALE-DONE')"),
        new_code_cell("print('SEL', w.selected)"),
        new_code_cell(f"w.select({rep.rows[OVERFLOW_ROW + 7].name!r})")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "scale.ipynb")
    open_notebook(page, base, token, "scale.ipynb")
    url_before = page.url
    for i in range(3):                 # the last two cells are run one by one below
        run_cell(page, i)
    wait_text(page, "SCALE-DONE", timeout_ms=120000)
    first = rep.first_divergent
    wait_hist(page, LIVE, first, "all", timeout_ms=60000)
    _in_view(page, LIVE, first)
    view = page.locator(LIVE)
    assert view.locator("tr[data-leapp-row]").count() < 200

    # keys in the table: n moves to the next divergent row, Lab keeps its active cell
    view.locator(".leapp-tablewrap").focus()
    active = "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"
    cell = page.evaluate(active)
    nxt = _next_fail(rep, first)
    page.keyboard.press("j")
    wait_hist(page, LIVE, nxt, "all")
    _in_view(page, LIVE, nxt)
    page.keyboard.press("p")
    wait_hist(page, LIVE, first, "all")
    assert page.evaluate(active) == cell

    # search, then a non-finite row and its reason
    view.locator("input[data-leapp-search]").fill("reason:non-finite kind:manual")
    want = [r.name for r in rep.table() if r.reason and "non-finite" in r.reason and r.kind == "manual"]
    page.wait_for_function(f"n => document.querySelector(\"{LIVE} [data-leapp-count]\").textContent.startsWith(n + ' of')",
                           arg=len(want))
    view.locator("input[data-leapp-search]").press("Enter")
    wait_hist(page, LIVE, want[0], "all")
    assert view.locator("[data-leapp-why]").get_attribute("data-leapp-why") == "non-finite, nothing-compared"
    page.screenshot(path=str(artifacts_dir / "scale_lab_nonfinite.png"))
    # the selection went back to Python
    run_cell(page, 3)
    wait_text(page, f"SEL {want[0]}", timeout_ms=30000)

    # Python selects a row far away: the browser scrolls it into view (filters cleared to show it)
    run_cell(page, 4)
    target = rep.rows[OVERFLOW_ROW + 7].name
    wait_hist(page, LIVE, target, "all")
    _in_view(page, LIVE, target)

    # a point of the error-growth plot: its row opens, scrolled into view
    view.locator("[data-leapp-tab='profile']").click()
    page.wait_for_selector(f"{LIVE} .leapp-profile .main-svg")
    _click_profile_point(page, LIVE, 40)
    name = rep.profile()[40].name
    wait_hist(page, LIVE, name, "all")
    _in_view(page, LIVE, name)
    page.screenshot(path=str(artifacts_dir / "scale_lab_growth_click.png"))
    assert page.url == url_before                       # a notebook's URL is never rewritten
    assert [e for e in page.errors if "leapp" in e.lower() or "blob:" in e] == []

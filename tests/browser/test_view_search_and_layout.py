"""The views' search and layout in real Chromium (issue 21, "lead with the answer", deliveries 5 and
6): a search that finds nothing says why, permalinks restore their tab, a link to a missing row says
so and keeps its search, graph inputs of the same name on different nodes are drawn apart, the
repair view speaks of segments and keeps its labels off the bars, no stray "null", and in
JupyterLab the widget keeps its height across tabs while the static views carry the hazards'
explanations and fit their output's width.

Fixtures: the session's frozen trace and int8 verify run (tests/browser/conftest.py), the session's
int8 repair (tests/models/repairs.py), and one two-node trace made here (a few seconds)."""
from __future__ import annotations

import re
import urllib.parse

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from harness import open_notebook, open_offline, run_all, wait_hist, wait_text
from leapp_lab.views.html import page as html_page
from leapp_lab.views.html import to_html

pytestmark = pytest.mark.browser


def _stray_null(page) -> list[str]:
    """Lines of the page that are the text "null" (a missing value written as text)."""
    return [x for x in page.evaluate("() => document.body.innerText").splitlines() if x.strip() == "null"]


@pytest.fixture(scope="module")
def twin_trace(tmp_path_factory):
    """Two nodes, each with its own graph input named ``obs``: [1, 8] and [1, 4]."""
    import torch
    from leapp import annotate

    import leapp_lab
    out = tmp_path_factory.mktemp("twin")
    torch.manual_seed(0)
    with leapp_lab.trace("twin", save_path=str(out), max_cached_io=2) as t:
        for _ in range(2):
            a = annotate.input_tensors("arm", {"obs": torch.randn(1, 8)})
            annotate.output_tensors("arm", {"act": torch.tanh(a)}, export_with="jit")
            b = annotate.input_tensors("leg", {"obs": torch.randn(1, 4)})
            annotate.output_tensors("leg", {"act": b * 2}, export_with="jit")
    return t.report


def test_graph_inputs_of_one_name_on_two_nodes_are_drawn_apart(page, twin_trace, tmp_path):
    assert twin_trace.graphs[0].graph_inputs == ["arm/obs", "leg/obs"]
    f = tmp_path / "twin.html"
    to_html(twin_trace, f)
    blocked = open_offline(page, f, ".leapp-view")
    page.click("[data-leapp-tab='graph']")
    panel = "[data-leapp-panel='graph']"
    page.wait_for_selector(f"{panel} svg [data-leapp-io]")
    ios = page.evaluate(f"""() => [...document.querySelectorAll("{panel} svg [data-leapp-io]")].map(g => {{
        const b = g.getBoundingClientRect();
        return {{key: g.getAttribute('data-leapp-io'), hover: g.querySelector('title').textContent,
                 x: b.x, y: b.y, w: b.width, h: b.height}}; }})""")
    obs = sorted((i for i in ios if i["key"].startswith("input:")), key=lambda i: i["key"])
    assert [i["key"] for i in obs] == ["input:arm/obs", "input:leg/obs"]           # two ellipses, not one
    assert obs[0]["hover"] == "graph input obs of arm [1,8]" and obs[1]["hover"] == "graph input obs of leg [1,4]"
    a, b = obs
    assert a["x"] + a["w"] <= b["x"] or b["x"] + b["w"] <= a["x"] or a["y"] + a["h"] <= b["y"] or b["y"] + b["h"] <= a["y"]
    # each feeds its own node: the edges' hover texts name the pairs
    edges = page.evaluate(f"""() => [...document.querySelectorAll("{panel} svg g.edge title")].map(t => t.textContent)""")
    assert "obs → arm" in edges and "obs → leg" in edges and len([e for e in edges if e.startswith("obs →")]) == 2
    # the graph's search finds both by the name they show
    page.fill(f"{panel} [data-leapp-graph-search]", "obs")
    assert page.locator(f"{panel} [data-leapp-graph-count]").text_content() == "1 of 2"
    assert blocked == [] and page.errors == []


def test_search_says_why_it_finds_nothing_and_enter_opens_the_exact_name(page, frozen_trace, tmp_path):
    f = tmp_path / "trace.html"
    to_html(frozen_trace, f)
    blocked = open_offline(page, f, ".leapp-view")
    box, count, note = "input[data-leapp-search]", "[data-leapp-count]", "[data-leapp-search-note]"
    kinds = sorted({h.kind for g in frozen_trace.graphs for h in g.hazards})
    # hazard: is hazards: (the column's key)
    page.fill(box, f"hazard:{kinds[0]}")
    n = page.locator("tr[data-leapp-row]").count()
    assert n > 0 and page.locator(note).inner_text() == ""
    page.fill(box, f"hazards:{kinds[0]}")
    assert page.locator("tr[data-leapp-row]").count() == n
    # an unknown key, a value no row has: the box says so, visibly
    page.fill(box, "colour:red")
    page.wait_for_function(f"() => document.querySelector('{note}').textContent.includes('unknown key')")
    assert page.locator(note).is_visible() and "hazards" in page.locator(note).inner_text()
    assert page.locator("tr[data-leapp-row]").count() == 0
    page.fill(box, "hazard:no-such-hazard")
    text = page.locator(note).inner_text()
    assert text.startswith("no row has hazards “no-such-hazard”") and all(k in text for k in kinds), text
    # Enter: the node named exactly so ("head", not a row whose name only starts with it)
    page.fill(box, "head")
    page.press(box, "Enter")
    page.wait_for_function("() => document.querySelector('[data-leapp-hist-row]').getAttribute('data-leapp-hist-row').startsWith('head/')")
    assert _stray_null(page) == []
    assert blocked == [] and page.errors == []


def test_permalink_restores_its_tab_and_a_missing_row_keeps_the_search(page, int8_verify, tmp_path):
    rep = int8_verify
    f = tmp_path / "verify.html"
    to_html(rep, f)
    other = next(r.name for r in rep.table() if r.name != rep.first_divergent)
    # tab=profile opens the error-growth tab (not the table) with the link's row selected
    frag = "#" + urllib.parse.urlencode({"view": "verify", "tab": "profile", "row": other})
    blocked = open_offline(page, f, ".leapp-view", fragment=frag)
    page.wait_for_selector("[data-leapp-panel='profile'] .main-svg")
    assert page.locator("[data-leapp-panel='profile']").is_visible()
    assert not page.locator("[data-leapp-panel='table']").is_visible()
    assert page.locator(".leapp-tab.leapp-active").get_attribute("data-leapp-tab") == "profile"
    assert page.evaluate("() => document.querySelector('.leapp-view').leappView.state.row") == other
    page.click("[data-leapp-tab='table']")
    wait_hist(page, "body", other)
    # a row the report does not have: said so, and the link's search is kept
    kind = rep.table()[-1].kind
    shown = [r.name for r in rep.table() if r.kind == kind]
    frag = "#" + urllib.parse.urlencode({"view": "verify", "tab": "table", "row": "no_such_tap", "q": f"kind:{kind}"})
    page.goto("about:blank")
    page.goto(f.as_uri() + frag)
    page.wait_for_selector("tr[data-leapp-row]")
    msg = page.locator("[data-leapp-msg]").inner_text()
    assert "no_such_tap" in msg and "not in this report" in msg and "filters cleared" not in msg, msg
    assert page.locator("input[data-leapp-search]").input_value() == f"kind:{kind}"
    ids = page.evaluate("() => document.querySelector('.leapp-view').leappView.rowIds()")
    assert ids == shown
    assert page.evaluate("() => document.querySelector('.leapp-view').leappView.state.row") in shown
    assert _stray_null(page) == []
    assert blocked == [] and page.errors == []


def test_a_table_without_a_rule_writes_no_null(page, tmp_path):
    """A view of another kind (docs/contributing.md's example) whose table has no ``rule``."""
    rows = [{"id": n, "status": s, "tap_status": None, "first_divergent": False, "node": None, "group": None,
             "sub": None, "reason": None, "cells": {"name": n, "status": s}, "info": [],
             "samples": [{"key": "all", "label": "check", "hist": False, "m": []}], "default_sample": "all"}
            for n, s in (("onnxruntime", "pass"), ("tensorrt", "fail"))]
    view = {"kind": "doctor", "schema": 2, "title": "Doctor", "subtitle": "", "status": "fail", "badges": [],
            "notes": [], "tabs": [{"id": "table", "label": "Checks"}],
            "table": {"title": "checks", "rows": rows, "first_divergent": None, "panel_columns": [], "info_columns": [],
                      "columns": [{"key": "name", "label": "check", "type": "text"},
                                  {"key": "status", "label": "status", "type": "status"}]},
            "graphs": [], "nodes": {}, "hazards": [], "log": None, "profile": None}
    f = tmp_path / "doctor.html"
    f.write_text(html_page(view), encoding="utf-8")
    open_offline(page, f, ".leapp-view")
    page.wait_for_selector("tr[data-leapp-row]")
    assert _stray_null(page) == [] and page.errors == []


def test_repair_view_speaks_of_segments(page, tmp_path, artifacts_dir):
    from tests.models.repairs import int8_repair
    r = int8_repair()
    f = tmp_path / "repair.html"
    to_html(r, f)
    blocked = open_offline(page, f, ".leapp-view")
    page.wait_for_selector("tr[data-leapp-row]")
    kept = [t.added for t in r.steps()]
    assert kept and set(kept) == set(r.chosen)
    # a kept segment's panel: the greedy round that chose it and what it did, not "no criterion fires"
    last = kept[-1]
    page.click(f"tr[data-leapp-row='{last}']")
    page.wait_for_function(f"() => document.querySelector('[data-leapp-hist-row]').getAttribute('data-leapp-hist-row') === '{last}'")
    why = page.locator("[data-leapp-why]").inner_text()
    rank = next(t.rank for t in r.ranking() if t.added == last)
    assert f"chosen in greedy round {len(kept)}" in why and f"ranked {rank} of {len(r.ranking())}" in why, why
    assert "no criterion" not in why
    panel = page.locator("[data-leapp-hist-row]").inner_text()
    seg = r.segment(last)
    assert f"nodes in the segment\n{len(seg.nodes)}:" in panel.replace("\t", "\n")
    assert re.search(rf"nodes kept in fp32 with it\s+{len(seg.keep)}", panel), panel
    # counts and n / p speak of segments
    assert page.locator("[data-leapp-count]").inner_text() == f"{len(r.segments)} segments"
    assert "kept segment" in page.locator("[data-leapp-next-divergent]").inner_text()
    page.focus(".leapp-tablewrap")
    for _ in range(len(r.segments)):
        page.keyboard.press("n")
    assert page.locator("[data-leapp-msg]").inner_text() == "no kept segment below"
    # the bars: the target's label is beside the plot, over no bar
    page.click("[data-leapp-tab='bars']")
    for plot in ("candidates", "steps"):
        sel = f"[data-leapp-bars-plot='{plot}']"
        page.wait_for_selector(f"{sel} .main-svg")
        clash = page.evaluate("""s => { const root = document.querySelector(s);
            const bars = [...root.querySelectorAll('g.point path')].map(p => p.getBoundingClientRect());
            const labels = [...root.querySelectorAll('g.annotation')].map(a => [a.textContent, a.getBoundingClientRect()]);
            const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
            return {n: labels.length, clash: labels.filter(([t, l]) => bars.some(b => b.height > 0 && hit(l, b))).map(x => x[0])}; }""", sel)
        assert clash["n"] >= 1 and clash["clash"] == [], (plot, clash)
    page.screenshot(path=str(artifacts_dir / "repair_bars_labels.png"), full_page=True)
    assert _stray_null(page) == []
    assert blocked == [] and page.errors == []


LIVE = ".leapp-view:not(.leapp-static)"


def test_lab_widget_height_and_static_views(lab, page, int8_verify, frozen_trace, artifacts_dir):
    """In JupyterLab: the widget's height does not change with its tab (the cells below stay put);
    the static views (what a saved notebook shows without its kernel) fit the output's width and the
    trace's carries each hazard's explanation."""
    base, token, root = lab
    nb = new_notebook(cells=[
        new_code_cell("import leapp_lab\nfrom IPython.display import HTML, display\n"
                      "from leapp_lab.views.widget import show\nfrom leapp_lab.views.static_html import render_static\n"
                      "from leapp_lab.views.viewdict import build_view\n"
                      f"v = leapp_lab.load({str(int8_verify.path)!r})\nt = leapp_lab.load({str(frozen_trace.path)!r})"),
        new_code_cell("w = show(v)"),
        new_code_cell("display(HTML(render_static(build_view(v))))"),
        new_code_cell("display(HTML(render_static(build_view(t))))"),
        new_code_cell("print('UX-READY')")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "ux.ipynb")
    open_notebook(page, base, token, "ux.ipynb")
    run_all(page)
    wait_text(page, "UX-READY", timeout_ms=120000)
    wait_hist(page, LIVE, int8_verify.first_divergent, "all", timeout_ms=60000)

    # the widget: one height whatever the tab; the next cell does not move
    below = ".jp-Notebook .jp-Cell:nth-child(3)"
    tabs = page.evaluate(f"() => [...document.querySelector('{LIVE}').querySelectorAll('[data-leapp-tab]')].map(b => b.dataset.leappTab)")
    assert tabs[:2] == ["table", "profile"]
    heights = {}
    for tab in tabs + ["table"]:
        page.locator(f"{LIVE} [data-leapp-tab='{tab}']").click()
        if tab == "profile":
            page.wait_for_selector(f"{LIVE} .leapp-profile .main-svg")
        page.wait_for_timeout(300)
        heights.setdefault(tab, []).append(page.evaluate(f"""() => [document.querySelector('{LIVE}').getBoundingClientRect().height,
            document.querySelector('{below}').getBoundingClientRect().top - document.querySelector('{LIVE}').getBoundingClientRect().top]"""))
    # three defects, each reported on its own (one notebook serves all three)
    problems = []
    flat = [h for hs in heights.values() for h in hs]
    if max(h[0] for h in flat) - min(h[0] for h in flat) > 2 or max(h[1] for h in flat) - min(h[1] for h in flat) > 2:
        problems.append(f"widget height (view, offset of the next cell) by tab: {heights}")
    page.screenshot(path=str(artifacts_dir / "lab_widget_profile_tab.png"))

    # the static verify view: every header and cell shows its whole text, and the table fits the
    # output's width (no column cut at the box's edge, no sideways scrolling)
    static = ".leapp-static[data-leapp-kind='verify']"
    page.wait_for_selector(static)
    clipped = page.evaluate(f"""() => {{ const v = document.querySelector("{static}");
        const out = v.closest('.jp-OutputArea-output').getBoundingClientRect();
        const wrap = v.querySelector('.leapp-tablewrap'), w = wrap.getBoundingClientRect();
        const cells = [...v.querySelectorAll('th, td')].filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent);
        return {{cells, wrapRight: w.right, outRight: out.right, scrolls: wrap.scrollWidth > wrap.clientWidth,
                 widths: [wrap.scrollWidth, wrap.clientWidth, ...[...v.querySelectorAll('thead th')].map(t => t.textContent + ' ' + t.offsetWidth)]}}; }}""")
    if clipped["cells"] or clipped["wrapRight"] > clipped["outRight"] + 1 or clipped["scrolls"]:
        problems.append(f"static verify table does not fit: clipped cells {clipped['cells']}, table/box width "
                        f"{clipped['widths'][:2]}, box right {clipped['wrapRight']} / output right {clipped['outRight']}")
    page.locator(static).scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "lab_static_verify.png"))

    # the static trace view: each hazard with what it means
    tstatic = ".leapp-static[data-leapp-kind='trace']"
    text = page.locator(tstatic).inner_text()
    missing = [h.kind for g in frozen_trace.graphs for h in g.hazards
               if h.kind not in text or h.message.split("\n")[0][:60] not in text]
    listed = page.locator(f"{tstatic} [data-leapp-hazard]").count()
    if missing or listed != sum(len(g.hazards) for g in frozen_trace.graphs):
        problems.append(f"static trace view lacks the explanation of {missing} ({listed} hazards listed)")
    page.locator(tstatic).scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "lab_static_trace.png"))
    assert problems == []
    assert [e for e in page.errors if "blob:" in e or "leapp" in e.lower()] == []

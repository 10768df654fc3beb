"""Graphs you can navigate, in real Chromium: the accuracy graph of a 2,000-row verify run (300-node
engine graph) in the offline report and in JupyterLab, linked both ways with the table; zoom, pan,
fit and search on the trace's connectivity and FX graphs; the failing node in view on open."""
from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from harness import open_notebook, open_offline, run_all, run_cell, wait_hist, wait_text
from leapp_lab.model.trace import Edge, GraphReport, NodeReport, PortInfo, TraceReport
from leapp_lab.views.html import to_html
from tests.models.scale_verify import make_scale_run

pytestmark = pytest.mark.browser
GRAPH = "[data-leapp-panel='graph']"
VERIFY = ".leapp-view:not(.leapp-static)[data-leapp-kind='verify']"

IN_VIEW = """([scope, sel]) => { const root = document.querySelector(scope);
    const v = root.querySelector('[data-leapp-graph-view]'), e = v && v.querySelector(sel);
    if (!e) return null;
    const a = v.getBoundingClientRect(), b = e.getBoundingClientRect();
    return b.width > 0 && b.left >= a.left - 1 && b.right <= a.right + 1 && b.top >= a.top - 1 && b.bottom <= a.bottom + 1; }"""


@pytest.fixture(scope="module")
def scale_run(tmp_path_factory):
    """A real verify run: 2,000 rows over a 300-node engine graph (tests/models/scale_verify.py)."""
    return make_scale_run(tmp_path_factory.mktemp("scale"))


def _zoom(page, scope):
    return float(page.locator(f"{scope} [data-leapp-graph-view]").first.get_attribute("data-leapp-graph-zoom"))


def _viewbox(page, scope):
    return [float(x) for x in page.locator(f"{scope} [data-leapp-graph-view] svg").first.get_attribute("viewBox").split()]


def _check_navigation(page, scope):
    """zoom buttons, wheel, fit and drag all move the view; a drag over a node selects nothing."""
    z0 = _zoom(page, scope)
    page.locator(f"{scope} [data-leapp-graph-zoom='in']").first.click()
    z1 = _zoom(page, scope)
    page.locator(f"{scope} [data-leapp-graph-zoom='out']").first.click()
    assert z1 > z0 and abs(_zoom(page, scope) - z0) < 1e-3
    box = page.locator(f"{scope} [data-leapp-graph-view]").first.bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx, cy)
    page.mouse.wheel(0, -300)
    page.wait_for_function("([s, z]) => Number(document.querySelector(s + ' [data-leapp-graph-view]').getAttribute('data-leapp-graph-zoom')) > z",
                           arg=[scope, z0])
    page.locator(f"{scope} [data-leapp-graph-zoom='fit']").first.click()
    assert _zoom(page, scope) <= 1.0
    # after fit every node is inside the viewport
    assert page.evaluate("""s => { const v = document.querySelector(s + ' [data-leapp-graph-view]'), a = v.getBoundingClientRect();
        return [...v.querySelectorAll('[data-leapp-node], [data-leapp-scope], [data-leapp-fx]')].every(e => {
            const b = e.getBoundingClientRect(); return b.left >= a.left - 1 && b.right <= a.right + 1 && b.top >= a.top - 1 && b.bottom <= a.bottom + 1; }); }""", scope)
    vb0, hist0 = _viewbox(page, scope), page.get_attribute("[data-leapp-hist-row]", "data-leapp-hist-row")
    node = page.locator(f"{scope} [data-leapp-graph-view] [data-leapp-node]").first.bounding_box()
    page.mouse.move(node["x"] + 5, node["y"] + 5)
    page.mouse.down()
    page.mouse.move(node["x"] + 65, node["y"] + 45, steps=5)
    page.mouse.up()
    vb1 = _viewbox(page, scope)
    assert vb1[0] < vb0[0] and vb1[1] < vb0[1] and vb1[2:] == vb0[2:]          # panned, same zoom
    assert page.get_attribute("[data-leapp-hist-row]", "data-leapp-hist-row") == hist0


def test_accuracy_graph_offline(page, scale_run, tmp_path, artifacts_dir):
    rep = scale_run
    assert len(rep.table()) == 2000 and len(rep.graph.nodes) == 301
    f = tmp_path / "scale.html"
    to_html(rep, f)
    blocked = open_offline(page, f, "[data-leapp-hist-row] .main-svg", timeout=60000)
    page.click("[data-leapp-tab='graph']")
    page.wait_for_selector(f"{GRAPH} svg [data-leapp-node-row]")
    # on open: the first divergent row's node is drawn (its scope unfolded), outlined and in view
    first = rep.first_divergent
    node = rep.graph.node_of(first)
    fsel = f"[data-leapp-node='{node.name}']"
    el = page.locator(f"{GRAPH} {fsel}")
    assert "leapp-node-selected" in el.get_attribute("class") and el.get_attribute("data-leapp-status") == "fail"
    assert page.evaluate(IN_VIEW, [GRAPH, fsel]) is True
    # hover text: the node, its op and its verdict, no internal ids
    title = el.locator("title").text_content()
    assert title.startswith(f"{node.name} · MatMul · blocks.3.mlp") and f"\n{first}: diverged" in title
    # a diverged node is drawn red-ish whatever criterion fired; nodes under the rule green-yellow
    fills = page.evaluate("""s => [...document.querySelectorAll(s + ' [data-leapp-node-row]')].map(e =>
        [e.getAttribute('data-leapp-status'), e.querySelector('.leapp-box').getAttribute('fill')])""", GRAPH)
    rgb = [(st, int(c[1:3], 16), int(c[3:5], 16)) for st, c in fills]
    assert {st for st, _, _ in rgb} == {"pass", "fail"}
    assert all(g < 0.75 * r for st, r, g in rgb if st == "fail") and all(g >= 0.9 * r for st, r, g in rgb if st == "pass")
    assert "0.01 (rule)" in page.locator(f"{GRAPH} .leapp-graphlegend").text_content()
    page.screenshot(path=str(artifacts_dir / "report_graph_offline.png"))

    # node -> row: click another tapped node; its row is selected (histogram, table) ...
    other = page.evaluate("""([s, f]) => { const v = document.querySelector(s + ' [data-leapp-graph-view]').getBoundingClientRect();
        return [...document.querySelectorAll(s + ' [data-leapp-node-row]')].filter(e => { const b = e.getBoundingClientRect();
            return b.top > v.top && b.bottom < v.bottom && b.left > v.left && b.right < v.right; })
          .map(e => e.getAttribute('data-leapp-node-row')).find(r => r !== f); }""", [GRAPH, first])
    page.click(f"{GRAPH} [data-leapp-node-row='{other}']")
    wait_hist(page, "body", other)
    assert "leapp-node-selected" in page.locator(f"{GRAPH} [data-leapp-node-row='{other}']").get_attribute("class")
    assert other in page.locator(f"{GRAPH} [data-leapp-graph-info]").text_content()
    # ... and "show in table" brings the table with that row selected and in view
    page.click(f"{GRAPH} [data-leapp-graph-to-table]")
    tr = page.locator("tr.leapp-selected")
    assert tr.get_attribute("data-leapp-row") == other and tr.is_visible()
    assert page.evaluate("""() => { const w = document.querySelector('.leapp-tablewrap').getBoundingClientRect(),
        r = document.querySelector('tr.leapp-selected').getBoundingClientRect(); return r.top >= w.top && r.bottom <= w.bottom; }""")

    # row -> node: a row whose node is folded away (blocks.0.attn) unfolds its scope and is centred
    target = next(n for n in rep.graph.nodes if n.scope == "blocks.0.attn" and n.op == "Softmax")
    # the table is virtual: find the row as a user would (the search box), then click it
    page.fill("input[data-leapp-search]", f"name:{target.rows[0]}")
    page.locator(f"tr[data-leapp-row='{target.rows[0]}']").click()
    page.click("[data-leapp-tab='graph']")
    tsel = f"[data-leapp-node='{target.name}']"
    page.wait_for_selector(f"{GRAPH} {tsel}.leapp-node-selected")
    assert page.evaluate(IN_VIEW, [GRAPH, tsel]) is True

    # search: a node folded away is found, unfolded, marked and centred
    hidden = next(n for n in rep.graph.nodes if n.scope == "blocks.12.attn" and n.op == "Softmax")
    assert page.locator(f"{GRAPH} [data-leapp-node='{hidden.name}']").count() == 0
    page.fill(f"{GRAPH} [data-leapp-graph-search]", hidden.outputs[0])
    hsel = f"[data-leapp-node='{hidden.name}']"
    page.wait_for_selector(f"{GRAPH} {hsel}.leapp-current")
    assert page.locator(f"{GRAPH} [data-leapp-graph-count]").text_content() == "1 of 1"
    assert page.evaluate(IN_VIEW, [GRAPH, hsel]) is True

    # folding: a folded scope unfolds on click, and folds back from its band's label
    page.click(f"{GRAPH} [data-leapp-graph-zoom='fit']")
    page.click(f"{GRAPH} [data-leapp-scope='blocks.7']")
    page.wait_for_selector(f"{GRAPH} [data-leapp-scope='blocks.7.attn']")
    assert page.locator(f"{GRAPH} [data-leapp-scope='blocks.7']").count() == 0
    page.click(f"{GRAPH} [data-leapp-scope-open='blocks.7'] text")
    page.wait_for_selector(f"{GRAPH} [data-leapp-scope='blocks.7']")
    # colour by another column: the legend follows that column's rule threshold
    page.select_option(f"{GRAPH} select[data-leapp-graph-metric]", "cosine")
    assert "0.999000 (rule)" in page.locator(f"{GRAPH} .leapp-graphlegend").text_content()
    page.select_option(f"{GRAPH} select[data-leapp-graph-metric]", "nrmse")
    _check_navigation(page, GRAPH)
    page.click(f"{GRAPH} [data-leapp-graph-unfold]")
    page.wait_for_function(f"() => document.querySelectorAll(\"{GRAPH} [data-leapp-node]\").length >= 301")
    page.screenshot(path=str(artifacts_dir / "report_graph_unfolded.png"))
    assert blocked == [] and page.errors == []


def _chain_trace(n: int = 12, failing: int = 9) -> TraceReport:
    """A 12-node chain (3,000+ px wide when laid out), node ``failing`` the first to fail."""
    nodes = [NodeReport(name=f"stage{i:02d}", index=i, backend="onnx-dynamo", samples=2,
                        verdict="fail" if i == failing else "pass",
                        ports=[PortInfo("x", "in", "float32", [2, 64], source=f"stage{i - 1:02d}/y" if i else None),
                               PortInfo("y", "out", "float32", [2, 64])]) for i in range(n)]
    edges = [Edge(f"stage{i - 1:02d}/y", f"stage{i:02d}/x") for i in range(1, n)]
    g = GraphReport(name="chain", verdict="fail", nodes=nodes, edges=edges, graph_inputs=["stage00/x"],
                    graph_outputs=[f"stage{n - 1:02d}/y"])
    return TraceReport(graphs=[g], created="2026-01-01T00:00:00", leapp_version="0.7.2")


def test_trace_graphs_navigate_offline(page, frozen_trace, tmp_path, artifacts_dir):
    f = tmp_path / "chain.html"
    to_html(_chain_trace(), f)
    blocked = open_offline(page, f, allow=("file:", "data:", "about:"))
    page.click("[data-leapp-tab='graph']")
    page.wait_for_selector(f"{GRAPH} svg [data-leapp-node]")
    # too wide to read when fitted: shown at natural size on the failing node
    assert _zoom(page, GRAPH) == 1.0 and page.evaluate(IN_VIEW, [GRAPH, "[data-leapp-node='stage09']"]) is True
    assert page.evaluate(IN_VIEW, [GRAPH, "[data-leapp-node='stage00']"]) is False
    assert page.locator(f"{GRAPH} [data-leapp-node='stage09'] title").text_content() == "stage09 · onnx-dynamo · verdict fail"
    page.fill(f"{GRAPH} [data-leapp-graph-search]", "stage0")       # stage00 .. stage09
    page.wait_for_selector(f"{GRAPH} [data-leapp-node='stage00'].leapp-current")
    assert page.locator(f"{GRAPH} [data-leapp-graph-count]").text_content() == "1 of 10"
    assert page.evaluate(IN_VIEW, [GRAPH, "[data-leapp-node='stage00']"]) is True
    page.press(f"{GRAPH} [data-leapp-graph-search]", "Enter")
    page.wait_for_selector(f"{GRAPH} [data-leapp-node='stage01'].leapp-current")
    assert page.locator(f"{GRAPH} .leapp-match").count() == 10
    _check_navigation(page, GRAPH)
    page.screenshot(path=str(artifacts_dir / "report_trace_graph_nav.png"))
    # a real trace: its FX graph has the same toolbar; search finds the flagged literal's node
    to_html(frozen_trace, tmp_path / "frozen.html")
    page.goto((tmp_path / "frozen.html").as_uri())
    page.click("[data-leapp-tab='graph']")
    page.click(f"{GRAPH} svg [data-leapp-node='scale']")
    node = "[data-leapp-panel='node']"
    page.wait_for_selector(f"{node} svg [data-leapp-fx]")
    suspect = page.locator(f"{node} [data-leapp-suspect]").first.get_attribute("data-leapp-suspect")
    page.fill(f"{node} [data-leapp-graph-search]", suspect)
    page.wait_for_selector(f"{node} [data-leapp-fx='{suspect}'].leapp-current")
    assert "flagged" in page.locator(f"{node} [data-leapp-fx='{suspect}'] title").text_content()
    assert blocked == [] and page.errors == []


def test_accuracy_graph_in_jupyterlab(lab, page, scale_run, artifacts_dir):
    """The widget in JupyterLab: node -> row reaches Python, and a row selected from Python shows
    its node."""
    base, token, root = lab
    rep = scale_run
    second = next(n for n in rep.graph.nodes if n.scope == "blocks.9.mlp" and n.op == "Relu")
    nb = new_notebook(cells=[
        new_code_cell(f"import leapp_lab\nfrom leapp_lab.views.widget import show\nw = show(leapp_lab.load({str(rep.path)!r}))"),
        new_code_cell("print('GRAPH-READY')"),
        new_code_cell(f"w.select({second.rows[0]!r})"),
        new_code_cell("print('SEL', repr(w.selected))")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "graph.ipynb")
    open_notebook(page, base, token, "graph.ipynb")
    run_all(page)
    wait_text(page, f"SEL {second.rows[0]!r}", timeout_ms=240000)
    view = page.locator(VERIFY).first
    view.locator("[data-leapp-tab='graph']").click()
    scope = f"{VERIFY} {GRAPH}"
    # the row Python selected: its scope unfolded, its node outlined and in view
    ssel = f"[data-leapp-node='{second.name}']"
    page.wait_for_selector(f"{scope} {ssel}.leapp-node-selected", timeout=30000)
    assert page.evaluate(IN_VIEW, [scope, ssel]) is True
    # node -> row, back to Python
    target = next(n for n in rep.graph.nodes if n.scope == "blocks.9.mlp" and n.op == "LayerNormalization")
    tnode = page.locator(f"{scope} [data-leapp-node='{target.name}']")
    row = tnode.get_attribute("data-leapp-node-row")        # the node's worst row
    assert row in target.rows
    tnode.click()
    wait_hist(page, VERIFY, row)
    run_cell(page, -1)
    wait_text(page, f"SEL {row!r}", timeout_ms=30000)
    page.screenshot(path=str(artifacts_dir / "lab_accuracy_graph.png"))
    assert [e for e in page.errors if "blob:" in e or "leapp" in e.lower()] == []

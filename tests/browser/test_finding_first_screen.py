"""Lead with the answer (issue 21, Must show): for every report kind (trace, verify, verify --local,
op taps, compare, diff, repair), in the offline report and in the JupyterLab widget, at 1400×900,
without scrolling or clicking: the ``[data-leapp-finding]`` element is visible, its text is
``report.finding``, it names the row a fixture planted (the frozen literal, the broken layer, the
flipped row, the kept segments), and the columns it cites are in view (not clipped by the table's
own scrolling either). The reports come from tests/browser/planted.py, made once for the module."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

import planted
from harness import open_notebook, run_all, wait_text
from leapp_lab.views.html import to_html

pytestmark = pytest.mark.browser
VIEWPORT = {"width": 1400, "height": 900}
KINDS = ("trace", "verify", "local", "op", "diff", "engines", "repair")
#: the columns each kind's finding cites (the row's identity, the verdict, what the sentence quotes)
COLUMNS = {"trace": ("node", "port", "sample", "status", "hazards", "advice"),
           "verify": ("name", "status", "nrmse"),
           "local": ("name", "status", "local_nrmse", "local_share"),
           "op": ("name", "status", "local_nrmse", "local_share"),
           "diff": ("name", "B.status", "B.nrmse", "B.flip", "B.nrmse.ratio"),
           "engines": ("name", "B.status", "B.nrmse", "B.flip", "B.nrmse.ratio"),
           "repair": ("segment", "output_nrmse", "chosen")}
VIEW_KIND = {"trace": "trace", "verify": "verify", "local": "verify", "op": "verify", "diff": "compare",
             "engines": "compare", "repair": "repair"}

# is the element entirely inside the viewport and inside every ancestor that clips (a table that
# scrolls sideways, a notebook's scroller)? its box, or null when not
IN_VIEW = """e => { const b = e.getBoundingClientRect();
    if (!b.width || !b.height) return null;
    let l = 0, t = 0, r = innerWidth, btm = innerHeight;
    for (let p = e.parentElement; p; p = p.parentElement) {
      const s = getComputedStyle(p), q = p.getBoundingClientRect();
      if (!q.width || !q.height) continue;            // a zero-size wrapper draws nothing to clip by
      if (s.overflowX !== "visible") { l = Math.max(l, q.left); r = Math.min(r, q.right); }
      if (s.overflowY !== "visible") { t = Math.max(t, q.top); btm = Math.min(btm, q.bottom); }
    }
    const ok = b.left >= l - 1 && b.right <= r + 1 && b.top >= t - 1 && b.bottom <= btm + 1;
    if (!ok) console.log("off screen: " + JSON.stringify([b.left, b.top, b.right, b.bottom, l, t, r, btm]));
    return ok ? [b.left, b.top, b.right, b.bottom] : null; }"""


def planted_names(kind: str, rep) -> list[str]:
    """What the finding must name: the row (or literal) the fixture planted."""
    if kind == "trace":
        lits = [repr(v) for n in rep.graph.nodes if n.fx for x in n.fx.nodes if x.suspect for v in x.literals]
        assert lits, "the frozen trace has no suspect literal"
        return [lits[0], "scale/"]
    if kind == "op":
        assert rep.row("relu_2").scope.startswith(planted.BROKEN)       # block2's relu
        return ["relu_2"]
    if kind == "repair":
        assert rep.chosen
        return list(rep.chosen)
    return [planted.BROKEN]


@pytest.fixture(scope="module")
def reports(lab_root, frozen_trace):
    reps = planted.make(lab_root / "planted", frozen_trace)
    for kind in KINDS:
        for name in planted_names(kind, reps[kind]):
            assert name in reps[kind].finding, (kind, name, reps[kind].finding)
    return reps


def _check_first_screen(page, scope: str, kind: str, rep) -> None:
    view = page.locator(scope)
    finding = view.locator("[data-leapp-finding]")
    assert finding.count() == 1
    assert finding.inner_text().strip() == rep.finding
    assert finding.evaluate(IN_VIEW), (kind, "the finding is not on the first screen")
    for name in planted_names(kind, rep):
        assert name in finding.inner_text()
    for key in COLUMNS[kind]:
        th = view.locator(f"th[data-leapp-col='{key}']")
        assert th.count() == 1, (kind, key, "not a shown column")
        assert th.evaluate(IN_VIEW), (kind, key, "column off the first screen")
    if kind not in ("trace", "repair"):
        # a link in the finding selects its row
        assert view.locator(f"[data-leapp-finding-row='{planted_names(kind, rep)[0]}']").count() >= 1


@pytest.mark.parametrize("kind", KINDS)
def test_first_screen_offline(chromium, reports, kind, tmp_path, artifacts_dir):
    rep = reports[kind]
    f = tmp_path / f"{kind}.html"
    to_html(rep, f)
    ctx = chromium.new_context(viewport=VIEWPORT)
    page = ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f.as_uri())
    page.wait_for_selector(".leapp-view:not(.leapp-static) [data-leapp-finding]")
    page.wait_for_selector(".leapp-view:not(.leapp-static) tr[data-leapp-row]")
    assert page.evaluate("() => [scrollX, scrollY]") == [0, 0]
    _check_first_screen(page, ".leapp-view:not(.leapp-static)", kind, rep)
    page.screenshot(path=str(artifacts_dir / f"finding_{kind}.png"))
    if kind == "op":
        # every tap is a row (issue 21, Deliver 4): the fused ones too, found by their status
        html = f.read_text()
        assert "--verbose" not in html                                   # no CLI advice in the page
        missing = sorted(r.name for r in rep.rows if r.status == "not-in-engine")
        assert missing
        page.fill("input[data-leapp-search]", "status:not-in-engine")
        page.wait_for_function("n => document.querySelectorAll('.leapp-view:not(.leapp-static) tr[data-leapp-row]')"
                               ".length === n", arg=len(missing))
        assert sorted(page.evaluate("() => [...document.querySelectorAll('.leapp-view:not(.leapp-static) "
                                    "tr[data-leapp-row]')].map(e => e.dataset.leappRow)")) == missing
    assert not errors, errors
    ctx.close()


def test_first_screen_in_jupyterlab(lab, chromium, reports, artifacts_dir):
    base, token, root = lab
    cells = [new_code_cell("import leapp_lab")]
    for kind in KINDS:
        cells.append(new_code_cell(f"leapp_lab.load({str(Path(reports[kind].path))!r})"))
    cells.append(new_code_cell("print('FINDING-DONE')"))
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "finding.ipynb")
    ctx = chromium.new_context(viewport=VIEWPORT)
    page = ctx.new_page()
    page.on("console", lambda m: print("console:", m.text) if m.text.startswith("off screen") else None)
    open_notebook(page, base, token, "finding.ipynb")
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")      # the notebook's own width
    run_all(page)
    wait_text(page, "FINDING-DONE", timeout_ms=180000)
    for i, kind in enumerate(KINDS):
        scope = f".jp-Notebook .jp-Cell:nth-child({i + 2}) .leapp-view:not(.leapp-static)"
        page.wait_for_selector(f"{scope} tr[data-leapp-row]", timeout=60000)
        assert page.locator(scope).get_attribute("data-leapp-kind") == VIEW_KIND[kind]
        # the view's first screen: its top at the top of the notebook (the notebook scrolls, not the view)
        page.locator(scope).evaluate("e => e.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(300)
        page.screenshot(path=str(artifacts_dir / f"finding_lab_{kind}.png"))
        _check_first_screen(page, scope, kind, reports[kind])
    ctx.close()

"""The compare view in real Chromium: a diff of two verify runs and a multi-engine table (onnxruntime fp32,
fp16 and int8 builds of tests/models/conv_net.py), in the offline report and in JupyterLab
(``%leapp_verify REF BUILD_A BUILD_B`` and ``%leapp_diff RUN_A RUN_B``): a flipped row clicked, the side
panel showing every run's histogram and metrics, the "flipped only" filter."""
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from harness import open_notebook, open_offline, run_all, wait_text
from leapp_lab.views.html import to_html
from leapp_lab.views.numfmt import fmt

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
LIVE = ".leapp-view:not(.leapp-static)[data-leapp-kind='compare']"


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    """conv_net with every tap, built for ort / ort-fp16 / ort-int8 and verified (run folders under runs/)."""
    import leapp_lab
    d = tmp_path_factory.mktemp("compare")
    leapp_lab.prepare(str(ROOT / "tests" / "models" / "conv_net.py"), d / "model.onnx", d / "model.npz",
                      d / "model.reference.npz", debug_taps="all")
    runs = {}
    for eng in ("ort", "ort-fp16", "ort-int8"):
        leapp_lab.compile(str(d / "model.onnx"), engine=eng)
        runs[eng] = leapp_lab.verify(str(d / "model.reference.npz"), str(d / f"model.{eng}"), out=d / "runs")
    return d, runs


def _ids(page, scope):
    return page.evaluate("s => [...document.querySelector(s).querySelectorAll('tr[data-leapp-row]')]"
                         ".map(e => e.dataset.leappRow)", scope)


def _panel(page, scope):
    """What the side panel shows: its row and sample, and per run: verdict, drawn bars, plot title."""
    return page.evaluate("""s => { const p = document.querySelector(s).querySelector('[data-leapp-hist-row]');
        const groups = {};
        for (const g of p.querySelectorAll('[data-leapp-hist-group]')) groups[g.dataset.leappHistGroup] = {
            verdict: g.dataset.leappVerdict, title: (g.querySelector('.gtitle') || {}).textContent || '',
            bars: [...g.querySelectorAll('.trace.bars .point path')].map(e => e.getAttribute('d')).join('|')};
        const metrics = [...p.querySelectorAll('.leapp-cmp-metrics tr')].map(tr => [...tr.children].map(c => c.textContent));
        return {row: p.dataset.leappHistRow, sample: p.dataset.leappHistSample, groups, metrics}; }""", scope)


def _wait_panel(page, scope, row, sample, groups):
    page.wait_for_function("""([s, row, sample, groups]) => { const root = document.querySelector(s);
        const p = root && root.querySelector('[data-leapp-hist-row]');
        if (!p || p.dataset.leappHistRow !== row || p.dataset.leappHistSample !== sample) return false;
        return groups.every(g => { const b = p.querySelector(`[data-leapp-hist-group="${g}"]`);
            const t = b && b.querySelector('.gtitle');
            return t && t.textContent.includes(row) && b.querySelectorAll('.trace.bars .point path').length > 0; }); }""",
                           arg=[scope, row, sample, groups], timeout=20000)
    return _panel(page, scope)


def _check_flipped_row(page, scope, cmp, row_name, artifacts_dir, shot):
    """Click ``row_name`` (a flip to fail): the panel shows it for every run, histograms and metrics
    side by side; a sample of its own; then "flipped only" keeps exactly the flipped rows."""
    keys = [s.key for s in cmp.sides]
    view = page.locator(scope)
    tr = view.locator(f"tr[data-leapp-row='{row_name}']")
    assert tr.get_attribute("data-leapp-flip") == "to-fail"
    tr.click()
    p = _wait_panel(page, scope, row_name, "all", keys)
    assert view.locator("tr.leapp-selected").get_attribute("data-leapp-row") == row_name
    row = cmp.row(row_name)
    for k in keys:                                     # each run's own verdict and histogram
        assert p["groups"][k]["verdict"] == row.verdicts[k] and row_name in p["groups"][k]["title"]
    assert p["groups"][keys[0]]["bars"] != p["groups"][keys[-1]]["bars"]
    head, *body = p["metrics"]
    assert head[:1 + len(keys)] == ["metric", *keys]
    nrmse = next(r for r in body if r[0] == "NRMSE")
    for i, k in enumerate(keys, 1):
        assert nrmse[i] == fmt(cmp.cell(row_name, k).nrmse, "num")
    last = keys[-1]
    assert nrmse[head.index(f"{last} / {keys[0]}")] == fmt(row.changes[last]["nrmse"].ratio, "x")
    # one sample: every run's histogram of that sample
    view.locator("select[data-leapp-sample-picker]").select_option("1")
    p1 = _wait_panel(page, scope, row_name, "1", keys)
    assert p1["groups"][last]["bars"] != p["groups"][last]["bars"] and "sample 1" in p1["groups"][last]["title"]
    page.screenshot(path=str(artifacts_dir / shot), full_page=True)
    # "flipped only"
    every = _ids(page, scope)
    view.locator("input[data-leapp-filter='flipped']").check()
    flipped = [r.name for r in cmp.rows if r.flips]
    assert _ids(page, scope) == flipped and len(flipped) < len(every)
    view.locator("input[data-leapp-filter='flipped']").uncheck()
    assert _ids(page, scope) == every


def test_diff_and_engines_in_the_offline_report(page, engines, tmp_path, artifacts_dir):
    d, runs = engines
    diff = runs["ort"].diff(runs["ort-int8"])
    assert diff.to_fail and len(diff.to_fail) < len(diff.rows), "conv_net int8 flips some rows, not all"
    f = tmp_path / "diff.html"
    to_html(diff, f)
    blocked = open_offline(page, f, "[data-leapp-hist-group] .main-svg", timeout=20000)
    scope = ".leapp-view[data-leapp-kind='compare']"
    assert _ids(page, scope) == [r.name for r in diff.rows]                    # model order
    groups = page.evaluate("() => [...document.querySelectorAll('th[data-leapp-group]')].map(e => e.textContent)")
    assert groups == ["A", "B", "change B vs A"]
    assert page.evaluate("() => [...document.querySelectorAll('tr[data-leapp-flip=\"to-fail\"]')]"
                         ".map(e => e.dataset.leappRow)") == diff.to_fail
    first_b = page.locator("tr[data-leapp-first-divergent-in~='B']")
    assert first_b.count() == 1 and first_b.get_attribute("data-leapp-row") == runs["ort-int8"].first_divergent
    assert "◀ first" in first_b.locator("td[data-leapp-side='B']").inner_text()
    assert page.locator("tr[data-leapp-first-divergent-in~='A']").count() == 0   # fp32 never diverges
    # opened on the first flip; click the last one
    _wait_panel(page, scope, diff.to_fail[0], "all", ["A", "B"])
    _check_flipped_row(page, scope, diff, diff.to_fail[-1], artifacts_dir, "compare_diff_offline.png")

    import leapp_lab
    three = leapp_lab.verify(str(d / "model.reference.npz"), [str(d / f"model.{e}") for e in ("ort", "ort-fp16", "ort-int8")],
                             save=False)
    f3 = tmp_path / "engines.html"
    to_html(three, f3)
    blocked += open_offline(page, f3, "[data-leapp-hist-group] .main-svg", timeout=20000)
    groups = page.evaluate("() => [...document.querySelectorAll('th[data-leapp-group]')].map(e => e.textContent)")
    assert groups == ["A · ort", "B · ort-fp16", "C · ort-int8", "change B vs A", "change C vs A"]
    cols = page.evaluate("() => [...document.querySelectorAll('th[data-leapp-col]')].map(e => e.dataset.leappCol)")
    # per engine a compact group (verdict, nrmse; change: flip, ratio), the full metrics behind "columns"
    assert [c for c in cols if c.startswith("C.")] == ["C.status", "C.nrmse", "C.flip", "C.nrmse.ratio"]
    # verdict cells per engine, as the model says
    for r in three.rows:
        got = page.evaluate("n => [...document.querySelector(`tr[data-leapp-row=\"${n}\"]`)"
                            ".querySelectorAll('td[data-leapp-side]')].map(e => e.dataset.leappVerdict)", r.name)
        assert got == [r.verdicts[k] for k in ("A", "B", "C")]
    _check_flipped_row(page, scope, three, three.to_fail[-1], artifacts_dir, "compare_engines_offline.png")
    assert blocked == [] and page.errors == []


def test_compare_magics_in_jupyterlab(lab, page, engines, artifacts_dir):
    base, token, root = lab
    d, runs = engines
    cells = ["%load_ext leapp_lab",
             f"m = %leapp_verify {d / 'model.reference.npz'} {d / 'model.ort'} {d / 'model.ort-int8'} --out {d / 'lab_runs'}\nm",
             f"%leapp_diff {runs['ort'].path} {runs['ort-int8'].path}",
             "print('COMPARE-DONE', m.to_fail)"]
    nb = new_notebook(cells=[new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "compare.ipynb")
    open_notebook(page, base, token, "compare.ipynb")
    run_all(page)
    wait_text(page, "COMPARE-DONE", timeout_ms=180000)
    page.wait_for_function(f"() => document.querySelectorAll(\"{LIVE}\").length === 2", timeout=30000)
    diff = runs["ort"].diff(runs["ort-int8"])
    for i, shot in ((0, "lab_compare_engines.png"), (1, "lab_compare_diff.png")):
        scope = f".jp-Notebook .jp-Cell:nth-child({i + 2}) {LIVE}"
        page.locator(scope).scroll_into_view_if_needed()
        assert _ids(page, scope) == [r.name for r in diff.rows]
        assert page.evaluate(f"() => [...document.querySelectorAll(\"{scope} th[data-leapp-group]\")].map(e => e.textContent)") == \
            (["A · ort", "B · ort-int8", "change B vs A"] if i == 0 else ["A", "B", "change B vs A"])
        _check_flipped_row(page, scope, diff, diff.to_fail[-1], artifacts_dir, shot)
    assert [e for e in page.errors if "blob:" in e or "leapp" in e.lower()] == []

"""The renderer registry (leapp_lab.views.registry): one renderer per (report kind, target).

The worked example of docs/contributing.md ("Adding a report kind") is run from the page itself:
its files are written as they stand there, its script run, its printed text compared.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from leapp_lab import views
from leapp_lab.model import base
from leapp_lab.views import registry
from tests.contributing_example import bundle_with_example, example_blocks, example_js, run_example
from viewfixtures import verify_report

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def scratch_registry(monkeypatch):
    """Registrations made by a test end with it (the kinds and renderers other tests see stay)."""
    monkeypatch.setattr(registry, "_RENDERERS", dict(registry._RENDERERS))
    monkeypatch.setattr(base, "_KINDS", dict(base._KINDS))


@pytest.fixture
def doctor(tmp_path, scratch_registry):
    """The docs example, run: (its namespace, what it printed, what the page shows)."""
    with run_example(tmp_path) as got:
        yield got


def test_the_contributing_example_adds_a_report_kind(doctor, tmp_path):
    ns, out, printed = doctor
    assert out == printed                    # the page shows what its code prints
    report = ns["report"]
    assert str(report) == printed.rstrip("\n")        # str() goes through the same registry
    # the HTML host serves the new kind from its view dict: the offline page carries it as JSON
    page = ns["page"]
    assert page.startswith("<!doctype html>") and '"kind":"doctor"' in page
    assert 'data-leapp-kind="doctor"' in page          # the script-free fallback in <noscript>
    assert 'data-leapp-row="tensorrt" data-leapp-status="fail"' in page
    # and the notebook bundle, without a widget
    bundle = report._repr_mimebundle_(exclude=["application/vnd.jupyter.widget-view+json"])
    assert bundle["text/plain"] == str(report)
    assert 'data-leapp-row="onnxruntime" data-leapp-status="pass"' in bundle["text/html"]
    # a saved doctor report loads back as one (leapp_lab.load dispatches on the new kind)
    report.save(tmp_path / "run")
    back = base.load(tmp_path / "run")
    assert type(back) is type(report) and back.checks == report.checks
    written = back.to_html(tmp_path / "run" / "report.html")
    assert (tmp_path / "run" / "report.html").read_text() == written


def test_the_example_model_imports_no_view_code():
    files, _, _ = example_blocks()
    tree = ast.parse(files["doctor_model.py"])
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert imported and not [m for m in imported if m and m.startswith("leapp_lab.views")]


def test_the_example_adds_one_front_end_module_for_its_own_tab(doctor, tmp_path):
    """The other half of the example: its "summary" tab is one module under extensions/src/views/,
    registered in src/tabs.js, that the pinned esbuild bundles with the rest (the browser test
    draws it: tests/browser/test_report_kind.py)."""
    import shutil
    if shutil.which("node") is None:
        pytest.skip("node is not installed (scripts/install.sh --dev installs Debian's nodejs and npm)")
    path, module, imp, entry = example_js()
    assert path == "src/views/doctor.js" and "export function summaryTab" in module
    assert (imp, entry) == ('import { summaryTab } from "./views/doctor.js";', "summary: summaryTab,")
    view = views.render(doctor[0]["report"], "view")
    assert {"id": "summary", "label": "Summary"} in view["tabs"] and len(view["summary"]["items"]) == 2
    bundle = bundle_with_example(tmp_path)
    assert "data-leapp-summary-row" in bundle and "summary: summaryTab" in bundle
    assert "data-leapp-summary-row" not in (ROOT / "extensions" / "leapp_view.js").read_text(encoding="utf-8")


def test_every_built_in_registration_resolves():
    """A typo in the table (module or function) fails here, not in a user's notebook."""
    for (kind, target), entry in list(registry._RENDERERS.items()):
        assert target in views.TARGETS
        assert callable(views.lookup(kind, target)), (kind, target, entry)
    assert set(views.kinds("view")) >= {"trace", "verify", "compare", "repair"}
    assert set(views.kinds("text")) >= {"trace", "verify", "compare", "repair", "build", "prepare"}


def test_reports_render_through_the_registry(scratch_registry, tmp_path):
    """Every public view method of a report reaches the renderer registered for its kind, with
    its arguments: replacing the renderers replaces what the methods return."""
    r = verify_report()
    calls = []

    def fake(target):
        def renderer(report, **opts):
            calls.append((target, report, opts))
            return target
        return renderer

    for target in ("text", "view", "figure", "model_explorer", "mimebundle"):
        views.register("verify", target, fake(target))
    row = r.rows[0].name
    assert str(r) == "text"
    assert r.figure(row, sample=1) == "figure"
    assert r.growth_figure("mape") == "figure"
    assert r.to_model_explorer(tmp_path, model_name="m") == "model_explorer"
    assert r._repr_mimebundle_(include=["text/plain"]) == "mimebundle"
    assert [(t, o) for t, rep, o in calls if rep is r] == [
        ("text", {}),
        ("figure", {"plot": "hist", "row": row, "sample": 1}),
        ("figure", {"plot": "growth", "metric": "mape"}),
        ("model_explorer", {"directory": tmp_path, "model_name": "m", "graph_id": None}),
        ("mimebundle", {"include": ["text/plain"], "exclude": None}),
    ]
    # the HTML host draws the registered view dict
    views.register("verify", "view", lambda report: {"kind": "verify", "title": "replaced view",
                                                     "table": {"rows": [], "columns": []}})
    assert "<title>replaced view</title>" in r.to_html()


def test_a_missing_renderer_is_one_clear_error(scratch_registry):
    from leapp_lab.model.build import BuildReport
    b = BuildReport()
    with pytest.raises(TypeError, match=r"no view for a report of kind 'build' \(BuildReport\); "
                                        r"views exist for: trace, verify, compare, repair"):
        views.render(b, "view")
    with pytest.raises(views.NoRenderer, match=r"no figure renderer for a report of kind 'build'.*"
                                              r"exist for: verify, replay; add one with leapp_lab.views.register"):
        views.render(b, "figure")
    with pytest.raises(ValueError, match="unknown view target 'pdf'; targets: text, view, html"):
        views.render(b, "pdf")
    with pytest.raises(ValueError, match="write it as 'module:function'"):
        views.register("build", "view", "leapp_lab.views.text_verify.render_build")


def test_the_figure_words_live_in_the_verify_view():
    """VerifyReport's view methods hold no words of a view (the histogram's title, the
    non-finite label): they name a target and pass their arguments on."""
    src = (ROOT / "leapp_lab" / "model" / "verify.py").read_text()
    cls = next(n for n in ast.parse(src).body if isinstance(n, ast.ClassDef) and n.name == "VerifyReport")
    for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)
               and n.name in ("figure", "growth_figure", "to_model_explorer", "__str__")):
        body = fn.body[1:] if ast.get_docstring(fn) else fn.body
        words = [c.value for s in body for c in ast.walk(s) if isinstance(c, ast.Constant)
                 and isinstance(c.value, str) and not re.fullmatch(r"\w+", c.value)]
        assert not words, f"VerifyReport.{fn.name} spells view text {words}: it belongs in views/verify_view.py"


def test_prepare_text_shows_each_op_whole():
    """The op column is as wide as its longest op: InstanceNormalization was cut to 'InstanceNormal'."""
    from leapp_lab.model.prepare import PrepareReport
    from leapp_lab.model.tap import TapEntry

    rows = [TapEntry(name="norm", kind="manual", order=3, producer_op="InstanceNormalization"),
            TapEntry(name="out", kind="output", order=4, producer_op="Gemm")]
    text = str(PrepareReport(model="m.py", rows=rows))
    lines = [ln for ln in text.splitlines() if "norm" in ln or ln.strip().startswith("4")]
    assert any("InstanceNormalization" in ln for ln in lines), text

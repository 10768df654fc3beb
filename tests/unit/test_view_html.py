"""The standalone HTML report and the script-free text/html fallback, without a browser."""
import json
import re

from leapp_lab.model.base import load
from leapp_lab.views import assets
from leapp_lab.views.html import page, report, to_html, view_json
from leapp_lab.views.static_html import render_static
from leapp_lab.views.viewdict import build_view
from viewfixtures import EVIL, trace_report, verify_report

URL = re.compile(r"https?://[^\s\"'<>)\\]+")
NAMESPACES = ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink")


def _without_plotly(text: str) -> str:
    bundle = assets.plotly_js()
    assert text.count(bundle) == 1
    return text.replace(bundle, "")


def test_standalone_html_is_offline_and_complete():
    text = to_html(trace_report())
    rest = _without_plotly(text)
    # nothing outside the vendored bundle names a network address except SVG namespace URIs
    assert {u for u in URL.findall(rest)} <= set(NAMESPACES)
    # no element loads anything: no src/href attributes, no CSS url()/@import, no fetch
    assert not re.search(r"\b(src|href)\s*=", rest)
    assert not re.search(r"url\(\s*['\"]?(?!#)", rest) and "@import" not in rest   # only url(#fragment)
    assert "fetch(" not in assets.renderer_js() and "XMLHttpRequest" not in assets.renderer_js()
    assert assets.PLOTLY_VERSION in text and assets.renderer_js() in text
    # dagre (the accuracy graph's layout) is inlined too, without its source-map comment
    assert text.count(assets.dagre_js()) == 1 and "sourceMappingURL" not in rest
    # the view travels as JSON and parses back to the same dict
    m = re.search(r'<script type="application/json" id="leapp-view">(.*?)</script>', text, re.S)
    assert json.loads(m.group(1)) == json.loads(json.dumps(build_view(trace_report())))


def test_every_user_string_is_escaped():
    for rep in (trace_report(evil=True), verify_report(evil=True)):
        text = to_html(rep)
        rest = _without_plotly(text)
        assert "<script>alert" not in rest
        # the only <script> elements are ours: plotly (+ dagre), the view JSON, the renderer module
        assert len(re.findall(r"<script\b", rest)) == 3
        m = re.search(r'<script type="application/json" id="leapp-view">(.*?)</script>', text, re.S)
        assert "<" not in m.group(1) and json.loads(m.group(1))      # '<' only as \u003c
        static = render_static(build_view(rep))
        assert "<script" not in static and "&lt;script&gt;alert(&quot;x&quot;)" in static


def test_view_json_escapes_script_breakers():
    s = view_json({"a": "</script><!-- & \u2028"})
    assert "</" not in s and "<!--" not in s and "&" not in s
    assert json.loads(s) == {"a": "</script><!-- & \u2028"}


def test_static_fallback_has_the_dom_hooks():
    v = build_view(verify_report())
    html = render_static(v)
    assert 'data-leapp-row="tap_b" data-leapp-status="fail" data-leapp-tap-status="compared" ' \
           'data-leapp-first-divergent="true"' in html
    assert 'data-leapp-row="tap_c" data-leapp-status="uncompared" data-leapp-tap-status="no-reference"' in html
    assert html.count('data-leapp-first-divergent="true"') == 1
    assert html.count("data-leapp-row=") == 4


def test_html_is_deterministic_and_written_atomically(tmp_path):
    r = verify_report()
    a = to_html(r, tmp_path / "a.html")
    assert a == to_html(r) == (tmp_path / "a.html").read_text(encoding="utf-8")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_report_from_a_run_folder(tmp_path):
    r = trace_report()
    run = r.save(tmp_path / "run")
    out = report(run, tmp_path / "r.html")
    text = out.read_text(encoding="utf-8")
    assert 'data-leapp-row="scale/y/1"' in text       # inside the <noscript> fallback
    assert load(run).graph.name == "frozen"
    assert page(build_view(load(run))) == text


def test_report_cli(tmp_path):
    import subprocess
    import sys
    run = verify_report().save(tmp_path / "run")
    out = tmp_path / "v.html"
    p = subprocess.run([sys.executable, "-m", "leapp_lab.cli", "report", str(run), "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert 'data-leapp-row="tap_b"' in out.read_text(encoding="utf-8") and str(out) in p.stdout
    bad = subprocess.run([sys.executable, "-m", "leapp_lab.cli", "report", str(tmp_path / "nope"), "-o", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "nope" in bad.stderr and "Traceback" not in bad.stderr


def _render_in_fresh_process(kind: str, path: str) -> bytes:
    import os
    import subprocess
    import sys
    from pathlib import Path
    here = Path(__file__).parent
    code = ("import sys; sys.path[:0] = [%r, %r]\n"
            "from viewfixtures import trace_report, verify_report\n"
            "from leapp_lab.views.html import to_html\n"
            "to_html(%s_report(), %r)\n") % (str(here), str(here.parents[1]), kind, path)
    env = dict(os.environ)
    if kind == "trace_nodot":           # the hand layout, as on a machine without Graphviz
        env["PATH"] = "/nonexistent"
        code = code.replace("trace_nodot_report", "trace_report")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)
    return Path(path).read_bytes()


def test_the_same_report_renders_byte_identical_html_with_graphs(tmp_path, monkeypatch):
    """Rendering is a pure function of the report: two renders (in two processes, so no counter,
    cache or id in the process can differ) give the same bytes, graphs included."""
    view = build_view(trace_report())
    assert view["graphs"][0]["svg"] and any(n["fx"] and n["fx"]["svg"] for n in view["nodes"].values())
    for kind in ("trace", "trace_nodot", "verify"):
        a = _render_in_fresh_process(kind, str(tmp_path / f"{kind}-a.html"))
        b = _render_in_fresh_process(kind, str(tmp_path / f"{kind}-b.html"))
        assert a == b, kind
        assert b"<svg" in a or kind == "verify"
    assert to_html(trace_report()) == to_html(trace_report())
    from leapp_lab.views import graphs
    monkeypatch.setattr(graphs.shutil, "which", lambda name: None)     # the hand layout, in-process
    assert to_html(trace_report()) == to_html(trace_report())

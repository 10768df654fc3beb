"""The two outputs of a view in a kernel: the static view (marked, with the rule that hides the
widget output after it) and the widget without HTML (so nothing draws the static view twice)."""
from IPython.core.interactiveshell import InteractiveShell

from leapp_lab.views.static_html import STATIC_COMPANION_CSS, render_static
from leapp_lab.views.viewdict import build_view
from leapp_lab.views.widget import WIDGET_MIME, LeappView, display_view, static_bundle

from viewfixtures import trace_report


def test_widget_output_has_no_html_and_static_output_names_the_widget():
    r = trace_report()
    w = LeappView(r)
    assert len(w._static_id) == 32 and LeappView(r)._static_id != w._static_id
    wb = w.widget_bundle()
    assert set(wb) == {WIDGET_MIME, "text/plain"} and wb[WIDGET_MIME]["model_id"] == w.model_id
    sb = static_bundle(r, w.view, w._static_id)
    assert f'data-leapp-static="{w._static_id}"' in sb["text/html"] and STATIC_COMPANION_CSS in sb["text/html"]
    assert 'data-leapp-row="scale/y/1"' in sb["text/html"] and sb["text/plain"] == str(r)
    plain = render_static(build_view(r))         # the report's own text/html fallback: no marker, no rule
    assert "data-leapp-static" not in plain


def test_display_outside_a_kernel_publishes_only_the_static_view(capsys):
    shell = InteractiveShell.instance()
    published = []
    orig = shell.display_pub.publish
    shell.display_pub.publish = lambda data, *a, **k: published.append(data)
    try:
        display_view(trace_report())
    finally:
        shell.display_pub.publish = orig
    assert [set(d) for d in published] == [{"text/plain", "text/html"}]
    assert "data-leapp-static" not in published[0]["text/html"]

"""The anywidget view without a browser or kernel: traits, selection, mime bundles."""
import pytest
import traitlets

from leapp_lab.views import assets
from leapp_lab.views.viewdict import build_view
from leapp_lab.views.widget import WIDGET_MIME, LeappView, mimebundle
from viewfixtures import trace_report, verify_report


def test_view_trait_is_the_view_dict_and_selection_starts_at_first_divergent():
    r = verify_report()
    w = LeappView(r)
    assert w.view == build_view(r)
    assert w.selected == "tap_b" and w.sample == ""
    assert w._esm.startswith("if (!globalThis.Plotly)") and w._esm.endswith(assets.renderer_js())
    assert assets.plotly_js() in w._esm and w._css == assets.renderer_css()
    assert w.row()["first_divergent"] is True


def test_select_moves_the_selection_and_checks_names():
    w = LeappView(verify_report())
    seen = []
    w.observe(lambda ch: seen.append(ch["new"]), names=["selected"])
    w.select("output_0", sample=1)
    assert (w.selected, w.sample) == ("output_0", "1") and seen == ["output_0"]
    assert w.row()["id"] == "output_0"
    with pytest.raises(KeyError, match="no row 'nope'"):
        w.select("nope")
    with pytest.raises(KeyError, match="no sample '7'"):
        w.select("tap_b", sample=7)
    with pytest.raises(traitlets.TraitError, match="no row"):
        w.selected = "also-nope"


def test_widget_mimebundle_has_widget_html_and_text():
    r = trace_report()
    data = LeappView(r)._repr_mimebundle_()
    assert set(data) == {WIDGET_MIME, "text/html", "text/plain"}
    assert data[WIDGET_MIME]["model_id"]
    assert 'data-leapp-row="scale/y/1"' in data["text/html"] and "<script" not in data["text/html"]
    assert "frozen" in data["text/plain"]


def test_report_mimebundle_outside_a_kernel_is_text_and_html():
    r = trace_report()
    data = r._repr_mimebundle_()
    assert set(data) == {"text/html", "text/plain"}      # no kernel here: no widget
    assert data["text/plain"] == str(r)
    assert set(mimebundle(r, include=["text/plain"])) == {"text/plain"}
    assert set(mimebundle(r, exclude=["text/plain"])) == {"text/html"}
    assert set(mimebundle(r, widget=True)) == {WIDGET_MIME, "text/html", "text/plain"}
    assert set(mimebundle(r, widget=True, exclude=[WIDGET_MIME])) == {"text/html", "text/plain"}


def test_nan_in_a_hand_made_view_becomes_null():
    v = build_view(verify_report())
    v["table"]["rows"][0]["cells"]["mape"] = float("nan")
    w = LeappView(view=v)
    assert w.view["table"]["rows"][0]["cells"]["mape"] is None

"""The optional Netron panel in Chromium: only localhost reachable; the consent dialog is Netron's."""
import pytest

pytestmark = pytest.mark.browser
pytest.importorskip("netron", reason="optional: pip install netron (leapp-lab[netron])")

from leapp_lab.views.netron import show_model  # noqa: E402
from onnx_tiny import tiny_onnx  # noqa: E402


def test_netron_panel_renders_the_model(page, tmp_path, artifacts_dir):
    f = tmp_path / "relu.onnx"
    tiny_onnx(f)
    panel = show_model(f, height=500)
    external = []
    try:
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
            (f"http://localhost:{panel.port}", "data:", "blob:", "about:")) else (external.append(r.request.url), r.abort()))
        page.set_content(panel._repr_html_())
        assert "phones home" in page.inner_text(".leapp-netron")
        frame = page.frame_locator("iframe")
        frame.get_by_text("Accept", exact=True).click(timeout=15000)    # Netron's own consent dialog
        frame.locator("svg#canvas g.node").first.wait_for(timeout=20000)
        page.screenshot(path=str(artifacts_dir / "netron_panel.png"))
    finally:
        panel.stop()
    # what was blocked is Netron's telemetry, nothing leapp_lab asked for
    assert all("ipinfo.io" in u or "google" in u for u in external)

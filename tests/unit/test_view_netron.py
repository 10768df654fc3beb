"""The optional Netron panel: served locally, embedded with its caveats stated."""
import datetime as dt
import socket
import urllib.request

import pytest

netron = pytest.importorskip("netron", reason="optional: pip install netron (leapp-lab[netron])")

from leapp_lab.views.netron import AGE_LIMIT_DAYS, build_date, notice, show_model  # noqa: E402


def tiny_onnx(path):
    import onnx
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    onnx.save(helper.make_model(g), path)


def test_notice_states_telemetry_consent_and_expiry():
    d = build_date()
    assert isinstance(d, dt.datetime)
    text = notice()
    assert "phones home" in text and "consent" in text and str(AGE_LIMIT_DAYS) in text
    assert str((d + dt.timedelta(days=AGE_LIMIT_DAYS)).date()) in text


def test_show_model_serves_and_stops(tmp_path):
    f = tmp_path / 'm<"x">.onnx'
    tiny_onnx(f)
    panel = show_model(f)
    try:
        body = urllib.request.urlopen(panel.url, timeout=5).read().decode()
        assert "netron" in body.lower()
        html = panel._repr_html_()
        assert f'src="http://localhost:{panel.port}/"' in html and 'm&lt;&quot;x&quot;&gt;.onnx' in html
    finally:
        panel.stop()
    with socket.socket() as s:
        assert s.connect_ex(("localhost", panel.port)) != 0
    with pytest.raises(FileNotFoundError, match="no such model"):
        show_model(tmp_path / "missing.onnx")

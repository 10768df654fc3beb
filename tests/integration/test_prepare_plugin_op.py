"""--debug-plugin-taps with a real custom op (torch.library + onnxruntime-extensions kernel) and
--debug-op-taps with references from torch (FX) and from onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from leapp_lab.model.jsonio import load_npz
from leapp_lab.taps.loader import load_module
from leapp_lab.onnxio.manifest import read_manifest
from tests.models import model_path
from tests.models.builds import prepared
from tests.models.custom_ops import ort_session_options


def _fc1(name: str, x: np.ndarray) -> np.ndarray:
    torch.manual_seed(0)
    net = load_module(model_path(name)).Model().eval()
    with torch.no_grad():
        return net.fc1(torch.from_numpy(x)).numpy()


def test_plugin_taps_on_a_real_custom_op():
    b = prepared("custom_op_model", taps=("all",), plugin=True)
    m = onnx.load(str(b.onnx))
    onnx.checker.check_model(m, full_check=True)
    custom = [n for n in m.graph.node if n.domain not in ("", "ai.onnx")]
    assert [(n.domain, n.op_type) for n in custom] == [("ai.onnx.contrib", "FastTanh")]
    man = read_manifest(m)
    plugin = [t for t in man.taps if t.kind == "plugin"]
    node = custom[0].name
    assert [t.name for t in plugin] == [f"{node}__in0", f"{node}__out0"]
    t_in, t_out = plugin
    assert t_in.tensor == custom[0].input[0] and t_out.tensor == custom[0].output[0]
    assert t_in.reference_source == "torch"            # an FX node (linear) carries this value
    assert t_out.reference_source == "onnxruntime"     # FastTanh's output exists only in ONNX
    assert t_in.source == t_out.source and t_in.source.startswith("custom_op_model.py:")
    src = model_path("custom_op_model").read_text().splitlines()
    assert "scaled_tanh" in src[int(t_in.source.rsplit(":", 1)[1]) - 1]
    assert [t.name for t in man.taps] == [f"{node}__in0", f"{node}__out0", "after_plugin"]

    ref, inp = load_npz(b.reference), load_npz(b.npz)
    for i in range(2):
        h = _fc1("custom_op_model", inp["x"][i])
        np.testing.assert_allclose(ref[t_in.name][i], h, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(ref[t_out.name][i], np.tanh(h), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(ref["after_plugin"][i], 0.5 * np.tanh(h), rtol=1e-6, atol=1e-7)
    # the prepared model runs in onnxruntime with the extensions library and emits every tap
    sess = ort.InferenceSession(str(b.onnx), ort_session_options(), providers=["CPUExecutionProvider"])
    got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {"x": inp["x"][1]})))
    for k in (t_in.name, t_out.name, "after_plugin", "output_0"):
        np.testing.assert_allclose(got[k], ref[k][1], rtol=1e-5, atol=1e-6)


def test_plugin_boundary_without_reference_is_reported_not_fatal():
    b = prepared("custom_op_model", taps=("all",), plugin=True, session_options=False)
    man = read_manifest(b.onnx)
    out = next(t for t in man.taps if t.name.endswith("__out0"))
    assert out.reference_source is None
    assert "FastTanh" in out.uncompared_reason and "onnxruntime cannot run" in out.uncompared_reason
    ref = load_npz(b.reference)
    assert out.name not in ref                        # nothing to pair with in the reference ...
    assert out.name in [o.name for o in onnx.load(str(b.onnx)).graph.output]  # ... but exposed
    row = b.report.row(out.name)
    assert row.reference_source is None and row.uncompared_reason == out.uncompared_reason
    assert b.report.uncompared == [row]
    assert any("uncompared" in w for w in b.report.warnings)
    assert "uncompared: " in str(b.report)
    # the other boundary still has its torch reference
    assert next(t for t in man.taps if t.name.endswith("__in0")).reference_source == "torch"


def test_custom_op_without_any_kernel_model_for_compile():
    """The model compile must reject: onnxruntime cannot run MysteryGate even with the library."""
    b = prepared("custom_op_nokernel_model", plugin=True)
    man = read_manifest(b.onnx)
    assert [t.producer_op for t in man.taps] == ["Gemm", "MysteryGate"]
    assert all(t.reference_source == "torch" for t in man.taps)     # both carry FX names
    with pytest.raises(Exception, match="MysteryGate"):
        ort.InferenceSession(str(b.onnx), ort_session_options(), providers=["CPUExecutionProvider"])
    ref, inp = load_npz(b.reference), load_npz(b.npz)
    h = _fc1("custom_op_nokernel_model", inp["x"][0])
    np.testing.assert_allclose(ref[man.taps[1].name][0], h / (1 + np.exp(-h)), rtol=1e-5, atol=1e-6)


def test_op_taps_reference_from_torch_and_onnxruntime():
    b = prepared("mlp_policy", taps=("hidden_1",), op=True)
    m = onnx.load(str(b.onnx))
    onnx.checker.check_model(m, full_check=True)
    man = read_manifest(m)
    op_taps = [t for t in man.taps if t.kind == "op"]
    produced = {o for n in m.graph.node for o in n.output}
    assert len(op_taps) >= 6
    for t in op_taps:
        assert t.name == t.tensor and t.tensor in produced
        assert t.source and t.source.startswith("mlp_policy.py:")
        assert m.graph.node[t.order].output[0] == t.tensor or t.tensor in m.graph.node[t.order].output
    assert "tanh" not in {t.name for t in op_taps}      # already exposed by the manual tap hidden_1
    sources = {t.reference_source for t in op_taps}
    assert sources == {"torch", "onnxruntime"}
    ref, inp = load_npz(b.reference), load_npz(b.npz)
    sess = ort.InferenceSession(str(b.onnx), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    for i in range(3):
        got = dict(zip(names, sess.run(None, {"obs": inp["obs"][i]})))
        for t in op_taps:
            np.testing.assert_allclose(got[t.name], ref[t.name][i], rtol=1e-5, atol=1e-6)
    # independent recomputation: the Elu value (named by the exporter, not by FX) and a Gemm
    torch.manual_seed(0)
    net = load_module(model_path("mlp_policy")).Model().eval()
    elu = next(t for t in op_taps if t.producer_op == "Elu")
    assert elu.reference_source == "onnxruntime"
    gemm1 = next(t for t in op_taps if t.name == "linear_1")
    assert gemm1.reference_source == "torch"
    with torch.no_grad():
        obs = torch.from_numpy(inp["obs"][2])
        h1 = torch.tanh(net.fc1((obs - net.obs_mean) / net.obs_std))
        pre2 = net.fc2(h1)
        np.testing.assert_allclose(ref["linear_1"][2], pre2.numpy(), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(ref[elu.name][2], torch.nn.functional.elu(pre2).numpy(),
                                   rtol=1e-5, atol=1e-6)
    src = model_path("mlp_policy").read_text().splitlines()
    assert "fc2" in src[int(elu.source.rsplit(":", 1)[1]) - 1]
    df = b.report.to_dataframe()
    assert list(df["order"]) == sorted(df["order"])
    assert set(df["kind"]) == {"op", "manual", "output"}


def test_op_taps_conv_fused_batchnorm_referenced_from_torch():
    b = prepared("conv_net", op=True)
    man = read_manifest(b.onnx)
    assert all(t.reference_source == "torch" for t in man.taps)
    first = man.taps[0]
    assert first.order == 0 and first.producer_op == "Conv"   # Conv with batch-norm folded in
    ref, inp = load_npz(b.reference), load_npz(b.npz)
    torch.manual_seed(0)
    net = load_module(model_path("conv_net")).Model().eval()
    with torch.no_grad():
        bn = net.stem[1](net.stem[0](torch.from_numpy(inp["x"][0])))
    np.testing.assert_allclose(ref[first.name][0], bn.numpy(), rtol=1e-5, atol=1e-6)

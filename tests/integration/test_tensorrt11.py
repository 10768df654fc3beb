"""TensorRT 11 engines on a GPU: strongly typed networks built from the typed ONNX of the build
(engine.onnx), taps as debug tensors. Skipped where TensorRT or a CUDA GPU is missing (this
machine: NVIDIA's package index is unreachable, so 'tensorrt' cannot be installed); run them where
both exist (pip install -e '.[tensorrt]')."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

import verify_models as vm
from leapp_lab.model.jsonio import load_npz
from leapp_lab.steps.compile import compile
from leapp_lab.steps.verify import verify
from tests.models.builds import prepared


def _need_trt():
    try:
        import tensorrt as trt
    except Exception as exc:  # noqa: BLE001 - ImportError, or OSError of a missing libnvinfer
        pytest.skip(f"no TensorRT here ({type(exc).__name__}: {exc}); needs 'tensorrt' 11 and a CUDA GPU")
    import torch
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch; TensorRT engines need one")
    if int(trt.__version__.split(".")[0]) < 11:
        pytest.skip(f"TensorRT {trt.__version__}: these tests are for TensorRT 11")
    return trt


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    _need_trt()
    return vm.shared_net(tmp_path_factory)


def test_trt_fp32_strongly_typed_from_engine_onnx_with_debug_tensor_taps(net, tmp_path):
    _, paths = net
    rep = compile(paths["onnx"], engine="trt-fp32", out=tmp_path / "trt")
    assert rep.engine_onnx == "engine.onnx" and (tmp_path / "trt" / "engine.onnx").is_file()
    assert "mark_debug" in rep.observer.debug_tensors
    assert rep.observer.checked and rep.observer.outputs_agree
    v = verify(paths["reference"], rep.path, save=False)
    assert v.row("output_0").nrmse < 1e-3
    assert all(t.binding == "bound" for t in rep.taps if t.kind == "manual")


def test_trt_fp16_keep_fp32_builds_the_typed_onnx_ort_fp16_runs(net, tmp_path):
    _, paths = net
    m = onnx.load(str(paths["onnx"]))
    keep = [next(n.name for n in m.graph.node if n.op_type == "Conv")]
    trt16 = compile(paths["onnx"], engine="trt-fp16", keep_fp32=keep, out=tmp_path / "t16")
    ort16 = compile(paths["onnx"], engine="ort-fp16", keep_fp32=keep, out=tmp_path / "o16", naive_check=False)
    g_trt = onnx.load(str(tmp_path / "t16" / "engine.onnx")).graph
    g_ort = onnx.load(str(tmp_path / "o16" / "engine.untapped.onnx")).graph
    # the same typed graph: TensorRT built what onnxruntime ran
    assert [n.op_type for n in g_trt.node] == [n.op_type for n in g_ort.node]
    assert {i.data_type for i in g_trt.initializer} >= {onnx.TensorProto.FLOAT16, onnx.TensorProto.FLOAT}
    a = load_npz(tmp_path / "t16" / "sample_outputs.npz")["output_0"].astype(np.float64)
    b = load_npz(tmp_path / "o16" / "sample_outputs.npz")["output_0"].astype(np.float64)
    assert np.abs(a - b).max() <= 0.05 * np.abs(b).max()
    assert trt16.keep_fp32 == keep


def test_trt_int8_builds_the_qdq_onnx_and_op_taps_are_unfused_debug_tensors(tmp_path):
    _need_trt()
    p = prepared("conv_net", taps=("all",), op=True)
    rep = compile(p.onnx, engine="trt-int8", out=tmp_path / "t8")
    g = onnx.load(str(tmp_path / "t8" / "engine.onnx")).graph
    assert any(n.op_type == "QuantizeLinear" for n in g.node) and rep.quantizer == "ort"
    assert "mark_unfused_tensors_as_debug_tensors" in rep.observer.debug_tensors
    ops = [t for t in rep.taps if t.kind == "op"]
    assert any(t.binding == "bound" for t in ops)
    assert all(t.binding == "bound" or "fusions" in (t.binding_reason or "") for t in ops)
    v = verify(p.reference, rep.path, save=False)
    assert v.row(rep.model_outputs[0]).nrmse < 0.05

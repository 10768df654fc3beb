"""TensorRT engines (``trt-fp32``, ``trt-fp16``): GPU only, optional. (int8 TensorRT needs a calibrated
QDQ model and is not offered yet; ``ort-int8`` is the int8 engine.)

TensorRT is an optional extra (``pip install 'leapp-lab[tensorrt]'``) that cannot be installed on
machines without NVIDIA's package index, and needs a CUDA GPU. It is imported only when one of these
engines is asked for; anywhere else compile fails with :class:`EngineUnavailable` naming what is
missing. Taps follow the same rule as the onnxruntime engines: the untapped network is built first,
then the tapped one; build.json records whether outputs and layer kinds agree.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .base import Built, CompileError, Engine, EngineUnavailable, Runner


def _import_trt():
    try:
        import tensorrt as trt  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - ImportError, or OSError from missing libnvinfer
        raise EngineUnavailable(
            "TensorRT engines need the 'tensorrt' Python package (pip install 'leapp-lab[tensorrt]', "
            "from NVIDIA's index) and an NVIDIA GPU with a CUDA driver; importing tensorrt failed: "
            f"{type(exc).__name__}: {exc}. On this machine use an onnxruntime engine: --engine ort, "
            "ort-fp16 or ort-int8 (repair: ort-fp16 or ort-int8; plain ort has no reduced precision)."
        ) from None
    return trt


def _cuda_torch():
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        torch = None
    if torch is None or not torch.cuda.is_available():
        raise EngineUnavailable(
            "TensorRT engines need an NVIDIA GPU visible to torch (torch.cuda.is_available() is "
            "False here: no GPU, no CUDA driver, or a CPU-only torch build). On this machine use an "
            "onnxruntime engine: --engine ort, ort-fp16 or ort-int8 (repair: ort-fp16 or ort-int8).")
    return torch


class TrtRunner(Runner):
    name = "tensorrt"

    def __init__(self, artifact: Path):
        super().__init__()
        self.artifact = Path(artifact)

    def _activate_impl(self) -> None:
        trt = _import_trt()
        self.torch = _cuda_torch()
        self.logger = trt.Logger(trt.Logger.WARNING)
        rt = trt.Runtime(self.logger)
        self.engine = rt.deserialize_cuda_engine(self.artifact.read_bytes())
        if self.engine is None:
            raise CompileError(f"{self.artifact}: TensorRT could not deserialize this engine")
        self.context = self.engine.create_execution_context()
        self.trt = trt
        names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        mode = trt.TensorIOMode.INPUT
        self._inputs = [n for n in names if self.engine.get_tensor_mode(n) == mode]
        self._outputs = [n for n in names if self.engine.get_tensor_mode(n) != mode]

    def _run_impl(self, feed, output_names):
        torch, trt = self.torch, self.trt
        keep = []
        for n in self._inputs:
            t = torch.from_numpy(np.ascontiguousarray(feed[n])).cuda()
            keep.append(t)
            self.context.set_input_shape(n, tuple(t.shape))
            self.context.set_tensor_address(n, t.data_ptr())
        outs = {}
        for n in self._outputs:
            shape = tuple(self.context.get_tensor_shape(n))
            dt = trt.nptype(self.engine.get_tensor_dtype(n))
            t = torch.empty(shape, dtype=torch.from_numpy(np.zeros(0, dt)).dtype, device="cuda")
            outs[n] = t
            self.context.set_tensor_address(n, t.data_ptr())
        stream = torch.cuda.current_stream()
        if not self.context.execute_async_v3(stream.cuda_stream):
            raise CompileError("TensorRT execute_async_v3 failed")
        stream.synchronize()
        names = output_names or self._outputs
        return {n: outs[n].cpu().numpy() for n in names}

    def _deactivate_impl(self) -> None:
        self.context = self.engine = None

    @property
    def input_names(self):
        return list(self._inputs)

    @property
    def output_names(self):
        return list(self._outputs)


class TrtEngine(Engine):
    name = "trt-fp32"
    precision = "fp32"

    def check_available(self) -> None:
        _import_trt()
        _cuda_torch()

    def _build_one(self, model, mark: list[str], calibration, log):
        trt = _import_trt()
        logger = trt.Logger(trt.Logger.WARNING)
        builder = trt.Builder(logger)
        network = builder.create_network(0)
        parser = trt.OnnxParser(network, logger)
        if not parser.parse(model.SerializeToString()):
            errs = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
            raise CompileError(f"TensorRT's ONNX parser rejected the model: {errs}")
        tensors = {}
        for i in range(network.num_layers):
            layer = network.get_layer(i)
            for j in range(layer.num_outputs):
                tensors[layer.get_output(j).name] = layer.get_output(j)
        unbound = {}
        for name in mark:
            if name in tensors:
                network.mark_output(tensors[name])
            else:
                unbound[name] = f"tensor {name!r} is not in the TensorRT network"
        config = builder.create_builder_config()
        if self.precision == "fp16":
            config.set_flag(trt.BuilderFlag.FP16)
        if self.keep_fp32:
            self._constrain_fp32(trt, network, config, log)
        blob = builder.build_serialized_network(network, config)
        if blob is None:
            raise CompileError("TensorRT failed to build the engine (see compile.log)")
        return bytes(blob), unbound

    def _constrain_fp32(self, trt, network, config, log) -> None:
        """Layer precision constraints: the layers TensorRT's ONNX parser named after the ``keep_fp32``
        nodes compute and write fp32, and the builder must obey. (Exact names only: exporters number
        nodes ``node_linear``, ``node_linear_1`` ..., so a prefix would catch other nodes.)"""
        config.set_flag(trt.BuilderFlag.OBEY_PRECISION_CONSTRAINTS)
        hit = set()
        for i in range(network.num_layers):
            layer = network.get_layer(i)
            if layer.name not in self.keep_fp32:
                continue
            hit.add(layer.name)
            layer.precision = trt.float32
            for j in range(layer.num_outputs):
                if layer.get_output(j).dtype in (trt.float32, trt.float16):
                    layer.set_output_type(j, trt.float32)
        missing = sorted(self.keep_fp32 - hit)
        log(f"{self.name}: {len(hit)} nodes kept in fp32 (layer precision constraints)"
            + (f"; no TensorRT layer for {missing[:5]}" if missing else ""))

    def build(self, untapped, taps, calibration, workdir: Path, log, progress=None, naive=None) -> Built:
        t0 = time.perf_counter()
        blob_u, _ = self._build_one(untapped, [], calibration, log)
        (workdir / "engine.untapped.engine").write_bytes(blob_u)
        outputs = {o.name for o in untapped.graph.output}
        marked = [t for t in taps if t.value not in outputs]
        blob_t, unbound = self._build_one(untapped, [t.value for t in marked], calibration, log)
        (workdir / "engine.engine").write_bytes(blob_t)
        log(f"{self.name}: built in {time.perf_counter() - t0:.1f}s")
        bound = [t.bind("bound", t.value, "alias") if t.value in outputs  # shows a model output: copy it
                 else t.bind("unbound", reason=unbound[t.value]) if t.value in unbound
                 else t.bind("bound", t.value, "direct") for t in taps]
        return Built(workdir / "engine.engine", workdir / "engine.untapped.engine", bound, {}, {})

    def runner(self, artifact: Path) -> Runner:
        return TrtRunner(artifact)


class TrtFp16Engine(TrtEngine):
    name = "trt-fp16"
    precision = "fp16"

"""TensorRT 11 engines (``trt-fp32``, ``trt-fp16``, ``trt-int8``): GPU only, optional.

TensorRT 11 builds strongly typed networks only (``NetworkDefinitionCreationFlag.STRONGLY_TYPED``):
no builder precision flags, no per-layer precision; each tensor has the type the ONNX gives it. So
the precision is written into the ONNX first, by the same code the onnxruntime engines use
(typed_onnx.py: float16 with Casts around the ``keep_fp32`` nodes; int8: Q/DQ by the ``ort`` or
``modelopt`` quantizer), saved in the build as ``engine.onnx`` (build.json ``engine_onnx``), and
TensorRT builds exactly that file. The same file is what ``ort-fp16`` / ``ort-int8`` run on a CPU.

Taps are debug tensors (tensorrt_debug.py), not extra outputs: op taps through
``mark_unfused_tensors_as_debug_tensors`` (every tensor that survives fusion; the fused ones are
reported unbound, fusion is kept), manual and plugin taps through ``mark_debug``. The untapped
engine is built too and the observer-effect record says which debug APIs the tapped one used.

TensorRT is an optional extra (``pip install 'leapp-lab[tensorrt]'``, TensorRT 11) that needs a CUDA
GPU. It is imported only when one of these engines is asked for; anywhere else compile fails with
:class:`EngineUnavailable` naming what is missing.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import onnx

from .base import Built, CompileError, Engine, EngineUnavailable, Runner
from .tensorrt_debug import make_listener, supports_unfused_debug

_OTHER = ("On this machine use an onnxruntime engine: --engine ort, ort-fp16 or ort-int8 (repair: "
          "ort-fp16 or ort-int8; plain ort has no reduced precision); they run the same typed ONNX.")


def _import_trt():
    try:
        import tensorrt as trt  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - ImportError, or OSError from missing libnvinfer
        raise EngineUnavailable(
            "TensorRT engines need the 'tensorrt' Python package, version 11 (pip install "
            "'leapp-lab[tensorrt]') and an NVIDIA GPU with a CUDA driver; importing tensorrt failed: "
            f"{type(exc).__name__}: {exc}. {_OTHER}") from None
    if not hasattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED"):
        raise EngineUnavailable(f"TensorRT {getattr(trt, '__version__', '?')} cannot build strongly typed "
                                f"networks; install TensorRT 11 (pip install 'leapp-lab[tensorrt]'). {_OTHER}")
    return trt


def _cuda_torch():
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        torch = None
    if torch is None or not torch.cuda.is_available():
        raise EngineUnavailable(
            "TensorRT engines need an NVIDIA GPU visible to torch (torch.cuda.is_available() is "
            f"False here: no GPU, no CUDA driver, or a CPU-only torch build). {_OTHER}")
    return torch


class TrtRunner(Runner):
    """Runs a serialized engine; ``debug``: debug tensor name -> the tap name it is returned as."""
    name = "tensorrt"

    def __init__(self, artifact: Path, debug: dict[str, str] | None = None, unfused: bool = False):
        super().__init__()
        self.artifact = Path(artifact)
        self.debug = dict(debug or {})
        self.unfused = unfused

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
        self.listener = None
        if self.debug:
            self.listener = make_listener(trt, self.debug)
            self.context.set_debug_listener(self.listener)
            if self.unfused:
                self.context.unfused_tensors_debug_state = True
            for tensor in self.debug:
                self.context.set_tensor_debug_state(tensor, True)

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
        if self.listener is not None:
            self.listener.values.clear()
        stream = torch.cuda.current_stream()
        if not self.context.execute_async_v3(stream.cuda_stream):
            raise CompileError("TensorRT execute_async_v3 failed")
        stream.synchronize()
        got = {n: outs[n].cpu().numpy() for n in self._outputs}
        if self.listener is not None:
            missing = [tap for tap in self.debug.values() if tap not in self.listener.values]
            if missing:
                raise CompileError(f"TensorRT did not report the debug tensors of taps {missing} during the "
                                   "run; compile again (a fused tensor is reported unbound at build time)")
            got.update(self.listener.values)
        names = output_names or self.output_names
        return {n: got[n] for n in names}

    def _deactivate_impl(self) -> None:
        self.context = self.engine = self.listener = None

    @property
    def input_names(self):
        return list(self._inputs)

    @property
    def output_names(self):
        return list(self._outputs) + [t for t in self.debug.values() if t not in self._outputs]


class TrtEngine(Engine):
    name = "trt-fp32"
    precision = "fp32"

    def check_available(self) -> None:
        _import_trt()
        _cuda_torch()
        if self.quantizer == "modelopt":
            from .ort_modelopt import check_available
            check_available()

    def typed(self, model, calibration, workdir: Path, log, progress) -> onnx.ModelProto:
        """The typed ONNX TensorRT builds: precision written into the graph."""
        if self.precision == "fp16":
            from .typed_onnx import describe, to_fp16
            m, notes = to_fp16(model, self.keep_fp32)
            log(f"{self.name}: typed fp16 ONNX (onnxconverter-common): {describe(m)}"
                + (f"; {len(self.keep_fp32)} nodes kept in fp32 (Casts in the ONNX)" if self.keep_fp32 else ""))
            for note in notes:
                log(f"fp16: {note} (a weight beyond float16's range)")
            return m
        if self.precision == "int8":
            if self.quantizer == "modelopt":
                from .ort_modelopt import convert_int8_modelopt
                return convert_int8_modelopt(model, calibration, workdir, log, progress, keep_fp32=self.keep_fp32)
            from .ort_precision import convert_int8_qdq
            return convert_int8_qdq(model, calibration, workdir, log, progress, keep_fp32=self.keep_fp32)
        return model

    def _build_one(self, trt, typed: bytes, exposed: list, log) -> tuple[bytes, list[str]]:
        """One strongly typed engine of ``typed``; ``exposed``: taps made debug tensors. Returns the
        plan and the debug APIs used."""
        logger = trt.Logger(trt.Logger.WARNING)
        builder = trt.Builder(logger)
        network = builder.create_network(1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED))
        parser = trt.OnnxParser(network, logger)
        if not parser.parse(typed):
            errs = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
            raise CompileError(f"TensorRT's ONNX parser rejected the typed ONNX (engine.onnx): {errs}")
        tensors = {}
        for i in range(network.num_layers):
            layer = network.get_layer(i)
            for j in range(layer.num_outputs):
                tensors[layer.get_output(j).name] = layer.get_output(j)
        apis: list[str] = []
        single = [t for t in exposed if t.kind != "op"]
        if any(t.kind == "op" for t in exposed):
            if supports_unfused_debug(network):
                network.mark_unfused_tensors_as_debug_tensors()
                apis.append("mark_unfused_tensors_as_debug_tensors")
            else:  # an older TensorRT: one by one, which may keep those tensors from being fused
                single = list(exposed)
        marked = [t for t in single if t.value in tensors]
        for t in marked:
            network.mark_debug(tensors[t.value])
        if marked:
            apis.append("mark_debug")
        config = builder.create_builder_config()
        blob = builder.build_serialized_network(network, config)
        if blob is None:
            raise CompileError("TensorRT failed to build the engine (see compile.log)")
        return bytes(blob), apis

    def build(self, untapped, taps, calibration, workdir: Path, log, progress=None, naive=None) -> Built:
        trt = _import_trt()
        t0 = time.perf_counter()
        typed = self.typed(untapped, calibration, workdir, log, progress)
        onnx_path = workdir / "engine.onnx"
        onnx.save(typed, str(onnx_path))
        data = onnx_path.read_bytes()
        blob_u, _ = self._build_one(trt, data, [], log)
        (workdir / "engine.untapped.engine").write_bytes(blob_u)
        outputs = {o.name for o in typed.graph.output}
        exposed = [t for t in taps if t.value not in outputs]
        blob_t, apis = self._build_one(trt, data, exposed, log)
        (workdir / "engine.engine").write_bytes(blob_t)
        log(f"{self.name}: strongly typed engines built from engine.onnx in {time.perf_counter() - t0:.1f}s; "
            f"taps as debug tensors: {', '.join(apis) or 'none'}")
        _cuda_torch()
        engine = trt.Runtime(trt.Logger(trt.Logger.WARNING)).deserialize_cuda_engine(blob_t)
        if engine is None:
            raise CompileError("TensorRT could not deserialize the engine it built")
        bound, debug = [], {}
        for t in taps:
            if t.value in outputs:      # shows a model output: copy it
                bound.append(t.bind("bound", t.value, "alias"))
            elif engine.is_debug_tensor(t.value):
                debug[t.value] = t.name
                bound.append(t.bind("bound", t.value, "direct"))
            else:
                how = ("it is not among the tensors that survive TensorRT's fusions "
                       "(mark_unfused_tensors_as_debug_tensors reports only those)" if t.kind == "op"
                       else "tensor is not in the TensorRT network")
                bound.append(t.bind("unbound", reason=f"tensor {t.value!r}: {how}"))
        self._debug = {str(workdir / "engine.engine"): (debug, "mark_unfused_tensors_as_debug_tensors" in apis)}
        return Built(workdir / "engine.engine", workdir / "engine.untapped.engine", bound, {}, {},
                     engine_onnx=onnx_path, debug=apis)

    def runner(self, artifact: Path) -> Runner:
        debug, unfused = getattr(self, "_debug", {}).get(str(artifact), ({}, False))
        return TrtRunner(artifact, debug, unfused)


class TrtFp16Engine(TrtEngine):
    name = "trt-fp16"
    precision = "fp16"


class TrtInt8Engine(TrtEngine):
    name = "trt-int8"
    precision = "int8"
    quantizer = "ort"

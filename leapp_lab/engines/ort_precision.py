"""Precision conversions of the ``ort*`` engines: fp16 emulation (weights rounded, activations
round-tripped through float16) and static int8 QDQ quantization."""
from __future__ import annotations

import tempfile
import threading
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from leapp_lab.onnxio.graph_edit import value_types

from .base import CompileError, ProgressFn
from .ort_session import session_options

_QUANT_LOCK = threading.Lock()


def convert_fp16_emulated(model: onnx.ModelProto, keep_fp32: frozenset[str] | set[str] = frozenset()
                          ) -> onnx.ModelProto:
    """fp32 graph that rounds like fp16: every float32 initializer rounded to float16 (and back),
    every float32 activation (graph inputs and node outputs) sent through Cast(fp16)->Cast(fp32).
    onnxruntime's CPU provider computes float16 graphs in fp32 (it inserts casts and folds weights
    back), so a real fp16 graph would not show fp16 activation rounding (notes JUPYTER_STACK §7).

    ``keep_fp32``: names of nodes left in fp32 (the block list of a mixed-precision engine): their
    outputs are not rounded, their weights are not rounded, and they read graph inputs unrounded;
    what they read from rounded nodes stays rounded (an fp32 layer after an fp16 one sees fp16
    values)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    keep = frozenset(keep_fp32)
    types = {name: et for name, (et, _) in value_types(m).items()}
    # an initializer read only by kept nodes stays fp32; one read by both kinds gets a rounded copy
    # for the rounded nodes (the kept ones read the original)
    readers: dict[str, set[bool]] = {}
    for n in g.node:
        for name in n.input:
            readers.setdefault(name, set()).add(n.name in keep)
    copied: dict[str, str] = {}
    extra_inits = []
    for init in g.initializer:
        if init.data_type == TensorProto.FLOAT:
            who = readers.get(init.name, {False})
            if who == {True}:
                continue
            a = numpy_helper.to_array(init)
            with np.errstate(over="ignore"):
                r = a.astype(np.float16).astype(np.float32)
            if True in who:
                copied[init.name] = f"{init.name}__fp16"
                extra_inits.append(numpy_helper.from_array(r, copied[init.name]))
            else:
                init.CopyFrom(numpy_helper.from_array(r, init.name))
    g.initializer.extend(extra_inits)
    init_names = {i.name for i in g.initializer}
    nodes = []
    # graph inputs: round once, consumers read the rounded copy
    rename: dict[str, str] = {}
    for inp in g.input:
        if inp.name in init_names or types.get(inp.name) != TensorProto.FLOAT:
            continue
        r = f"{inp.name}__fp16"
        nodes += [helper.make_node("Cast", [inp.name], [r + "_h"], to=TensorProto.FLOAT16,
                                   name=f"leapp_lab_fp16/{inp.name}/h"),
                  helper.make_node("Cast", [r + "_h"], [r], to=TensorProto.FLOAT,
                                   name=f"leapp_lab_fp16/{inp.name}/f")]
        rename[inp.name] = r
    for n in g.node:
        if n.name in keep:
            nodes.append(n)
            continue
        for i, name in enumerate(n.input):
            if name in rename:
                n.input[i] = rename[name]
            elif name in copied:
                n.input[i] = copied[name]
        outs = list(n.output)
        casts = []
        for j, o in enumerate(outs):
            if not o or types.get(o) != TensorProto.FLOAT:
                continue
            raw = f"{o}__fp32"
            n.output[j] = raw
            casts += [helper.make_node("Cast", [raw], [o + "__h"], to=TensorProto.FLOAT16,
                                       name=f"leapp_lab_fp16/{o}/h"),
                      helper.make_node("Cast", [o + "__h"], [o], to=TensorProto.FLOAT,
                                       name=f"leapp_lab_fp16/{o}/f")]
        nodes.append(n)
        nodes += casts
    del g.node[:]
    g.node.extend(nodes)
    return m


def convert_int8_qdq(model: onnx.ModelProto, calibration: list[dict[str, np.ndarray]], workdir: Path,
                     log: Callable[[str], None], progress: ProgressFn | None = None,
                     keep_fp32: frozenset[str] | set[str] = frozenset()) -> onnx.ModelProto:
    """Static int8 QDQ quantization (onnxruntime.quantization.quantize_static, MinMax) calibrated on
    the prepared inputs (every sample of model.npz). ``keep_fp32``: node names left unquantized
    (quantize_static's ``nodes_to_exclude``)."""
    import logging

    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                          QuantType, quantize_static)

    workdir = Path(workdir).resolve()
    src = workdir / ".int8-src.onnx"
    dst = workdir / ".int8-qdq.onnx"
    onnx.save(model, str(src))

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.i = 0

        def get_next(self):
            if self.i >= len(calibration):
                return None
            feed = calibration[self.i]
            self.i += 1
            if progress:
                progress("calibrate", self.i, len(calibration))
            return feed

    from onnxruntime.quantization import calibrate as _cal

    def _calib_session(self):  # the calibrator's own session, with the custom-op library registered
        import onnxruntime as ort
        self.infer_session = ort.InferenceSession(self.augmented_model_path,
                                                  sess_options=session_options(False),
                                                  providers=self.execution_providers)

    # the patch below and the chdir are process-wide: one quantization at a time per process (a
    # sweep may run builds on the threads of one Dask worker)
    _QUANT_LOCK.acquire()
    orig_session = _cal.CalibraterBase.create_inference_session
    _cal.CalibraterBase.create_inference_session = _calib_session
    root = logging.getLogger()
    old = root.level
    root.setLevel(logging.ERROR)  # quantize_static logs a "consider pre-processing" warning each time
    try:
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            import os
            cwd = os.getcwd()
            os.chdir(tmp)  # the calibrator writes augmented_model.onnx into the cwd
            try:
                quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ,
                                activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                                calibrate_method=CalibrationMethod.MinMax, per_channel=False,
                                nodes_to_exclude=sorted(keep_fp32) or None)
            finally:
                os.chdir(cwd)
    except CompileError:
        raise
    except Exception as exc:  # noqa: BLE001
        # the inputs were checked finite (feeds.check_calibration): a "scale issue" is a tensor
        # inside the model with no finite range on them (NaN or Inf made by the model itself)
        hint = ("; a tensor inside the model has no finite value range on the calibration samples "
                "(the model makes NaN or Inf from them): build the ort engine and verify it to find "
                "the first non-finite tap" if "scale issue" in str(exc) else "")
        raise CompileError(f"int8 quantization (onnxruntime.quantization.quantize_static) failed: "
                           f"{str(exc).strip()[:600]}{hint}") from None
    finally:
        root.setLevel(old)
        _cal.CalibraterBase.create_inference_session = orig_session
        _QUANT_LOCK.release()
    log(f"int8: quantize_static QDQ (MinMax, QInt8) calibrated on {len(calibration)} samples"
        + (f"; {len(keep_fp32)} nodes kept in fp32 (nodes_to_exclude)" if keep_fp32 else ""))
    q = onnx.load(str(dst))
    for p in (src, dst):
        p.unlink(missing_ok=True)
    return q

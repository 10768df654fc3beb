"""Static int8 QDQ quantization of the ``ort-int8`` engine (onnxruntime's quantizer); fp16 is
written by typed_onnx.py."""
from __future__ import annotations

import tempfile
import threading
from pathlib import Path
from typing import Callable

import numpy as np
import onnx

from .base import CompileError, ProgressFn
from .ort_session import session_options

_QUANT_LOCK = threading.Lock()


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

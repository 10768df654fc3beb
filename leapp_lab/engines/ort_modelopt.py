"""int8 Q/DQ written by NVIDIA ModelOpt's ONNX post-training quantization (``--quantizer modelopt``),
the quantizer NVIDIA names for TensorRT 11: it places Q/DQ the way TensorRT fuses them.

Runs on a CPU: ``modelopt.onnx.quantization.quantize`` calibrates with onnxruntime's CPU provider
(``calibration_eps=["cpu"]``; measured with nvidia-modelopt 0.47 and onnxruntime 1.32, torch CPU).
Options, stated: MinMax calibration (``calibration_method="max"``, as the ``ort`` quantizer's
MinMax), int8 weights and activations, and the layers it leaves unquantized kept float32
(``high_precision_dtype="fp32"``: the same graph as the ``ort`` quantizer's around the Q/DQ, so
the two quantizers differ only in where they place Q/DQ). ``keep_fp32`` nodes are its
``nodes_to_exclude`` (each name matched exactly: ModelOpt reads them as regular expressions).

It runs in a child process: importing ``modelopt.onnx.quantization`` patches onnxruntime's own
quantizer for the whole process (its ``ort_patching``; measured: the next ``--quantizer ort`` build
in that process failed with "'MinMaxCalibrater' object has no attribute 'group_qdq_tensors'").
"""
from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import onnx

from .base import CompileError, EngineUnavailable, ProgressFn


_INSTALL = ("--quantizer modelopt needs NVIDIA ModelOpt's ONNX quantization (pip install "
            "'leapp-lab[modelopt]'; it runs on a CPU)")


def check_available() -> None:
    """Without importing it (that would patch onnxruntime's quantizer in this process)."""
    import importlib.util
    if importlib.util.find_spec("modelopt") is None:
        raise EngineUnavailable(f"{_INSTALL}: the 'modelopt' package is not installed. Use --quantizer ort "
                                "(the default) meanwhile.")


def convert_int8_modelopt(model: onnx.ModelProto, calibration: list[dict[str, np.ndarray]], workdir: Path,
                          log: Callable[[str], None], progress: ProgressFn | None = None,
                          keep_fp32: frozenset[str] | set[str] = frozenset()) -> onnx.ModelProto:
    """The Q/DQ model ModelOpt writes for ``model``, calibrated on every sample of ``calibration``."""
    check_available()
    workdir = Path(workdir).resolve()
    # every sample, one after another along the first axis: ModelOpt cuts it back into batches of
    # the model input's first dimension (the shape each sample has)
    data = {k: np.concatenate([np.asarray(f[k])[None] if np.ndim(f[k]) == 0 else np.asarray(f[k])
                               for f in calibration]) for k in calibration[0]}
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        t = Path(tmp)
        onnx.save(model, str(t / "src.onnx"))
        np.savez(t / "calibration.npz", **data)
        (t / "keep.json").write_text(json.dumps(sorted(keep_fp32)))
        r = subprocess.run([sys.executable, "-m", "leapp_lab.engines.ort_modelopt", str(t)],
                           capture_output=True, text=True)
        if progress:
            progress("calibrate", len(calibration), len(calibration))
        if r.returncode != 0 or not (t / "int8.onnx").is_file():
            lines = [x for x in (r.stderr or "").strip().splitlines() if x.strip()]
            said = next((x for x in reversed(lines) if x.startswith(_ERR)), lines[-1] if lines else "")
            said = said[len(_ERR):] if said.startswith(_ERR) else said
            if said.startswith("import: "):
                raise EngineUnavailable(f"{_INSTALL}; importing modelopt.onnx.quantization failed: "
                                        f"{said[8:][:400]}. Use --quantizer ort (the default) meanwhile.")
            raise CompileError(f"int8 quantization (ModelOpt modelopt.onnx.quantization.quantize) failed: "
                               f"{said.strip()[:600] or f'exit status {r.returncode}'}")
        q = onnx.load(str(t / "int8.onnx"))
    n_q = sum(n.op_type == "QuantizeLinear" for n in q.graph.node)
    log(f"int8: ModelOpt ONNX PTQ (max calibration, int8, unquantized layers fp32) calibrated on "
        f"{len(calibration)} samples: {n_q} QuantizeLinear"
        + (f"; {len(keep_fp32)} nodes kept in fp32 (nodes_to_exclude)" if keep_fp32 else ""))
    return q


_ERR = "leapp_lab modelopt: "


def _child(folder: str) -> int:
    """In the child: quantize folder/src.onnx on folder/calibration.npz into folder/int8.onnx."""
    t = Path(folder)
    logging.getLogger("modelopt").setLevel(logging.CRITICAL)
    try:
        from modelopt.onnx.quantization import quantize
    except Exception as exc:  # noqa: BLE001 - ImportError, or its "install [onnx]" re-raise
        print(f"{_ERR}import: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
              file=sys.stderr)
        return 2
    keep = json.loads((t / "keep.json").read_text())
    with np.load(t / "calibration.npz", allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    try:
        quantize(str(t / "src.onnx"), quantize_mode="int8", calibration_data=data,
                 calibration_method="max", calibration_eps=["cpu"], high_precision_dtype="fp32",
                 nodes_to_exclude=[f"^{re.escape(k)}$" for k in keep] or None,
                 output_path=str(t / "int8.onnx"), log_level="CRITICAL")
    except Exception as exc:  # noqa: BLE001 - ModelOpt's own message, for the parent to name
        print(f"{_ERR}{type(exc).__name__}: {' '.join(str(exc).split())[:600]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))

"""Torch eager in a lower precision on prepare's own samples: the drift precision alone causes.

``lowprec_values(model_file, "fp16", rows, ...)`` re-loads the MODEL.py that prepare recorded,
checks that it still is the model and the samples the reference came from (same inputs as
``model.npz``; its fp32 outputs reproduce the reference), then runs it with every floating
parameter, buffer and input cast to the dtype (``model.to(torch.float16)``), and returns each row's
value the way prepare found its reference:

* model outputs and manual taps: from the eager run (``CaptureMode``, as prepare's eager runs);
* op / plugin taps whose reference came from torch: from the exported program's FX graph run in
  that dtype (``tap_references._fx_values``); the program is exported again exactly as prepare did
  (same taps exposed, dynamo exporter), so its node names are the ONNX value names;
* graph-input taps: the input rounded to the dtype.

Rows it cannot give a value get a reason. When the model cannot be re-run at all,
``ExpectedUnavailable`` says why (the verify continues without expected drift).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from .eager_capture import _tensor_leaves, _user_frame, flat_tensor_args
from .errors import first_line
from .loader import model_source
from .marker import CaptureMode

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
#: fp32 outputs of the re-loaded model must match the reference this closely (relative L2),
#: or the model is not the one the reference came from
SAME_MODEL_RTOL = 1e-4


class ExpectedUnavailable(Exception):
    """The model cannot be re-run in low precision; the message says why."""


@dataclass
class LowPrecRuns:
    """``values``: row name -> per-sample arrays (float32 for floating values); ``reasons``: row
    name -> why it has no value; ``dtype``: the key of DTYPES."""
    dtype: str
    values: dict[str, list[np.ndarray]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    #: teacher-forced (``forced``): row name -> per-sample values computed from the reference
    #: values of the forced taps upstream
    local: dict[str, list[np.ndarray]] = field(default_factory=dict)


def _np(t: torch.Tensor) -> np.ndarray:
    t = t.detach().to("cpu")
    if t.is_floating_point():
        t = t.float()   # bf16 has no numpy dtype; fp16 values are exact in float32
    return t.contiguous().numpy().copy()


def _cast(sample: tuple, dtype: torch.dtype) -> tuple:
    from torch.utils import _pytree as pytree
    return pytree.tree_map(lambda x: x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point()
                           else x, sample)


def lowprec_values(model_file: str | Path, dtype: str, rows: list[Any], *,
                   inputs: Mapping[str, np.ndarray] | None, reference: Mapping[str, np.ndarray],
                   requested_taps: list[str] | None = None, exporter: str = "dynamo",
                   source: bytes | None = None, src: Any = None,
                   forced: Mapping[str, np.ndarray] | None = None) -> LowPrecRuns:
    """Values of ``rows`` (TapEntry-like: name, kind, tensor, reference_source) from torch eager
    in ``dtype`` ("fp16" | "bf16"). ``inputs``: model.npz (checked against the samples MODEL.py
    makes; None: not checked); ``reference``: the reference arrays (the fp32 outputs are checked
    against them); ``requested_taps`` / ``exporter``: prepare's, to export the same program again
    when op taps need FX values. ``source``: MODEL.py's bytes as checked by the caller (executed
    as they are; ``loader.load_module``). Raises ExpectedUnavailable; UserExit when the user's
    code calls sys.exit() (not a model that cannot be re-run: one that ends the run).
    ``leapp_lab.taps.lowprec_run`` calls this in a child process of its own. ``src``: a
    ModelSource given instead (a traced LEAPP node, ``node_source``; ``model_file`` then only
    names it in messages). ``forced``: manual tap name -> its reference (leading sample axis): a
    second, teacher-forced run per sample (``ForceMode``: those taps return their reference) gives
    every output and manual tap a local value (``LowPrecRuns.local``)."""
    from .errors import PrepareError, UserExit

    try:
        src = src if src is not None else model_source(str(model_file), source)
    except UserExit:
        raise
    except PrepareError as exc:
        raise ExpectedUnavailable(f"{model_file}: {first_line(exc)}") from None
    # MODEL.py's folder importable while the model is built and run, as under prepare
    with src.importable():
        return _values(model_file, dtype, rows, inputs, reference, requested_taps, exporter, src, forced)


def _values(model_file, dtype, rows, inputs, reference, requested_taps, exporter, src, forced) -> LowPrecRuns:
    from .errors import PrepareError, UserExit

    tdtype = DTYPES[dtype]
    try:
        net = src.make_model()
        samples = src.get_samples()
    except UserExit:
        raise
    except PrepareError as exc:
        raise ExpectedUnavailable(f"{model_file}: {first_line(exc)}") from None
    out = LowPrecRuns(dtype)
    _check_inputs(samples, inputs, model_file)
    names = _check_fp32(net, samples, reference, src, model_file)

    wanted_manual = {r.name for r in rows if r.kind == "manual"}
    try:
        net = net.to(tdtype)
    except Exception as exc:  # noqa: BLE001 - any failure means: no expected drift, say why
        raise ExpectedUnavailable(f"{model_file}: model.to({tdtype}) failed: {type(exc).__name__}: "
                                  f"{first_line(exc)}") from None
    low = [_cast(s, tdtype) for s in samples]
    with torch.no_grad():
        for i, s in enumerate(low):
            with CaptureMode(expose=None) as cm:
                try:
                    res = net(*s)
                except Exception as exc:  # noqa: BLE001
                    raise ExpectedUnavailable(
                        f"{model_file}: torch eager in {dtype} failed on sample {i}{_user_frame(exc, src)}: "
                        f"{type(exc).__name__}: {first_line(exc)}") from None
            tensors, _ = _tensor_leaves(res, src.label)
            for n, t in zip(names, tensors):
                out.values.setdefault(n, []).append(_np(t))
            for n in wanted_manual & set(cm.values):
                out.values.setdefault(n, []).append(_np(cm.values[n]))
    for n in wanted_manual:
        if n in out.values and len(out.values[n]) != len(low):
            del out.values[n]
            out.reasons[n] = f"the tap is not reached on every sample in {dtype}"
        elif n not in out.values:
            out.reasons[n] = f"the tap is not reached in {dtype}"

    if forced:
        _forced_runs(net, low, tdtype, forced, names, wanted_manual, out, src, model_file)

    fx_rows = [r for r in rows if r.kind in ("op", "plugin") and r.name not in out.values]
    if fx_rows:
        _fx_rows(fx_rows, out, src, samples, low, tdtype, names, inputs, requested_taps, exporter)
    return out


def _forced_runs(net, low, tdtype, forced, names, wanted_manual, out: LowPrecRuns, src, model_file) -> None:
    """The teacher-forced runs: the forced taps return their reference (in ``tdtype``)."""
    from .marker import ForceMode
    with torch.no_grad():
        for i, s in enumerate(low):
            refs = {n: torch.from_numpy(np.array(a[i])).to(tdtype) for n, a in forced.items()}
            with ForceMode(expose=None, forced=refs) as fm:
                try:
                    res = net(*s)
                except Exception as exc:  # noqa: BLE001
                    raise ExpectedUnavailable(
                        f"{model_file}: torch eager in {out.dtype}, teacher-forced, failed on sample {i}"
                        f"{_user_frame(exc, src)}: {type(exc).__name__}: {first_line(exc)}") from None
            tensors, _ = _tensor_leaves(res, src.label)
            for n, t in zip(names, tensors):
                out.local.setdefault(n, []).append(_np(t))
            for n in wanted_manual & set(fm.values):
                out.local.setdefault(n, []).append(_np(fm.values[n]))
    for n in list(out.local):
        if len(out.local[n]) != len(low):
            del out.local[n]


def _check_inputs(samples: list[tuple], inputs: Mapping[str, np.ndarray] | None, model_file) -> None:
    if inputs is None:
        return
    arrays = list(inputs.values())
    for i, s in enumerate(samples):
        flat = flat_tensor_args(s)
        if len(flat) != len(arrays) or any(
                i >= a.shape[0] or not np.array_equal(_np(t), a[i]) for t, a in zip(flat, arrays)):
            raise ExpectedUnavailable(
                f"{model_file}: its samples are not the ones in model.npz (sample {i} differs): the "
                "file changed since prepare; re-run prepare")
    if arrays and arrays[0].shape[0] != len(samples):
        raise ExpectedUnavailable(f"{model_file}: makes {len(samples)} samples, model.npz holds "
                                  f"{arrays[0].shape[0]}; re-run prepare")


def _check_fp32(net, samples, reference, src, model_file) -> list[str]:
    """Run fp32 once: the output names, and proof that this is the model of the reference."""
    names: list[str] | None = None
    with torch.no_grad():
        for i, s in enumerate(samples):
            try:
                res = net(*s)
            except Exception as exc:  # noqa: BLE001
                raise ExpectedUnavailable(f"{model_file}: the model's forward raised on sample {i}: "
                                          f"{type(exc).__name__}: {first_line(exc)}") from None
            tensors, names = _tensor_leaves(res, src.label)
            names = list(getattr(src, "output_names", None) or names)
            for n, t in zip(names, tensors):
                if n not in reference:
                    continue
                a, r = _np(t).astype(np.float64), np.asarray(reference[n][i], dtype=np.float64)
                if a.shape != r.shape or np.linalg.norm(a - r) > SAME_MODEL_RTOL * np.linalg.norm(r) + 1e-12:
                    raise ExpectedUnavailable(
                        f"{model_file}: its fp32 output {n!r} no longer matches the reference (sample "
                        f"{i}): the model changed since prepare; re-run prepare")
    return names or []


def _fx_rows(rows, out: LowPrecRuns, src, samples, low, tdtype, output_names, inputs, requested, exporter):
    """Op and plugin taps: the exported program's FX values in ``tdtype``."""
    inputs = dict(inputs or {})
    graph_in = [r for r in rows if r.tensor in inputs]
    for r in graph_in:
        t = torch.from_numpy(np.array(inputs[r.tensor]))
        out.values[r.name] = list(_np(t.to(tdtype)))
    rows = [r for r in rows if r.name not in out.values]
    torch_rows = [r for r in rows if r.reference_source == "torch"]
    for r in rows:
        if r.reference_source != "torch":
            out.reasons[r.name] = ("its reference came from onnxruntime: no torch value has this name"
                                   if r.reference_source == "onnxruntime" else "no reference")
    if not torch_rows:
        return
    if exporter != "dynamo":
        for r in torch_rows:
            out.reasons[r.name] = "prepared with the TorchScript exporter: no FX graph names this value"
        return
    from .onnx_export import export
    from .tap_references import _fx_values

    requested = list(requested or [])
    expose = None if "all" in requested else frozenset(requested)
    try:
        net = src.make_model()      # fp32, seeded: the model prepare exported
        exported = export(net, samples[0], output_names, expose, "dynamo", src)
        if exported.program is None:
            raise RuntimeError(f"the dynamo exporter failed ({exported.fallback_reason})")
        values = _fx_values(exported.program, low, {r.tensor for r in torch_rows}, dtype=tdtype)
    except Exception as exc:  # noqa: BLE001 - op taps only lose their expected value
        why = f"the exported program could not be run in {out.dtype}: {type(exc).__name__}: {first_line(exc)}"
        for r in torch_rows:
            out.reasons[r.name] = why
        return
    for r in torch_rows:
        if all(r.tensor in v for v in values):
            out.values[r.name] = [_np(v[r.tensor]) for v in values]
        else:
            out.reasons[r.name] = "no FX node of the re-exported program has this value's name"

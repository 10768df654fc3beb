"""``leapp_lab.prepare``: export a model to ONNX with debug taps, plus its inputs and references.

Flow (each step's failure names the thing at fault):

1. load MODEL.py, build the model (seeded), take the samples;
2. eager torch runs, one per sample, in ``CaptureMode``: outputs, tap values, tap sites, timings;
3. check the requested manual taps against the sites (typo -> close names; reached by no sample
   -> branch not taken) before paying for an export;
4. export with the dynamo exporter in ``ExportMode`` (exposed taps become ``leapp_lab::Tap``
   marker nodes), falling back to the TorchScript exporter with a logged reason;
5. remove the markers and collect the taps: manual ones from the markers (a missing marker means
   optimised away or branch not taken), plugin boundaries (custom-domain nodes), op values;
6. references: manual taps and outputs from the eager runs; plugin / op taps from the exported
   program's FX graph run eagerly (torch) where an FX node has the value's name, else from an
   onnxruntime fp32 run of the untapped graph with graph optimisations off;
7. expose the taps as graph outputs, stamp the manifest, write the three files atomically.

With no tap exposed, step 4 runs without any mode and step 7 writes the exporter's model as is:
the file is byte-identical to the export of the same source with ``tap`` bound to an identity.
"""
from __future__ import annotations

import datetime as _dt
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import onnx
import torch

from ..model.jsonio import atomic_write_bytes, save_npz, write_json
from ..model.prepare import PrepareReport, TensorInfo
from ..model.safepaths import (PREPARE_WRITTEN, check_input_file, check_outputs, prepare_purposes,
                               prepare_written, staged)
from ..model.tap import Manifest, TapEntry
from leapp_lab.onnxio import graph_edit as ge
from leapp_lab.taps.eager_capture import eager_runs
from leapp_lab.taps.errors import PrepareError, TapError
from leapp_lab.taps.loader import ModelSource, model_source
from leapp_lab.onnxio.manifest import write_manifest
from leapp_lab.taps.marker import tap_modules
from leapp_lab.taps.onnx_export import ProgressFn, export
from leapp_lab.taps.tap_builder import TapBuilder
from leapp_lab.taps.tap_references import fx_references, ort_references
from leapp_lab.taps.tap_selection import (check_dtypes, check_requested_reached, declared_taps, exposed_markers,
                            unexposed_under_all)

__all__ = ["prepare", "PrepareError", "TapError", "declared_taps"]

log = logging.getLogger("leapp_lab.taps")


def _stderr_progress(stage: str, fraction: float | None) -> None:
    pct = "" if fraction is None else f" {100 * fraction:3.0f}%"
    print(f"[leapp-lab prepare]{pct} {stage}", file=sys.stderr, flush=True)


def _progress_fn(progress: Any) -> ProgressFn:
    if progress is None or progress is False:
        return lambda stage, fraction=None: log.debug("%s", stage)
    if progress is True or progress == "stderr":
        return _stderr_progress
    if callable(progress):
        return progress
    raise TypeError(f"progress must be a callable, 'stderr', True or False/None; got {progress!r}")


@dataclass
class GivenModel:
    """A model that does not come from a MODEL.py: a LEAPP node's traced graph (steps/prepare_node).

    ``source``: the model and its samples; ``input_names`` / ``output_names``: the ONNX graph's
    (the node's port names, as LEAPP passes them to its exporter); ``references``: stacked values
    that replace the eager ones of the same name (the outputs and tap values the Python recorded
    while tracing); ``inputs``: the files the outputs must spare, ``(path, what)``; ``inside_ok``:
    input folders outputs may lie in; ``finish(proto, manifest)``: called on the final graph before
    it is written, returns the report's ``from_trace`` record."""
    source: ModelSource
    input_names: list[str]
    output_names: list[str]
    references: dict[str, np.ndarray] = field(default_factory=dict)
    inputs: list[tuple[Any, str]] = field(default_factory=list)
    inside_ok: list[Any] = field(default_factory=list)
    finish: Callable[[onnx.ModelProto, Manifest], Any] | None = None


def prepare(model: Any, onnx_out: str | os.PathLike, npz_out: str | os.PathLike,
            reference_out: str | os.PathLike, debug_taps: Iterable[str] | str = (),
            plugin_taps: bool = False, op_taps: bool = False, *, progress: Any = None,
            session_options: Any = None, save_report: bool = True,
            exporter: str = "dynamo", given: GivenModel | None = None, node: str | None = None,
            from_trace: Any = None) -> PrepareReport:
    """Export ``model`` (a MODEL.py path, module, namespace or dict) with debug taps.

    ``debug_taps``: tap names to expose, or ``"all"`` (``all`` anywhere in the list wins).
    ``plugin_taps``: tap every input and output of every custom-domain node.
    ``op_taps``: tap every intermediate float value of the graph.
    ``progress``: a callable ``(stage, fraction_or_None)``, ``"stderr"``/True, or None (quiet).
    ``session_options``: an ``onnxruntime.SessionOptions`` (custom-op libraries registered) for the
    onnxruntime reference run; default: MODEL.py's ``get_ort_session_options()`` if it has one.
    ``exporter``: ``"dynamo"`` (falls back to TorchScript when it fails) or ``"torchscript"``.
    ``given``: instead of ``model`` (None then), a model that comes with its own names and
    reference values (a traced LEAPP node: ``prepare --from-trace``).
    A node of a traced LEAPP pipeline: ``model`` a trace report or session, or ``from_trace=`` (a
    run folder, a graph's LEAPP output folder), and ``node=`` (steps/prepare_node.py).
    Returns a PrepareReport, also saved to ``<onnx dir>/<onnx stem>.prepare/`` unless
    ``save_report`` is false. Raises PrepareError / TapError naming what to fix.
    """
    if given is None and (from_trace is not None or node is not None or _is_trace(model)):
        from .prepare_node import prepare_from_trace, trace_of
        if from_trace is not None and model is not None:
            raise PrepareError("prepare(): give the model or from_trace=, not both")
        if session_options is not None or exporter != "dynamo":
            raise PrepareError("prepare(from_trace=...): session_options and exporter do not apply to "
                               "a traced node (it is re-exported the way LEAPP exported it)")
        return prepare_from_trace(trace_of(from_trace if from_trace is not None else model), onnx_out,
                                  npz_out, reference_out, node=node, debug_taps=debug_taps,
                                  plugin_taps=plugin_taps, op_taps=op_taps, progress=progress,
                                  save_report=save_report)
    say = _progress_fn(progress)
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    if isinstance(debug_taps, str):
        debug_taps = [debug_taps]
    requested = [str(t) for t in debug_taps]
    expose_all = "all" in requested
    wanted = [] if expose_all else list(dict.fromkeys(requested))
    if exporter not in ("dynamo", "torchscript"):
        raise PrepareError(f"exporter must be 'dynamo' or 'torchscript', not {exporter!r}")

    paths = [Path(onnx_out).resolve(), Path(npz_out).resolve(), Path(reference_out).resolve()]
    if len(set(paths)) != 3:
        raise PrepareError(f"--onnx-out, --npz-out and --reference-out must be three different files; "
                           f"got {onnx_out}, {npz_out}, {reference_out}")
    record = Path(onnx_out).parent / f"{Path(onnx_out).stem}.prepare"
    _check_paths(model, onnx_out, npz_out, reference_out, record if save_report else None, given)
    say("loading the model", 0.0)
    src = given.source if given is not None else model_source(model)
    net = src.make_model()
    tap_modules(net)  # duplicate Tap("x") modules: both construction sites
    samples = src.get_samples()
    timings["load"] = time.perf_counter() - t_start

    say(f"running torch eager on {len(samples)} sample(s)", 0.05)
    t = time.perf_counter()
    eager = eager_runs(net, samples, None if expose_all else frozenset(wanted), src)
    timings["eager"] = time.perf_counter() - t
    if given is not None:
        if len(given.output_names) != len(eager.output_names):
            raise PrepareError(f"{src.label}: returns {len(eager.output_names)} outputs, "
                               f"{len(given.output_names)} expected ({given.output_names})")
        eager.output_names = list(given.output_names)

    if wanted:
        check_requested_reached(wanted, eager, src, net)
    check_dtypes(eager)
    expose: frozenset[str] | None
    if expose_all:
        expose = None if eager.sites else frozenset()
    else:
        expose = frozenset(wanted)

    say("exporting to ONNX (torch.export + dynamo exporter)", 0.15)
    t = time.perf_counter()
    exported = export(net, samples[0], eager.output_names, expose, exporter, src, say,
                      input_names=given.input_names if given is not None else None)
    timings["export"] = time.perf_counter() - t
    say(f"exported with the {exported.exporter} exporter", 0.6)
    proto = exported.proto
    _check_io_names(proto, src)

    warnings: list[str] = []
    if exported.fallback_reason:
        warnings.append(f"the dynamo exporter failed, used the TorchScript exporter: "
                        f"{exported.fallback_reason}")

    markers = ge.remove_tap_markers(proto)
    exposed_manual = exposed_markers(markers, wanted, expose_all, exported.hits, eager,
                                     exported.exporter)
    builder = TapBuilder(proto, src, eager, exported.program, samples)
    if expose_all:
        warnings += unexposed_under_all(markers, exported.hits, eager, exported.exporter)
    builder.add_manual(exposed_manual)
    if plugin_taps:
        builder.add_plugin()
    if op_taps:
        builder.add_op()
    if builder.pending():
        say("computing torch references from the exported program's FX graph", 0.7)
        t = time.perf_counter()
        fx_references(builder)
        timings["fx_reference"] = time.perf_counter() - t
    if builder.pending():
        say("computing onnxruntime fp32 references for values torch does not name", 0.8)
        t = time.perf_counter()
        opts = session_options
        if opts is None and src.ort_session_options is not None:
            opts = src.ort_session_options()
        # proto is still untapped here (markers gone, clashing names renamed): finish() adds the
        # tap outputs below, and ort_references works on its own copy
        ort_references(builder, proto, opts)
        timings["ort_reference"] = time.perf_counter() - t

    say("writing files", 0.9)
    manifest = builder.finish()
    stamped = bool(manifest.taps)
    if stamped:
        write_manifest(proto, manifest)

    inputs = builder.input_arrays()
    reference = builder.reference_arrays()
    if given is not None:
        _override(reference, given.references, src.label)
    reference["benchmark_timings_ms"] = np.asarray(eager.timings_ms, dtype=np.float64)
    origin = given.finish(proto, manifest) if given is not None and given.finish else None
    onnx_out, npz_out, reference_out = Path(onnx_out), Path(npz_out), Path(reference_out)
    timings["total"] = time.perf_counter() - t_start

    warnings += builder.warnings
    report = PrepareReport(
        model=src.label, model_file=None if src.file is None else str(src.file), model_sha256=src.sha256,
        onnx=str(onnx_out), npz=str(npz_out), reference=str(reference_out),
        exporter=exported.exporter, fallback_reason=exported.fallback_reason, samples=len(samples),
        requested_taps=requested, plugin_taps=bool(plugin_taps), op_taps=bool(op_taps),
        inputs=[TensorInfo(k, str(v.dtype), list(v.shape[1:])) for k, v in inputs.items()],
        rows=_report_rows(manifest, reference), manifest_stamped=stamped, warnings=warnings,
        timings_s={k: round(v, 4) for k, v in timings.items()},
        benchmark_ms=float(np.mean(eager.timings_ms)) if eager.timings_ms else None,
        created=_dt.datetime.now().isoformat(timespec="seconds"), versions=_versions(),
        from_trace=origin)
    # all or nothing (docs/safety.md): the files go to temporary siblings and are renamed into
    # place together, so a failure (a full disk, Ctrl-C) leaves every earlier output as it was
    with staged([onnx_out, npz_out, reference_out] + ([record] if save_report else [])) as tmps:
        save_npz(tmps[1], inputs)
        save_npz(tmps[2], reference)
        atomic_write_bytes(tmps[0], proto.SerializeToString())
        if save_report:
            report.save(tmps[3])
            # what this prepare wrote, so the next one may replace exactly these files
            write_json(tmps[3] / PREPARE_WRITTEN, prepare_written(record, onnx_out, npz_out,
                                                                       reference_out))
    if save_report:
        report.path = record
    say(f"done: {len(manifest.outputs)} output(s), {len(manifest.taps)} tap(s)", 1.0)
    return report


def _check_io_names(proto, src) -> None:
    """An output named like a graph input (``def forward(self, x): return {"x": ...}``) makes an
    ONNX graph no runtime loads (the exporter writes it anyway): say so here, naming both."""
    inputs = {i.name for i in proto.graph.input}
    clash = [o.name for o in proto.graph.output if o.name in inputs]
    if clash:
        n = clash[0]
        raise PrepareError(f"{src.label}: the output {n!r} has the name of the model input {n!r} (a "
                           f"forward() parameter); an ONNX graph cannot hold both, and no runtime would "
                           f"load it. Rename the output (its dict key, e.g. {n + '_out'!r}) or the "
                           f"parameter")


def _is_trace(obj: Any) -> bool:
    """A trace report, or the ``with leapp_lab.trace(...) as t`` session of one."""
    return getattr(getattr(obj, "report", None), "kind", None) == "trace" or getattr(obj, "kind", None) == "trace"


def _override(reference: dict[str, np.ndarray], values: dict[str, np.ndarray], label: str) -> None:
    """Replace the eager values of ``reference`` by ``values`` of the same names (the recorded
    ones), which must have their dtype and shape."""
    for name, v in values.items():
        if name not in reference:
            continue
        old = reference[name]
        if v.shape != old.shape or v.dtype != old.dtype:
            raise PrepareError(f"{label}: {name!r} was recorded as {v.dtype}{list(v.shape[1:])} but "
                               f"the traced graph computes {old.dtype}{list(old.shape[1:])}")
        reference[name] = v


def _check_paths(model, onnx_out, npz_out, reference_out, record, given=None) -> None:
    """MODEL.py must be a regular file; the outputs must spare it and anything leapp_lab did not write."""
    inputs = list(given.inputs) if given is not None else []
    if given is not None:
        pass
    elif isinstance(model, (str, os.PathLike)) and Path(model).exists():
        inputs.append((check_input_file(model, "a Python model file (MODEL.py)"), "MODEL.py"))
    elif isinstance(getattr(model, "__file__", None), str):
        inputs.append((model.__file__, "the model's source file"))
    purposes = prepare_purposes(record)
    check_outputs([(onnx_out, purposes["onnx"], "--onnx-out"), (npz_out, purposes["npz"], "--npz-out"),
                   (reference_out, purposes["reference"], "--reference-out"),
                   (record, "prepare-report", "(prepare record)")], inputs,
                  inside_ok=given.inside_ok if given is not None else ())


def _report_rows(manifest: Manifest, reference: dict[str, np.ndarray]) -> list[TapEntry]:
    """One row per output and tap, in model order (an output's dtype and shape from its reference
    when the graph does not say)."""
    rows = manifest.rows()
    for r in rows:
        ref = reference.get(r.name)
        if r.kind == "output" and ref is not None:
            r.dtype = r.dtype or str(ref.dtype)
            r.shape = r.shape if r.shape is not None else list(ref.shape[1:])
    return rows


def _versions() -> dict[str, str]:
    import onnxruntime
    return {"torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__}

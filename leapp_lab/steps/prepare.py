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

import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from ..model.prepare import PrepareReport
from ..model.safepaths import check_input_file, check_outputs, prepare_purposes
from leapp_lab.taps.errors import PrepareError, TapError
from leapp_lab.taps.loader import ModelSource, model_source
from leapp_lab.taps.marker import tap_modules

ProgressFn = Callable[[str, "float | None"], None]

__all__ = ["prepare", "PrepareError", "TapError", "declared_taps"]

log = logging.getLogger("leapp_lab.taps")


def _stderr_progress(stage: str, fraction: float | None) -> None:
    pct = "" if fraction is None else f" {100 * fraction:3.0f}%"
    from leapp_lab.model.messages import printable
    print(printable(f"[leapp-lab prepare]{pct} {stage}"), file=sys.stderr, flush=True)


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
    finish: Callable[[Any, Any], Any] | None = None     # (onnx.ModelProto, Manifest) -> from_trace


def prepare(model: Any, onnx_out: str | os.PathLike, npz_out: str | os.PathLike,
            reference_out: str | os.PathLike, debug_taps: Iterable[str] | str = (),
            plugin_taps: bool = False, op_taps: bool = False, *, progress: Any = None,
            session_options: Any = None, save_report: bool = True,
            exporter: str = "dynamo", given: GivenModel | None = None, node: str | None = None,
            from_trace: Any = None, force: bool = False) -> PrepareReport:
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
    ``force``: export even when nothing changed since the last prepare of these outputs; without it,
    an unchanged model (same content key, outputs as written, references bit for bit) reuses them
    (``report.cache.hit``; steps/prepare_cache.py).
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
    # MODEL.py's folder stays importable while the model is built, run and exported, as under
    # ``python MODEL.py`` (a module imported inside forward() is found)
    with src.importable():
        return _prepare_loaded(src, given, say, t_start, requested, wanted, expose_all, plugin_taps, op_taps,
                               session_options, exporter, onnx_out, npz_out, reference_out, paths,
                               record if save_report else None, force)


def _prepare_loaded(src, given, say, t_start, requested, wanted, expose_all, plugin_taps, op_taps,
                    session_options, exporter, onnx_out, npz_out, reference_out, paths, record, force):
    from leapp_lab.taps.eager_capture import eager_runs

    timings: dict[str, float] = {}
    net = src.make_model()
    tap_modules(net)  # duplicate Tap("x") modules: both construction sites
    samples = src.get_samples()
    timings["load"] = time.perf_counter() - t_start

    cached = given is None and record is not None and session_options is None
    profile = None
    if cached:
        from leapp_lab.taps.code_profile import ExecutedCode
        profile = ExecutedCode()
    # the eager runs are cheap beside the export and run every time: a reuse needs the references
    # they give to be bit for bit those of the reused export
    say(f"running torch eager on {len(samples)} sample(s)", 0.05)
    t = time.perf_counter()
    eager = eager_runs(net, samples, None if expose_all else frozenset(wanted), src, profile)
    timings["eager"] = time.perf_counter() - t

    chk = None
    if cached:
        from . import prepare_cache
        chk = prepare_cache.check(src, net, samples, {"taps": requested, "plugin": bool(plugin_taps),
                                                      "op": bool(op_taps)}, exporter,
                                  paths, record.resolve(), force, profile)
        timings["cache_check"] = chk.info.checked_s or 0.0
        if chk.info.hit:
            reused = prepare_cache.reuse(chk, src, record, onnx_out, npz_out, reference_out, t_start,
                                         eager, timings)
            if reused is not None:
                prepare_cache.say_hit(say, chk.info)
                return reused
        if chk.info.reason and chk.info.reason != "no previous run recorded":
            say(f"exporting again: {chk.info.reason}", 0.06)

    from .prepare_export import export_and_write
    return export_and_write(src, net, samples, given, say, t_start, timings, requested, wanted, expose_all,
                            plugin_taps, op_taps, session_options, exporter, onnx_out, npz_out, reference_out,
                            record, chk, eager)


def _is_trace(obj: Any) -> bool:
    """A trace report, or the ``with leapp_lab.trace(...) as t`` session of one."""
    return getattr(getattr(obj, "report", None), "kind", None) == "trace" or getattr(obj, "kind", None) == "trace"


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


def __getattr__(name: str) -> Any:
    # declared_taps lives with the tap checks (taps/tap_selection, which imports onnx); kept importable
    # from here without prepare paying for onnx before the cache has answered
    if name == "declared_taps":
        from leapp_lab.taps.tap_selection import declared_taps
        return declared_taps
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""prepare's work once the model ran eagerly and the cache did not answer: the export, the taps and
their references, and the files written together (steps/prepare.py has the flow).

Here, not in steps/prepare.py, so that a prepare the cache answers imports no onnx.
"""
from __future__ import annotations

import datetime as _dt
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..model.jsonio import atomic_write_bytes, save_npz, write_json
from ..model.prepare import PrepareReport, TensorInfo
from ..model.safepaths import PREPARE_WRITTEN, prepare_written, staged
from ..model.tap import TAP_DOMAIN, Manifest, TapEntry
from leapp_lab.taps.eager_capture import EagerRuns
from leapp_lab.taps.errors import PrepareError
from leapp_lab.taps.tap_selection import check_dtypes, check_requested_reached

def export_and_write(src, net, samples, given, say, t_start: float, timings: dict[str, float],
                     requested: list[str], wanted: list[str], expose_all: bool, plugin_taps: bool,
                     op_taps: bool, session_options: Any, exporter: str, onnx_out, npz_out, reference_out,
                     record: Path | None, chk: Any, eager: EagerRuns) -> PrepareReport:
    """Steps 3-7 of prepare (steps/prepare.py), after the eager runs (``eager``). ``record``: the
    prepare record folder to write (None: no report saved); ``chk``: the cache check
    (prepare_cache.Check) whose record to write, or None."""
    save_report = record is not None
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
    # onnx is imported here, inside the export's time: the exporter would import it itself
    import onnx  # noqa: F401
    from leapp_lab.onnxio import graph_edit as ge
    from leapp_lab.onnxio.manifest import write_manifest
    from leapp_lab.taps.onnx_export import export
    from leapp_lab.taps.tap_builder import TapBuilder
    from leapp_lab.taps.tap_references import fx_references, ort_references
    from leapp_lab.taps.tap_selection import exposed_markers, unexposed_under_all
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

    t = time.perf_counter()
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
    timings["taps"] = time.perf_counter() - t
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
    t_write = time.perf_counter()
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
        rows=_report_rows(manifest, reference, proto, warnings), manifest_stamped=stamped, warnings=warnings,
        unexposed_taps=[] if expose_all else [n for n in eager.sites if n not in set(wanted)],
        timings_s={k: round(v, 4) for k, v in timings.items()},
        benchmark_ms=float(np.mean(eager.timings_ms)) if eager.timings_ms else None,
        created=_dt.datetime.now().isoformat(timespec="seconds"), versions=_versions(),
        from_trace=origin, cache=chk.info if chk is not None else None)
    # all or nothing (docs/safety.md): the files go to temporary siblings and are renamed into
    # place together, so a failure (a full disk, Ctrl-C) leaves every earlier output as it was
    from leapp_lab.onnxio.weights import data_file_name, needs_external_data, write_external
    external = needs_external_data(proto)
    data_out = onnx_out.with_name(data_file_name(onnx_out.name))
    if external:
        say(f"the model is above protobuf's size bound: its weights go to {data_out.name}", 0.9)
    with staged([onnx_out, npz_out, reference_out] + ([record] if save_report else [])
                + ([data_out] if external else [])) as tmps:
        save_npz(tmps[1], inputs)
        save_npz(tmps[2], reference)
        if external:
            write_external(proto, tmps[0], tmps[-1], data_out.name)
        else:
            atomic_write_bytes(tmps[0], proto.SerializeToString())
        timings["write"] = time.perf_counter() - t_write
        timings["total"] = time.perf_counter() - t_start
        report.timings_s = {k: round(v, 4) for k, v in timings.items()}
        if save_report:
            report.save(tmps[3])
            # what this prepare wrote, so the next one may replace exactly these files
            write_json(tmps[3] / PREPARE_WRITTEN, prepare_written(record, onnx_out, npz_out,
                                                                       reference_out))
            if chk is not None or given is not None:
                from .prepare_cache import from_trace, record as record_cache
                record_cache(chk or from_trace(src.label), tmps[3], record,
                             [(onnx_out, tmps[0]), (npz_out, tmps[1]), (reference_out, tmps[2])]
                             + ([(data_out, tmps[-1])] if external else []))
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



def _report_rows(manifest: Manifest, reference: dict[str, np.ndarray], proto, warnings: list[str]
                 ) -> list[TapEntry]:
    """One row per output and tap, in model order (an output's dtype and shape from its reference
    when the graph does not say), each with its fp16 headroom; a row that would overflow float16
    is added to ``warnings`` with the --keep-fp32 line that keeps it float32."""
    from leapp_lab.model import fp16range
    from leapp_lab.numerics.ranges import abs_max
    from leapp_lab.onnxio.manifest import IDENTITY_PREFIX

    rows = manifest.rows()
    for r in rows:
        ref = reference.get(r.name)
        if r.kind == "output" and ref is not None:
            r.dtype = r.dtype or str(ref.dtype)
            r.shape = r.shape if r.shape is not None else list(ref.shape[1:])
    readers: dict[str, list[str]] = {}
    for n in proto.graph.node:
        if n.name and not n.name.startswith(IDENTITY_PREFIX) and n.domain != TAP_DOMAIN:
            for i in n.input:
                readers.setdefault(i, []).append(n.name)
    warnings += fp16range.fill(rows, {r.name: abs_max(reference[r.name]) for r in rows if r.name in reference},
                               readers)
    return rows


def _versions() -> dict[str, str]:
    import onnx
    from leapp_lab.model.reuse import versions
    # onnxruntime's without importing it (a prepare whose references all come from torch needs none)
    return {"torch": torch.__version__, "onnx": onnx.__version__, **versions(["onnxruntime"])}


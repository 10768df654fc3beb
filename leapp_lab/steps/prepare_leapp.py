"""``prepare --from-trace`` of an untapped node LEAPP exported to ONNX: LEAPP's own artifact, byte
for byte, as the build's ONNX, with the recorded samples and outputs (steps/prepare_node.py)."""
from __future__ import annotations

import datetime as _dt
from pathlib import Path

from leapp_lab.model.prepare import PrepareReport, TensorInfo, TraceOrigin

from .prepare_node import inputs_to_spare, port_semantics


def leapp_artifact_build(tn, artifact, inputs, outputs, onnx_out, npz_out, reference_out, progress,
                         save_report) -> PrepareReport:
    """No taps asked for: LEAPP's ONNX artifact as it is, the recorded samples and outputs."""
    import onnx
    from leapp_lab.model.jsonio import atomic_write_bytes, save_npz, write_json
    from leapp_lab.model.safepaths import PREPARE_WRITTEN, check_outputs, prepare_purposes, prepare_written, staged
    from leapp_lab.taps.errors import PrepareError
    from leapp_lab.onnxio.manifest import read_manifest
    from .prepare import _progress_fn
    from .prepare_export import _report_rows, _versions

    say = _progress_fn(progress)
    paths = [Path(onnx_out).resolve(), Path(npz_out).resolve(), Path(reference_out).resolve()]
    if len(set(paths)) != 3:
        raise PrepareError(f"--onnx-out, --npz-out and --reference-out must be three different files; "
                           f"got {onnx_out}, {npz_out}, {reference_out}")
    record = Path(onnx_out).parent / f"{Path(onnx_out).stem}.prepare"
    purposes = prepare_purposes(record if save_report else None)
    check_outputs([(onnx_out, purposes["onnx"], "--onnx-out"), (npz_out, purposes["npz"], "--npz-out"),
                   (reference_out, purposes["reference"], "--reference-out"),
                   (record if save_report else None, "prepare-report", "(prepare record)")],
                  inputs_to_spare(tn), inside_ok=[tn.run_dir])
    say(f"using LEAPP's artifact {artifact}", 0.1)
    from leapp_lab.model.safepaths import read_input_bytes
    data = read_input_bytes(artifact, f"LEAPP's artifact of node {tn.node.name!r}")
    try:
        proto = onnx.load_from_string(data)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and onnx's own: not an ONNX model
        raise PrepareError(f"{artifact}: LEAPP's artifact of node {tn.node.name!r} is not a readable ONNX "
                           f"model ({type(exc).__name__}: {str(exc)[:200]}); trace the pipeline again") from None
    graph_in = [i.name for i in proto.graph.input if i.name not in {x.name for x in proto.graph.initializer}]
    graph_out = [o.name for o in proto.graph.output]
    if set(graph_in) != set(inputs) or set(graph_out) != set(outputs):
        raise PrepareError(f"{artifact}: its inputs {graph_in} / outputs {graph_out} are not node "
                           f"{tn.node.name!r}'s ports {list(inputs)} / {list(outputs)}")
    inputs = {k: inputs[k] for k in graph_in}
    manifest = read_manifest(proto, artifact)
    origin = TraceOrigin(run=str(tn.run_dir), graph=tn.graph.name, node=tn.node.name,
                         backend=tn.node.backend, onnx_source="leapp", same_as_leapp=True,
                         leapp_artifact=str(artifact), note=None, semantics=port_semantics(tn.node))
    warnings: list[str] = []       # an fp16 overflow of a port, from the recorded values
    report = PrepareReport(
        model=tn.label, model_file=None, model_sha256=None, onnx=str(onnx_out), npz=str(npz_out),
        reference=str(reference_out), exporter="leapp", samples=len(tn.samples),
        inputs=[TensorInfo(k, str(v.dtype), list(v.shape[1:])) for k, v in inputs.items()],
        rows=_report_rows(manifest, outputs, proto, warnings), manifest_stamped=False, warnings=warnings,
        created=_dt.datetime.now().isoformat(timespec="seconds"), versions=_versions(), from_trace=origin)
    with staged([Path(onnx_out), Path(npz_out), Path(reference_out)] + ([record] if save_report else [])) as tmps:
        save_npz(tmps[1], inputs)
        save_npz(tmps[2], dict(outputs))
        atomic_write_bytes(tmps[0], data)
        if save_report:
            report.save(tmps[3])
            write_json(tmps[3] / PREPARE_WRITTEN, prepare_written(record, Path(onnx_out), Path(npz_out),
                                                                  Path(reference_out)))
            from .prepare_cache import from_trace, record as record_cache      # for verify's stale check
            record_cache(from_trace(tn.label), tmps[3], record, [(Path(onnx_out), tmps[0]),
                                                                 (Path(npz_out), tmps[1]), (Path(reference_out), tmps[2])])
    if save_report:
        report.path = record
    say(f"done: LEAPP's artifact, {len(outputs)} output(s), {len(tn.samples)} sample(s)", 1.0)
    return report

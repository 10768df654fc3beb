"""Expected drift (``verify(..., expected="fp16"|"bf16")``): what precision alone would cause.

The model is re-run in torch eager in that dtype on the same samples (``leapp_lab.taps.lowprec``,
from the MODEL.py prepare recorded in ``<onnx dir>/<stem>.prepare/report.json``), each row's
low-precision value is scored against the reference with the verify kernel (``diff_sums`` ->
``Metrics``): ``expected_nrmse``. A row whose engine nrmse exceeds the ExpectedRule's limit is
``beyond_expected``. When the model cannot be re-run (no prepare report, a model prepared from an
object, an op without a low-precision torch kernel) the report says why in its warnings. Only the
exact file prepare executed is run (docs/safety.md, "Code execution"): the absolute path and sha256
prepare recorded, checked before it runs, in a child process (``leapp_lab.taps.lowprec_run``); a
MODEL.py that is missing or changed, a record without a hash, or user code that ends the process is
refused (UnusableInput, exit 2), naming the file.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from leapp_lab.model.errors import NotAFile, UnusableInput
from leapp_lab.model.jsonio import read_json
from leapp_lab.model.safepaths import check_input_file, present, read_input_bytes
from leapp_lab.model.metrics import Metrics
from leapp_lab.model.verify import ExpectedRule, VerifyReport

from leapp_lab.compare.buildio import OpenBuild
from leapp_lab.numerics.metrics import diff_sums
from leapp_lab.compare.npzio import NpzArrays

PREPARE_SUFFIX = ".prepare"
#: find_model's answer for a ``prepare --from-trace`` build (no MODEL.py: the trace's run folder)
FROM_TRACE = Path("<from-trace>")


def _onnx_candidates(build: OpenBuild, ref_path: Path) -> list[Path]:
    """Where the prepared ONNX may be (``model.build.prepared_onnx_candidates``)."""
    from leapp_lab.model.build import prepared_onnx_candidates
    return prepared_onnx_candidates(build.report.onnx if build.report is not None else None, build.path, ref_path)


def find_model(build: OpenBuild, ref_path: Path) -> tuple[Path | None, dict[str, Any] | str]:
    """(MODEL.py, the prepare report as a dict), or (None, why not). The file is the one prepare
    recorded by absolute path, with the bytes it executed (sha256): never one found from the
    working folder or sys.path. UnusableInput when that file is gone or changed, or the record
    (an older leapp_lab's) has no hash: nothing is run that cannot be checked."""
    reports = [c.parent / f"{c.stem}{PREPARE_SUFFIX}" / "report.json" for c in _onnx_candidates(build, ref_path)]
    found = next((r for r in reports if present(r)), None)
    if found is None:
        return None, ("no prepare report (" + ", ".join(str(r) for r in reports[:2]) +
                      "): the model that made the reference is unknown; prepare writes it beside the ONNX")
    try:
        d = read_json(found)
    except NotAFile:
        raise
    except (OSError, ValueError) as exc:
        return None, f"{found}: unreadable ({exc})"
    if isinstance(d, dict) and isinstance(d.get("from_trace"), dict):
        d["_record"] = str(found)
        return FROM_TRACE, d          # a traced LEAPP node: rebuilt from its run folder, no code runs
    label = d.get("model") if isinstance(d, dict) else None
    if not isinstance(label, str) or not label or label.startswith("<"):
        return None, (f"{found}: the model was prepared from a Python object ({label!r}), not a MODEL.py "
                      "file: there is nothing to re-run")
    file, digest = d.get("model_file"), d.get("model_sha256")
    if not (isinstance(file, str) and Path(file).is_absolute() and isinstance(digest, str) and digest):
        raise UnusableInput(f"{found}: records no sha256 of the MODEL.py it was prepared from ({label}; "
                            "an older leapp_lab wrote it): --expected runs only the exact file prepare "
                            "executed, checked by its content; re-run prepare, or verify without --expected")
    model = Path(file)
    if not (model.exists() or model.is_symlink()):
        raise UnusableInput(f"{model}: the MODEL.py prepare recorded (in {found}) is not there any more "
                            "(moved or deleted?); --expected runs only that file: put it back, re-run "
                            "prepare, or verify without --expected")
    check_input_file(model, "a Python model file (MODEL.py)")
    try:
        data = read_input_bytes(model, "a Python model file (MODEL.py)")
    except OSError as exc:
        raise UnusableInput(f"{model}: cannot be read ({exc.strerror or exc})") from None
    if hashlib.sha256(data).hexdigest() != digest:
        from leapp_lab.taps.lowprec_run import changed_line
        raise UnusableInput(changed_line(model, found))
    d["_record"] = str(found)
    return model, d


def _traced_node_runs(prep: dict, dtype: str, rows, outputs, inputs_npz, forced=None):
    """lowprec_values of a ``prepare --from-trace`` build: the node's traced graph, rebuilt from
    the trace run folder with the taps prepare put back (data only: in this process)."""
    from leapp_lab.fxio.node_model import NodeGraphRefused
    from leapp_lab.model.errors import UserError
    from leapp_lab.model.jsonio import load_npz
    from leapp_lab.taps.lowprec import ExpectedUnavailable, lowprec_values
    from leapp_lab.taps.node_source import traced_node_source
    o = prep["from_trace"]
    try:
        src = traced_node_source(o["run"], o["node"], [t for t in prep.get("requested_taps") or []
                                                       if t != "all"])
    except NotAFile:
        raise
    except NodeGraphRefused as exc:     # an edited run folder is refused, not skipped as unavailable
        from .prepare_node import TraceGraphRefused
        raise TraceGraphRefused(f"trace run {o.get('run')}: {exc}") from None
    except (UserError, ValueError, KeyError, OSError) as exc:
        raise ExpectedUnavailable(f"node {o.get('node')!r} of trace run {o.get('run')}: cannot be "
                                  f"rebuilt ({exc})") from None
    return lowprec_values(src.label, dtype, rows, inputs=load_npz(inputs_npz) if inputs_npz else None,
                          reference=outputs, requested_taps=prep.get("requested_taps"),
                          exporter="dynamo", src=src, forced=forced)


def _skip(report: VerifyReport, why: str) -> None:
    report.warnings.append(f"[{report.build_name}]: no expected {report.expected.dtype} drift: {why}")
    for r in report.rows:
        if r.status == "compared":
            r.expected_note = why


def expected_drift(report: VerifyReport, rule: ExpectedRule, build: OpenBuild, ref: NpzArrays,
                   ref_path: Path, inputs_npz: Path | None, found=None, local_job=None) -> None:
    """Fill ``expected_nrmse`` / ``beyond_expected`` of every compared row of ``report``.
    ``found``: ``find_model``'s answer, when the caller checked the model before comparing.
    ``local_job``: the verify's ``LocalJob`` (``--local``): the manual taps it cut are forced to
    their reference in a second torch run per sample, which gives ``expected_local_nrmse``."""
    report.expected = rule
    model, prep = find_model(build, ref_path) if found is None else found
    if model is None:
        return _skip(report, prep)
    import importlib.util
    if importlib.util.find_spec("torch") is None:       # the child re-runs the model with it
        return _skip(report, "torch is not installed")
    from leapp_lab.taps.lowprec import ExpectedUnavailable
    from leapp_lab.taps.lowprec_run import run_lowprec
    rows = [r for r in report.rows if r.status == "compared"]
    # the fp32 check's arrays (lowprec._check_fp32): the model outputs only, not every tap
    outputs = {r.name: ref[r.name] for r in rows if r.kind in ("output", "unknown")}
    forced, cut_op = _forced(rows, ref, local_job)
    try:
        if model == FROM_TRACE:
            runs = _traced_node_runs(prep, rule.dtype, rows, outputs, inputs_npz, forced)
        else:
            runs = run_lowprec(model, prep["model_sha256"], Path(prep["_record"]), rule.dtype, rows,
                               reference=outputs, inputs_npz=inputs_npz,
                               requested_taps=prep.get("requested_taps"),
                               exporter=prep.get("exporter") or "dynamo", forced=forced)
    except ExpectedUnavailable as exc:
        return _skip(report, str(exc))
    for r in rows:
        vals = runs.values.get(r.name)
        if vals is None:
            r.expected_note = runs.reasons.get(r.name, "torch gives no value of this name")
            continue
        ref_a = ref[r.name]
        if len(vals) != ref_a.shape[0] or any(v.shape != ref_a.shape[1:] for v in vals):
            r.expected_note = (f"torch's {rule.dtype} value has shape {vals[0].shape}, the reference "
                               f"{tuple(ref_a.shape[1:])}")
            continue
        total = None
        for i, v in enumerate(vals):
            st = diff_sums(v, ref_a[i])
            total = st if total is None else total.merge(st)
        r.expected_nrmse = Metrics().fill(total).nrmse
    if local_job is not None and local_job.lg is not None:
        _local_expected(report, rows, runs, ref, cut_op)
    rule.local = any(r.expected_local_nrmse is not None for r in rows)
    rule.text = rule.describe()
    judge_expected(report, rule)


def _forced(rows, ref, local_job) -> tuple[dict, list[str]]:
    """(manual tap -> reference, for the taps --local cut; the op/plugin taps it cut, which torch
    eager cannot cut)."""
    if local_job is None or local_job.lg is None:
        return {}, []
    cut = {t for c in local_job.lg.cuts for t in c.taps}
    kinds = {r.name: r.kind for r in rows}
    forced = {t: ref[t] for t in cut if kinds.get(t) == "manual"}
    return forced, sorted(t for t in cut if kinds.get(t) in ("op", "plugin"))


def _local_expected(report, rows, runs, ref, cut_op: list[str]) -> None:
    """``expected_local_nrmse`` of the rows with a local value: torch in the dtype, teacher-forced
    at the manual taps --local cut."""
    note = None
    if cut_op:
        note = (f"op/plugin taps cut by --local ({', '.join(cut_op[:3])}{', ...' if len(cut_op) > 3 else ''}) "
                "are not forced in torch eager: the expected local error of a row after one spans back "
                "to the manual tap before it")
        report.warnings.append(f"[{report.build_name}]: expected local {report.expected.dtype}: {note}")
    for r in rows:
        if r.local_nrmse is None:
            continue
        vals = runs.local.get(r.name)
        if vals is None:
            r.expected_note = r.expected_note or "no teacher-forced torch value (an op or plugin tap)"
            continue
        ref_a = ref[r.name]
        if len(vals) != ref_a.shape[0] or any(v.shape != ref_a.shape[1:] for v in vals):
            continue
        total = None
        for i, v in enumerate(vals):
            st = diff_sums(v, ref_a[i])
            total = st if total is None else total.merge(st)
        r.expected_local_nrmse = Metrics().fill(total).nrmse


def judge_expected(report: VerifyReport, rule: ExpectedRule) -> None:
    """``local_excess`` and ``beyond_expected`` of every judged row, the report's
    ``beyond_expected`` / ``first_beyond_expected``, and ``worst_local`` ranked by excess where the
    rows have one (by local nrmse otherwise, as ``--local`` alone ranks)."""
    for r in report.rows:
        r.local_excess = rule.excess(r.local_nrmse, r.expected_local_nrmse) if r.in_rule else None
        # the simulation judges a row only where it reproduces the engine's kernels (no sim_note)
        r.sim_excess = (rule.sim_excess(r.sim_local_nrmse, r.expected_local_nrmse)
                        if r.in_rule and r.sim_note is None else None)
        r.departs_sim = r.sim_excess is not None and r.sim_excess > rule.sim_factor
        r.beyond_expected = r.in_rule and rule.judge(r)
    rule.sim = any(r.sim_excess is not None for r in report.rows)
    rule.text = rule.describe()
    report.beyond_expected = [r.name for r in report.rows if r.beyond_expected]
    report.first_beyond_expected = report.beyond_expected[0] if report.beyond_expected else None
    # the departure from the simulation ranks where it was measured: the engine's own rounding
    # cancels there, so a fault of a few percent stands out of a transformer's even int8 noise
    # that the excess ratio barely moves (docs/verify.md, the study)
    worst = {}
    for key in ("sim_excess", "local_excess"):
        cands = [r for r in report.rows if r.in_rule and getattr(r, key) is not None]
        pool = [r for r in cands if r.is_tap] or cands
        if pool:
            worst[key] = max(pool, key=lambda r: getattr(r, key)).name
    report.worst_excess = worst.get("local_excess")
    report.worst_local = worst.get("sim_excess") or worst.get("local_excess") or report.worst_local

"""Local vs inherited error (``verify(..., local=True)``): score each row's teacher-forced value.

The engine graph is cut at every tap and fed the reference values there
(``leapp_lab.engines.ort_local``), run once per sample, and each row's local value is scored
against its reference with the same kernel as the cumulative metrics (``diff_sums_rows`` -> ``Metrics``).
Per row: ``local_nrmse``, ``local_cosine``, ``local_max_abs``, ``local_share`` (local_nrmse / nrmse
clipped to [0, 1]), ``locally_diverged`` (the report's DivergenceRule judging the local record);
per report: ``first_locally_divergent`` and ``worst_local``. Nothing here raises for a build it
cannot cut: the reason goes to the rows' ``local_note`` and the report's warnings.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from leapp_lab.model.hist import Hist
from leapp_lab.model.jsonio import load_npz
from leapp_lab.model.metrics import Metrics
from leapp_lab.model.verify import VerifyReport, VerifyRow

from .buildio import OpenBuild
from .metrics import diff_sums_rows, merge_sums
from .npzio import NpzArrays

#: local values held before they are scored (bounds memory on large runs)
SCORE_BLOCK_BYTES = 256 << 20


def _feedable(row: VerifyRow) -> bool:
    """Can this row's reference stand in for the engine's value (same shape, a castable dtype)?"""
    if row.status != "compared" or not row.dtype_engine or not row.dtype_reference:
        return False
    e, r = np.dtype(row.dtype_engine), np.dtype(row.dtype_reference)
    return e == r or (e.kind == "f" and r.kind == "f")


def _skip(report: VerifyReport, why: str) -> None:
    report.warnings.append(f"[{report.build_name}]: no local error: {why}")
    for r in report.rows:
        if r.status == "compared":
            r.local_note = why


def local_errors(report: VerifyReport, build: OpenBuild, ref: NpzArrays, inputs_npz: Path | None,
                 progress=None) -> None:
    """Fill every compared row's local metrics in ``report`` (rows already scored)."""
    from google.protobuf.message import DecodeError

    from leapp_lab.engines.base import CompileError, EngineUnavailable

    report.local = True
    if build.report is None:
        return _skip(report, "the build has no build.json (its engine and tap bindings are unknown)")
    try:
        from leapp_lab.engines.ort_local import check_engine, teacher_forced
        check_engine(build.report.engine)
    except EngineUnavailable as exc:
        return _skip(report, str(exc))
    artifact = build.folder / (build.report.artifact or "engine.onnx")
    if not artifact.is_file():
        return _skip(report, f"the engine graph {artifact.name} is not in the build")
    if inputs_npz is None:
        return _skip(report, f"the input samples (build.json npz {build.report.npz!r}, or "
                             "<stem>.npz beside the reference) were not found")
    feedable = {r.name: (np.dtype(r.dtype_engine), tuple(r.shape_engine[1:]))
                for r in report.rows if _feedable(r)}
    try:
        lg = teacher_forced(artifact, build.report.manifest.taps, feedable)
    except (DecodeError, ValueError, OSError) as exc:    # the build's engine graph, not the user's input
        return _skip(report, f"{artifact.name} is not a readable ONNX model ({type(exc).__name__}: "
                             f"{str(exc)[:200]}); compile the build again")
    scored = [r for r in report.rows if r.status == "compared" and r.name in lg.outputs]
    for r in report.rows:
        if r.status == "compared" and r.name not in lg.outputs:
            r.local_note = lg.reasons.get(r.name, "the engine graph has no output carrying it")
    inputs = load_npz(inputs_npz)
    sums: dict[str, object] = {}
    pending: dict[str, list[np.ndarray]] = {}
    first = 0

    def score(upto: int) -> None:
        # every row's block of samples in one kernel call, scored side by side (as verify scores):
        # per-call overhead, not arithmetic, dominated on small taps; the merge of sums is exact
        nonlocal first
        names = [r.name for r in scored if pending.get(r.name)]
        # rtol 0: min_atol is not reported for local values, and the kernel skips it
        rows = [(np.stack(pending.pop(n)), ref[n][first:upto]) for n in names]
        for j, per_sample in diff_sums_rows(rows, rtol=0.0):
            st = merge_sums(per_sample)
            n = names[j]
            sums[n] = st if n not in sums else sums[n].merge(st)
        first = upto

    try:
        with lg.runner() as runner:
            missing = [n for n in runner.input_names if n not in inputs and n not in
                       {c.feed for c in lg.cuts}]
            if missing:
                return _skip(report, f"{inputs_npz.name} has no array for engine input(s) {missing}")
            wanted = list(dict.fromkeys(lg.outputs[r.name] for r in scored))
            feed_names = [n for n in runner.input_names if n in inputs]
            held = 0
            for i in range(report.samples):
                feed = {n: np.ascontiguousarray(inputs[n][i]) for n in feed_names}
                feed.update(lg.feed(i, ref))
                vals = runner.run(feed, wanted)   # one run per sample: every row's local value
                for r in list(scored):
                    v = vals[lg.outputs[r.name]]
                    if tuple(v.shape) != tuple(r.shape_reference[1:]):
                        # never a wrong number: a value of another shape is not scored at all
                        r.local_note = (f"the teacher-forced graph gives shape {tuple(v.shape)} on sample {i}, "
                                        f"the reference {tuple(r.shape_reference[1:])}")
                        scored.remove(r)
                        pending.pop(r.name, None)
                        continue
                    pending.setdefault(r.name, []).append(v)
                    held += v.nbytes
                if held > SCORE_BLOCK_BYTES:
                    score(i + 1)
                    held = 0
                if progress is not None:
                    progress("local", i + 1, report.samples)
            score(report.samples)
    except CompileError as exc:
        return _skip(report, f"onnxruntime could not run the teacher-forced graph: {exc}")

    cut_of = {t: c for c in lg.cuts for t in c.taps}
    for r in scored:
        st = sums.get(r.name)
        if st is None:      # no samples
            continue
        st.hist = Hist()    # local records carry no |diff| percentiles: skip reading them off the histogram
        m = Metrics().fill(st)
        r.local_nrmse, r.local_cosine, r.local_max_abs = m.nrmse, m.cosine, m.max_abs
        if r.nrmse is not None and r.nrmse > 0 and m.nrmse is not None:
            r.local_share = min(1.0, m.nrmse / r.nrmse)
        if r.in_rule:
            r.locally_diverged = report.rule.diverges(m)
        if r.is_tap and r.name not in cut_of:
            r.local_note = (f"not cut ({lg.reasons.get(r.name, 'no reason recorded')}): rows after it "
                            "include its error")
    _mark(report)


def _mark(report: VerifyReport) -> None:
    first = next((r for r in report.rows if r.in_rule and r.locally_diverged), None)
    if first is not None:
        first.first_locally_divergent = True
        report.first_locally_divergent = first.name
    cands = [r for r in report.rows if r.in_rule and r.local_nrmse is not None]
    pool = [r for r in cands if r.is_tap] or cands
    if pool:
        report.worst_local = max(pool, key=lambda r: r.local_nrmse).name

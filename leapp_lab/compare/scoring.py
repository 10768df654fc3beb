"""A reference npz against a build's sample outputs: rows paired by name, scored, judged.

Pairs arrays by name (model outputs and taps alike), orders rows by the tap manifest's model order,
scores each pair with one fused float64 pass per sample (``numerics.metrics.diff_sums_rows``:
metrics, non-finite counts and the log |diff| histogram together; per-row stats are the exact merge
of the samples), marks the first divergent row (``DivergenceRule``), and gates on ``max_mape``.
``leapp_lab.steps.verify_build`` opens the files, adds the local and expected error and saves the
run. See docs/verify.md for the rule, statuses and exit codes.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from leapp_lab.model.errors import InvalidOption
from leapp_lab.model.tap import TapEntry, model_order_key
from leapp_lab.model.verify import DivergenceRule, SampleMetrics, VerifyReport, VerifyRow, worst_key
from leapp_lab.numerics.backend import resolve_backend
from leapp_lab.numerics.metrics import diff_sums_rows, merge_sums

from .buildio import OpenBuild
from .npzio import NpzArrays, NpzInputError
from .refcheck import REFERENCE_META_KEYS, check_shared_names

_SUPPORTED_KINDS = "biuf"


def _entries(build: OpenBuild) -> dict[str, TapEntry]:
    """name -> the output or tap as the build recorded it (none without a build.json)."""
    if build.report is None:
        return {}
    return {e.name: e for e in build.report.manifest.rows()}


def check_options(**options) -> None:
    """Refuse a rule or gate option that would judge nothing: NaN, infinite or negative thresholds
    (``max_mape=nan`` would pass every output), a NaN cosine, a negative rtol.
    Raises InvalidOption (a ValueError) naming the option; None means "off" where a default allows it."""
    def bad(name: str, value, want: str) -> InvalidOption:
        return InvalidOption(f"--{name.replace('_', '-')} {value} ({name}={value!r}): must be {want}")

    for name in ("max_mape", "div_nrmse", "div_mape"):
        v = options.get(name)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not math.isfinite(v) or v < 0:
            raise bad(name, v, "a finite number >= 0 (a percentage)")
    v = options.get("div_cosine")
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not math.isfinite(v):
        # above 1 (or below -1) is allowed: "every row diverges" (or none) is a meaningful rule
        raise bad("div_cosine", v, "a finite number (a cosine similarity; 0.999 by default)")
    v = options.get("rtol")
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not math.isfinite(v) or v < 0:
        raise bad("rtol", v, "a finite number >= 0")
    v = options.get("workers")
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
        raise InvalidOption(f"workers {v!r}: must be an integer >= 1")


def score_build(ref: NpzArrays, eng: NpzArrays, build: OpenBuild, ref_path: Path, rule: DivergenceRule,
             rtol: float, workers: int | None, progress=None, paired=None) -> VerifyReport:
    """The report of every row, scored. ``paired(rows, samples)``: called once every row has its
    status and shapes, before any is scored."""
    engine = build.report.engine if build.report is not None else None
    ref_names = [k for k in ref if k not in REFERENCE_META_KEYS]
    eng_names = list(eng)
    facts = _entries(build)
    names = list(dict.fromkeys([*facts, *eng_names, *ref_names]))
    names = [n for n in names if n in ref or n in eng]

    # sample counts: every array of both files must share the leading sample axis
    counts: dict[int, list[str]] = {}
    for src, store, label in ((ref_names, ref, ref_path), (eng_names, eng, build.sample_outputs)):
        for n in src:
            shape, _ = store.header(n)
            if not shape:
                raise NpzInputError(f"{label}: array {n!r} is a scalar; every array needs a leading sample axis")
            counts.setdefault(shape[0], []).append(f"{Path(label).name}:{n}")
    if len(counts) > 1:
        desc = "; ".join(f"{k} samples: {', '.join(v[:3])}{'...' if len(v) > 3 else ''}"
                         for k, v in sorted(counts.items()))
        raise NpzInputError(f"{ref_path} and {build.sample_outputs}: mismatched sample counts ({desc}); "
                            f"compare a reference with a build made from the same model.npz")
    n_samples = next(iter(counts), 0)
    check_shared_names(ref_path, ref_names, build.sample_outputs, eng_names)

    rows: list[VerifyRow] = []
    jobs: list[tuple] = []
    for idx, name in enumerate(names):
        f = facts.get(name) or TapEntry(name=name)
        row = VerifyRow.of(f)
        row._idx = idx  # type: ignore[attr-defined]  # tie-break for the sort below
        in_ref, in_eng = name in ref, name in eng
        if in_ref:
            s, d = ref.header(name)
            row.shape_reference, row.dtype_reference = list(s), str(d)
        if in_eng:
            s, d = eng.header(name)
            row.shape_engine, row.dtype_engine = list(s), str(d)
        if not in_ref:
            row.status, row.paired = "no-reference", False
            row.note = f.uncompared_reason or "the reference npz has no array of this name"
        elif not in_eng:
            row.status, row.paired = "not-in-engine", False
            row.note = ((f.binding_reason if f.binding == "unbound" else None)
                        or "the build's sample_outputs.npz has no array of this name")
        elif (ref.header(name)[1].kind not in _SUPPORTED_KINDS
              or eng.header(name)[1].kind not in _SUPPORTED_KINDS):
            row.status = "dtype-unsupported"
            row.note = (f"dtypes {row.dtype_reference} (reference) / {row.dtype_engine} (engine): only "
                        f"bool, integer and real float arrays are compared")
        elif tuple(row.shape_reference) != tuple(row.shape_engine):
            row.status = "shape-mismatch"
            row.note = (f"per-sample shapes differ: reference {tuple(row.shape_reference[1:])}, "
                        f"engine {tuple(row.shape_engine[1:])}")
        else:
            row.self_compare = engine == "ort" and row.reference_source == "onnxruntime"
            jobs.append((row, eng[name], ref[name]))
        rows.append(row)
    overflow = _fp16_range(rows, ref, build)
    if paired is not None:
        paired(rows, n_samples)
    backend = score_pairs(jobs, n_samples, rtol, workers, progress)
    _explain_unjudged([j[0] for j in jobs])

    rows.sort(key=lambda r: model_order_key(r, r._idx))
    for r in rows:
        del r._idx  # type: ignore[attr-defined]

    report = VerifyReport(reference=str(ref_path), build=str(build.path), engine=engine,
                          build_name=build.name, samples=n_samples, rtol=rtol, rows=rows, rule=rule,
                          metrics_backend=backend)
    apply_rule(report)
    no_ref = [r for r in rows if r.status == "no-reference"]
    not_eng = [r for r in rows if r.status == "not-in-engine"]
    if no_ref:
        tail = (", this can occur when plugin taps with no tensor outputs are enabled"
                if any(r.kind == "plugin" for r in no_ref) else "")
        report.warnings.append(f"[{build.name}]: {_are(len(no_ref))} missing in the reference{tail}"
                               " (--verbose lists them)")
    if not_eng:
        report.warnings.append(f"[{build.name}]: {_are(len(not_eng))} missing in the sample output"
                               " (--verbose lists them)")
    report.warnings += overflow
    bad = [r for r in rows if r.status in ("shape-mismatch", "dtype-unsupported")]
    for r in bad:
        report.warnings.append(f"[{build.name}]: {r.name}: {r.status}: {r.note}")
    selfc = [r.name for r in rows if r.self_compare]
    if selfc:
        report.self_compare_note = (
            f"{len(selfc)} rows have an onnxruntime fp32 reference and the engine is ort: they compare "
            f"ort with itself (expected ~0) and are kept out of the first-divergent rule")
    if build.report is not None and build.report.observer.checked and not build.report.observer.outputs_agree:
        report.warnings.append(f"[{build.name}]: build.json says the taps change this engine's outputs "
                               "(observer effect); rows may not show the untapped engine")
    return report


def _fp16_range(rows: list[VerifyRow], ref: NpzArrays, build: OpenBuild) -> list[str]:
    """Each row's fp16 headroom from its reference; the sentences of rows that overflow float16,
    naming the nodes to keep in fp32 (read from the prepared ONNX only when a row overflows)."""
    from leapp_lab.model import fp16range
    from leapp_lab.numerics.ranges import abs_max

    ranges = {r.name: abs_max(ref[r.name]) for r in rows if r.name in ref and ref.header(r.name)[1].kind == "f"}
    if not any(fp16range.risk(v) == "overflow" for v in ranges.values()):
        fp16range.fill(rows, ranges)
        return []
    return [f"[{build.name}]: {s}" for s in fp16range.fill(rows, ranges, _readers(build))]


def _readers(build: OpenBuild) -> dict[str, list[str]] | None:
    """value -> the nodes of the prepared ONNX that read it (tap markers left out); None when the
    build's ONNX cannot be read."""
    src = build.report.onnx if build.report is not None else None
    if not src or not Path(src).is_file():
        return None
    try:
        import onnx
        from leapp_lab.onnxio.manifest import IDENTITY_PREFIX
        g = onnx.load(src, load_external_data=False).graph
    except Exception:  # noqa: BLE001 - the sentence then names the producer alone
        return None
    out: dict[str, list[str]] = {}
    for n in g.node:
        if n.name and not n.name.startswith(IDENTITY_PREFIX) and n.domain != "leapp_lab":
            for i in n.input:
                out.setdefault(i, []).append(n.name)
    return out


def score_pairs(jobs, n_samples: int, rtol: float, workers: int | None, progress=None) -> str:
    """The sums of every (row, sample); a row's record is filled from the exact merge of its
    samples' sums. Returns the metrics backend that ran (``numba`` | ``numpy``).

    Every row's samples (runs of blocks of large ones) are scored side by side on ``workers``
    threads (default: numba's ``NUMBA_NUM_THREADS``, every core; numpy: ``default_workers()``)
    while this thread turns finished rows into records. Threads change no bit."""
    backend = resolve_backend(pairs=sum(a_eng.size for _, a_eng, _ in jobs))
    if workers is None and backend == "numpy":
        workers = default_workers()
    total = len(jobs) * n_samples
    done = 0
    for j, sums in diff_sums_rows([(a_eng, a_ref) for _, a_eng, a_ref in jobs], rtol=rtol, threads=workers):
        row = jobs[j][0]
        for i, st in enumerate(sums):
            row.samples.append(SampleMetrics(sample=i).fill(st))
            done += 1
            if progress is not None:
                progress("score", done, total)
        if sums:
            row.fill(merge_sums(sums))
    # numpy if numba failed to compile on the way (the kernel warned and fell back)
    return "numpy" if backend == "numba" and resolve_backend() == "numpy" else backend


def default_workers() -> int:
    """Threads for the numpy backend: measured here (2 cores), a second thread did not pay (the
    per-block Python work holds the GIL), so small machines use one. (numba: all its threads.)"""
    n = os.cpu_count() or 1
    return 1 if n <= 2 else min(4, n // 2)


def apply_rule(report: VerifyReport) -> None:
    rule = report.rule
    prev = None
    first = None
    for r in report.rows:
        r.reason = ", ".join(rule.reasons(r)) or None
        if not r.in_rule:
            continue
        r.diverged = bool(r.reason)
        # The profile is measured in nrmse: MAPE is unstable where the reference is near zero.
        if prev is not None and prev.nrmse and r.nrmse is not None:
            r.growth = r.nrmse / prev.nrmse
        prev = r
        if r.diverged and first is None:
            first = r
    if first is not None:
        first.first_divergent = True
        report.first_divergent = first.name
    # worst: outputs and taps alike, rows gone non-finite included (WORST_RANKS); ties: model order
    ranked = [(k, -i, r) for i, r in enumerate(report.rows) if r.in_rule and (k := worst_key(r)) is not None]
    if ranked:
        w = max(ranked, key=lambda t: (t[0], t[1]))[2]
        w.worst = True
        report.worst_tap = w.name
    jumps = [r for r in report.rows if r.in_rule and r.growth is not None]
    if jumps:
        j = max(jumps, key=lambda r: r.growth)
        if j.growth > 1.0:
            j.largest_jump = True
            report.largest_jump = j.name


# statuses where a reference array was not checked against the engine
_REFERENCE_SIDE_UNCHECKED = ("not-in-engine", "shape-mismatch", "dtype-unsupported")


def apply_gate(report: VerifyReport, max_mape: float | None, max_mape_taps: bool) -> None:
    """--max-mape never passes what it did not judge: a gated row that could not be compared (other
    shape, missing on a side, a dtype that cannot be compared) or whose values hold nothing finite
    fails the gate, and so does any tap of another shape; the row's note says why. An exactly matching empty (0-size) row passes."""
    report.max_mape = None if max_mape is None else float(max_mape)
    report.max_mape_taps = bool(max_mape_taps)
    report.exceeded = []
    for r in report.rows:
        r.judged = r.exceeded = False
        if report.max_mape is None:
            continue
        if r.status != "compared":
            # A model output that could not be compared was not verified: the gate must not pass it
            # (a reference of another model, an engine that lost an output). Names outside the
            # manifest count only when the reference has them; uncompared taps stay informational
            # unless --max-mape-taps gates taps and the tap's values were there but not comparable.
            # A tap whose engine value has another shape is not the tap's value (a binding gone
            # wrong): that is never a pass, whether taps are gated or not.
            if r.kind == "output" or (r.kind == "unknown" and r.status in _REFERENCE_SIDE_UNCHECKED) or (
                    max_mape_taps and r.is_tap and r.status == "dtype-unsupported") or (
                    r.is_tap and r.status == "shape-mismatch"):
                r.judged = r.exceeded = True
                report.exceeded.append(r.name)
            continue
        # "unknown" (no manifest entry) counts as an output: without a manifest every name is one
        if r.kind in ("output", "unknown") or (max_mape_taps and r.is_tap):
            r.judged = True
            if r.mape is None and r.n == 0 and not r.nonfinite:
                continue        # 0-size on both sides, same shape: nothing differs
            if r.mape is None or not r.mape <= report.max_mape or _one_sided_nonfinite(r):
                r.exceeded = True
                report.exceeded.append(r.name)
    report.exit_code = 1 if report.exceeded else 0
    if report.max_mape is not None and not any(r.judged for r in report.rows):
        # an empty reference, a build without outputs: a gate with nothing to judge verified nothing
        report.exit_code = 1
        report.warnings.append(f"--max-mape judged nothing: no model output was compared ({len(report.rows)} "
                               f"rows, none of them a model output present on both sides); not verified")
    elif report.max_mape is not None and not any(r.judged and (r.exceeded or r.n) for r in report.rows):
        # zero samples on both sides (or only 0-size outputs): each row "agrees", on no value at all
        report.exit_code = 1
        why = (f"{report.samples} samples on both sides" if not report.samples else
               "every judged output has 0 elements")
        report.warnings.append(f"--max-mape judged nothing: {why}, so no value was compared; not verified")


def _one_sided_nonfinite(r: VerifyRow) -> bool:
    """Some element is NaN/Inf on one side only: it was left out of every metric, so not judged."""
    return r.nonfinite_pairs not in (0,) and not (r.nonfinite_pairs == r.nonfinite_engine
                                                  == r.nonfinite_reference)


def _explain_unjudged(rows: list[VerifyRow]) -> None:
    """A compared row with elements the metrics could not judge says so (the gate fails it; apply_gate)."""
    for r in rows:
        if r.status != "compared" or r.note:
            continue
        if r.mape is None and r.n > 0:
            r.note = (f"nothing finite to compare: all {r.n} element pairs have a NaN or Inf on a side "
                      f"({r.nonfinite_engine} engine, {r.nonfinite_reference} reference); "
                      f"not verified")
        elif _one_sided_nonfinite(r):
            r.note = (f"{r.nonfinite_pairs} of {r.n} element pairs have a NaN or Inf on one side only "
                      f"({r.nonfinite_engine} engine, {r.nonfinite_reference} reference): those "
                      f"elements are in no metric, so not verified")


def _are(n: int) -> str:
    return f"{n} output is" if n == 1 else f"{n} outputs are"

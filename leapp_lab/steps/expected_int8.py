"""Expected int8 error (``verify(..., expected="int8")``): what the engine's own int8 rounding
alone would do to each row, cumulatively and locally.

The grids are read from the int8 build's ``engine.onnx`` (``engines.int8_grids``); the model rounded
onto them is the *prepared* ONNX, the model of the reference (``<stem>.onnx`` beside
``<stem>.reference.npz``, else build.json's ``onnx``), checked to reproduce the reference in fp32 on
the first sample before anything is taken from it (a build compiled from an edited copy of the model
is compared with the model the reference came from, never with itself). ``engines.ort_fakequant``
builds one graph with the rounded model, cumulative and cut at the taps ``--local`` cut, run in
fp32 onnxruntime once per sample; each row's value is scored against its reference with the verify
kernel (light pass): ``expected_nrmse`` and ``expected_local_nrmse``. ``judge_expected`` then sets
``local_excess``, ``beyond_expected`` and the report's ranking. Nothing here fails the verify: what
cannot be computed goes to ``expected_note`` and the warnings.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from leapp_lab.compare.buildio import OpenBuild
from leapp_lab.compare.npzio import NpzArrays
from leapp_lab.model.jsonio import load_npz
from leapp_lab.model.metrics import Metrics
from leapp_lab.model.verify import ExpectedRule, VerifyReport
from leapp_lab.numerics.metrics import diff_sums_rows, merge_sums

from .expected_drift import judge_expected

#: the prepared ONNX must reproduce the reference this closely (nrmse of every compared row on the
#: first sample; onnxruntime fp32 against torch is ~1e-7 on the test models, a fault of a few
#: percent in one layer ~1e-2)
SAME_MODEL_NRMSE = 1e-4


def _candidates(build: OpenBuild, ref_path: Path) -> list[Path]:
    """The prepared ONNX of the reference: beside it first (a build may come from an edited copy)."""
    out: list[Path] = []
    if ref_path.name.endswith(".reference.npz"):
        out.append(ref_path.with_name(ref_path.name[: -len(".reference.npz")] + ".onnx"))
    onnx_ = build.report.onnx if build.report is not None else ""
    if onnx_:
        p = Path(onnx_)
        out += [p, build.path.parent / p.name, ref_path.parent / p.name]
    return [p for p in dict.fromkeys(out) if p.is_file()]


def _skip(report: VerifyReport, why: str) -> None:
    report.warnings.append(f"[{report.build_name}]: no expected int8 error: {why}")
    for r in report.rows:
        if r.status == "compared":
            r.expected_note = why


def _nrmse(a: np.ndarray, r: np.ndarray) -> float:
    a, r = np.asarray(a, np.float64), np.asarray(r, np.float64)
    den = float(np.sqrt((r * r).sum()))
    d = float(np.sqrt(((a - r) ** 2).sum()))
    return 0.0 if den == 0 and d == 0 else (float("inf") if den == 0 else d / den)


def expected_int8(report: VerifyReport, rule: ExpectedRule, build: OpenBuild, ref: NpzArrays,
                  ref_path: Path, inputs_npz: Path | None, local_job=None) -> None:
    """Fill ``expected_nrmse`` / ``expected_local_nrmse`` of the compared rows of ``report``
    (an ``ort-int8`` build) and judge them (``judge_expected``). ``local_job``: the verify's
    ``LocalJob``: the taps it cut are the cuts of the local expectation."""
    import onnx

    from leapp_lab.engines.int8_grids import read_grids
    from leapp_lab.engines.ort_fakequant import expected_graph
    from leapp_lab.engines.ort_session import OrtRunner
    from leapp_lab.onnxio.manifest import read_manifest

    report.expected = rule
    engine = build.report.engine if build.report is not None else None
    if engine != "ort-int8":
        return _skip(report, f"the build's engine is {engine or 'unknown'}, not ort-int8: it has no int8 "
                             "grids to round the model onto")
    artifact = build.folder / (build.report.artifact or "engine.onnx")
    if not artifact.is_file():
        return _skip(report, f"the engine graph {artifact.name} is not in the build")
    if inputs_npz is None:
        return _skip(report, "the input samples (build.json npz, or <stem>.npz beside the reference) "
                             "were not found")
    cands = _candidates(build, ref_path)
    if not cands:
        return _skip(report, f"the prepared ONNX of the reference ({ref_path.name[:-len('.reference.npz')]}"
                             ".onnx beside it, or build.json's onnx) was not found")
    grids = read_grids(artifact)
    if not len(grids):
        return _skip(report, f"{artifact.name} holds no quantized tensor")
    rows = [r for r in report.rows if r.status == "compared"]
    cut_taps: set[str] = set()
    has_local = local_job is not None and local_job.lg is not None     # the local chain (no cut: the whole model)
    if has_local:
        cut_taps = {t for c in local_job.lg.cuts for t in c.taps}
    # a tap the engine shows as its float tensor (not the dequantized int8 value) is not rounded
    unrounded = {t.name for t in build.report.manifest.taps if t.via in ("direct", "unfused")}
    inputs = load_npz(inputs_npz)
    why = []
    for onnx_path in cands:
        model = onnx.load(str(onnx_path))
        man = read_manifest(model)
        cuts = {t.name: t.tensor for t in man.taps if t.name in cut_taps and t.tensor}
        eg = expected_graph(model, grids, cuts, local=has_local, unrounded=unrounded)
        runner = OrtRunner(eg.model.SerializeToString(), optimize=False)
        with runner:
            names = set(runner.output_names)
            feed_names = [n for n in runner.input_names if n in inputs]
            missing = [n for n in runner.input_names if n not in inputs and n not in {f for f, _ in eg.feeds}]
            if missing:
                return _skip(report, f"{inputs_npz.name} has no array for input(s) {missing} of {onnx_path.name}")
            wanted = [r for r in rows if eg.cumulative.get(r.name) in names]
            bad = _check_fp32(runner, eg, wanted, inputs, feed_names, ref)
            if bad:
                why.append(f"{onnx_path}: {bad}")
                continue
            _score(report, runner, eg, wanted, inputs, feed_names, ref)
        break
    else:
        return _skip(report, "; ".join(why) + " (not the model of this reference: re-run prepare)")
    for r in rows:
        if r.expected_nrmse is None and r.expected_note is None:
            r.expected_note = "the prepared ONNX has no output of this name"
        if r.expected_local_nrmse is None and r.local_nrmse is not None and r.expected_note is None:
            r.expected_note = "no local expectation (the row's upstream taps were not cut)"
    if grids.unmapped:
        report.warnings.append(f"[{report.build_name}]: expected int8: {len(grids.unmapped)} int8 tensor(s) "
                               f"of {artifact.name} have no float name in the prepared model and are "
                               f"not rounded: {', '.join(grids.unmapped[:5])}")
    rule.local = any(r.expected_local_nrmse is not None for r in rows)
    rule.text = rule.describe()
    judge_expected(report, rule)


def _feed(eg, inputs, feed_names, ref, i: int) -> dict:
    f = {n: np.ascontiguousarray(inputs[n][i]) for n in feed_names}
    f.update({name: np.ascontiguousarray(ref[tap][i], dtype=np.float32) for name, tap in eg.feeds})
    return f


def _check_fp32(runner, eg, rows, inputs, feed_names, ref) -> str | None:
    """Why the prepared ONNX is not the model of the reference (its fp32 chain on sample 0), or None."""
    if not rows or ref[rows[0].name].shape[0] == 0:
        return None
    outs = [eg.fp32[r.name] for r in rows]
    vals = runner.run(_feed(eg, inputs, feed_names, ref, 0), outs)
    for r, o in zip(rows, outs):
        v = vals[o]
        if v.shape != ref[r.name].shape[1:]:
            return f"its {r.name!r} has shape {tuple(v.shape)}, the reference {tuple(ref[r.name].shape[1:])}"
        if not np.issubdtype(v.dtype, np.floating):
            continue
        e = _nrmse(v, ref[r.name][0])
        if not e <= SAME_MODEL_NRMSE:
            return f"its fp32 {r.name!r} differs from the reference (nrmse {e:.3g} on sample 0)"
    return None


def _score(report, runner, eg, rows, inputs, feed_names, ref) -> None:
    n = ref[rows[0].name].shape[0] if rows else 0
    local_rows = [r for r in rows if r.local_nrmse is not None and r.name in eg.local]
    outs = list(dict.fromkeys([eg.cumulative[r.name] for r in rows] + [eg.local[r.name] for r in local_rows]))
    got: dict[str, list] = {o: [] for o in outs}
    for i in range(n):
        vals = runner.run(_feed(eg, inputs, feed_names, ref, i), outs)
        for o in outs:
            got[o].append(vals[o])
    pairs = [(r, eg.cumulative[r.name], "expected_nrmse") for r in rows] + \
            [(r, eg.local[r.name], "expected_local_nrmse") for r in local_rows]
    pairs = [p for p in pairs if all(v.shape == ref[p[0].name].shape[1:] for v in got[p[1]])]
    batch = [(got[o], ref[r.name]) for r, o, _ in pairs]
    for j, per_sample in diff_sums_rows(batch, rtol=0.0, light=True):
        r, _, key = pairs[j]
        setattr(r, key, Metrics().fill(merge_sums(per_sample)).nrmse)


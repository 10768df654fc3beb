"""One build verified: ``verify_build(reference_npz, build)`` opens the reference and the build, has
``compare.scoring`` pair, score and judge every row, adds what needs an engine or the model run
again (``--local``: ``steps.local_error``; ``--expected``: ``steps.expected_drift``, int8:
``steps.expected_int8``), and commits the
run folder, ``--json`` and ``--html`` together. ``leapp_lab.verify`` (``steps.verify``) calls it for
one build and ``steps.verify_many`` for each of several.
"""
from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

import numpy as np

from leapp_lab.compare.buildio import OpenBuild
from leapp_lab.compare.engine_graph import engine_graph
from leapp_lab.compare.npzio import NpzArrays
from leapp_lab.compare.scoring import apply_gate, check_options, score_build
from leapp_lab.compare.stale import stale_build
from leapp_lab.model.arraysummary import array_summary
from leapp_lab.model.jsonio import load_npz, write_json
from leapp_lab.model.runs import LATEST, RUNS_DIRNAME, lab_dir, save_run_with
from leapp_lab.model.safepaths import check_outputs
from leapp_lab.model.verify import DivergenceRule, ExpectedRule, InputSummary, VerifyReport, VerifyRow

from .verify_elements import add_elements

MAX_INPUT_SAMPLES = 64      # samples whose input summaries the report keeps


def _inputs_npz(build: OpenBuild, ref_path: Path) -> Path | None:
    """The model.npz whose samples were run: build.json's ``npz``, else beside the reference."""
    cands = []
    npz = build.report.npz if build.report is not None else None
    if npz:
        p = Path(npz)
        cands += [p if p.is_absolute() else build.path / p, p]
    if ref_path.name.endswith(".reference.npz"):
        cands.append(ref_path.with_name(ref_path.name[: -len(".reference.npz")] + ".npz"))
    return next((c for c in cands if c.is_file()), None)


def _input_summaries(build: OpenBuild, ref_path: Path) -> list[InputSummary]:
    """What each sample fed the engine (shape, dtype, range), kept in the report for its views."""
    p = _inputs_npz(build, ref_path)
    if p is None:
        return []
    try:
        arrays = load_npz(p)
    except (OSError, ValueError):
        return []
    out = []
    for name, a in arrays.items():
        if getattr(a, "ndim", 0) < 1:
            continue
        for i in range(min(a.shape[0], MAX_INPUT_SAMPLES)):
            out.append(InputSummary(name=name, sample=i, file=p.name, **array_summary(a[i])))
    return sorted(out, key=lambda x: x.sample)


def verify_build(reference_npz, build, max_mape: float | None = None, max_mape_taps: bool = False,
                 out=None, *, verbose: bool = False, json_path=None, save: bool = True,
                 div_nrmse: float | None = 1.0, div_mape: float | None = None, div_cosine: float = 0.999,
                 div_nonfinite: bool = True,
                 rtol: float = 1e-3, workers: int | None = None, progress=None, local: bool = False,
                 expected: str | None = None, html=None) -> VerifyReport:
    """Compare ``reference_npz`` (prepare's model.reference.npz) with one ``build`` (a build folder or
    .tgz). ``max_mape`` (percent) gates model outputs (and taps with ``max_mape_taps``): the report's
    ``exit_code`` is 1 when exceeded. ``div_*`` set the first-divergent rule (docs/verify.md): a row
    diverges when nrmse > ``div_nrmse`` percent (None: off), mape > ``div_mape`` percent (None, the
    default: off), cosine < ``div_cosine``, or (``div_nonfinite``) the engine has more non-finite values. The run folder is saved
    under ``out`` (a runs root: ``out/runs/<id>/`` + ``out/latest``), default
    ``<build's folder>/leapp_lab/``; ``save=False`` skips it. ``json_path`` writes the --json rows.
    ``workers``: threads scoring (row, sample) pairs (default: numba's ``NUMBA_NUM_THREADS``, every
    core; with the numpy backend 1 on machines with <= 2 cores, else up to 4). The metrics backend
    (``LEAPP_LAB_METRICS``: numba | numpy | auto, docs/verify.md) is recorded in ``metrics_backend``.
    Unusable inputs raise NpzInputError (a ValueError) naming the file and the problem.
    ``progress(stage, done, total)`` is called as (row, sample) pairs are scored.
    ``local``: also each row's local error (the engine graph cut at every tap and fed the
    reference values there, one engine run per sample; docs/verify.md "Local vs inherited error").
    ``expected``: ``"fp16"`` or ``"bf16"``: re-run the model's MODEL.py in torch eager in that dtype
    and mark the rows whose error is beyond what that precision causes (``ExpectedRule``);
    ``"int8"`` (an ort-int8 build; implies ``local``): round the prepared model onto the engine's
    own int8 grids (``steps.expected_int8``) and judge each row's local error against it. Neither
    fails the verify: what could not be computed is said in the rows' notes and ``warnings``; but
    ``expected`` runs only the file prepare recorded, unchanged (UnusableInput, before anything is
    compared, when it is missing, changed or unrecorded; also when its code ends the process).
    ``html``: also write the standalone HTML report there. The run, ``json_path`` and ``html`` are
    written first and committed together at the end: a verify that fails commits none of them.
    """
    check_options(max_mape=max_mape, div_nrmse=div_nrmse, div_mape=div_mape, div_cosine=div_cosine,
                  rtol=rtol, workers=workers)
    ref_path = Path(reference_npz)
    root = (Path(out) if out is not None else lab_dir(Path(build).parent)) if save else None
    check_verify_outputs(reference_npz, build, json_path=json_path, runs_root=root, html=html)
    rule = DivergenceRule(div_nrmse=None if div_nrmse is None else float(div_nrmse),
                          div_mape=None if div_mape is None else float(div_mape),
                          div_cosine=float(div_cosine), div_nonfinite=bool(div_nonfinite))
    rule.text = rule.describe()
    exp_rule = None if expected is None else ExpectedRule.of(expected)
    local = local or expected == "int8"         # int8 is judged by each row's own (local) error
    with OpenBuild(build) as b, NpzArrays(ref_path) as ref, NpzArrays(b.sample_outputs) as eng:
        job = found = int8 = None
        if exp_rule is not None and expected != "int8":
            # the MODEL.py to re-run, checked (recorded path and sha256) before any work: exit 2 if not
            from .expected_drift import find_model
            found = find_model(b, ref_path)

        def paired(rows: list[VerifyRow], n_samples: int) -> None:
            # --local: the teacher-forced engine runs on a thread while the rows are scored;
            # --expected int8: the rounded model too, on another
            nonlocal job, int8
            if local:
                from .local_error import LocalJob
                job = LocalJob(rows, n_samples, b, ref, _inputs_npz(b, ref_path), ref_path)
                job.start()
            if expected == "int8":
                from .expected_int8 import Int8Job
                int8 = Int8Job([r for r in rows if r.status == "compared"], b, ref, ref_path,
                               _inputs_npz(b, ref_path), job)
                int8.start()
        try:
            report = score_build(ref, eng, b, ref_path, rule, rtol, workers, progress, paired)
            stale = stale_build(b.folder, b.path, b.report.onnx if b.report else None,
                                b.report.engine if b.report else None, ref_path)
            if stale is not None:
                report.warnings.insert(0, stale)
            report.inputs = _input_summaries(b, ref_path)
            add_elements(report, b, ref, eng, ref_path)
            report.graph = engine_graph(b, report.rows)
            if job is not None:
                job.finish(report, progress, sink=None if int8 is None else int8.local_sink)
            if int8 is not None:
                int8.finish(report, exp_rule, eng)
        finally:
            if job is not None:
                job.cancel()
            if int8 is not None:
                int8.cancel()
        if expected == "int8" and int8 is None:
            report.expected = exp_rule
        if exp_rule is not None and expected != "int8":
            from .expected_drift import expected_drift
            expected_drift(report, exp_rule, b, ref, ref_path, _inputs_npz(b, ref_path), found, job)
    report.verbose = verbose
    apply_gate(report, max_mape, max_mape_taps)
    report.created = _dt.datetime.now().isoformat(timespec="seconds")
    report.versions = _versions()
    save_run_with(report, root if save else None, f"verify-{report.build_name}",
                  [(json_path, lambda tmp: write_json(tmp, report.json_rows())), (html, report.to_html)])
    return report


def check_verify_outputs(reference_npz, build, *, json_path=None, runs_root=None, html=None) -> None:
    """Refuse, before anything is compared, an output of verify that would destroy one of its
    inputs or a file leapp_lab did not write (docs/safety.md). ``build`` and ``runs_root`` may be
    lists (several builds: every output is checked against every build, before the first runs)."""
    builds = list(build) if isinstance(build, (list, tuple)) else [build]
    roots = runs_root if isinstance(runs_root, (list, tuple)) else [runs_root]
    unique = list({os.path.realpath(r): Path(r) for r in roots if r is not None}.values())
    check_outputs(
        [(json_path, "verify-json", "--json"), (html, "html", "--html"),
         *((root / LATEST, "latest", "--out") for root in unique),
         *((root / RUNS_DIRNAME, "runs-dir", "--out") for root in unique)],
        [(reference_npz, "the reference npz"), *((b, "the build") for b in builds)])


def _versions() -> dict[str, str]:
    from leapp_lab import __version__
    return {"leapp_lab": __version__, "numpy": np.__version__}

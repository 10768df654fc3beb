"""``leapp-lab verify REFERENCE.npz BUILD [BUILD ...] [--max-mape PCT] [--max-mape-taps] [--verbose]
[--json F] [--out DIR] [--local] [--expected fp16|bf16|int8]``. Exit 0, 1 when --max-mape is exceeded, 2 when
an input is unusable.

Several BUILDs: each is verified exactly as one would be (its own run folder and gate), then the
runs become one compare table (``leapp_lab.verify_many``); exit 1 when any build's gate fails."""
from __future__ import annotations

import argparse
import sys

from . import UsageError, given, show


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "verify", help="compare a reference npz with a build, row per output and tap in model order",
        description="Compare REFERENCE.npz (prepare's model.reference.npz) with BUILD (a build folder "
                    "or .tgz from leapp-lab compile): MAPE, NRMSE, MSE, max abs diff, cosine per output and "
                    "tap in model order, per sample, the first divergent tap, |diff| histograms. "
                    "Several BUILDs: each is verified as on its own, then all go in one table (a column "
                    "group per engine, the first BUILD the baseline; docs/verify.md#compare-engines-and-runs). "
                    "Exit 0; 1 if --max-mape is exceeded (by any BUILD); 2 if an input is unusable.")
    p.add_argument("reference", metavar="REFERENCE.npz")
    p.add_argument("build", metavar="BUILD", nargs="+",
                   help="build folder (build/model.<engine>) or .tgz; several: one compare table")
    p.add_argument("--max-mape", type=float, metavar="PCT",
                   help="fail (exit 1) when a model output's MAPE (percent) is above PCT")
    p.add_argument("--max-mape-taps", action="store_true", help="apply --max-mape to taps too")
    p.add_argument("--verbose", action="store_true", help="list unpaired names as rows")
    p.add_argument("--json", metavar="F", help="write the rows and warnings as JSON (docs/schema-verify.md)")
    p.add_argument("--out", metavar="DIR",
                   help="where to save the verify run folder (DIR/runs/<id>, DIR/latest); "
                        "default: <build's folder>/leapp_lab")
    p.add_argument("--no-save", action="store_true", help="do not save a run folder")
    p.add_argument("--html", metavar="F", help="also write a standalone HTML report (opens offline)")
    e = p.add_argument_group("explain the divergence (docs/verify.md, \"Local vs inherited error\")")
    e.add_argument("--local", action="store_true", default=None,
                   help="also give each row its local error: the engine graph cut at every tap and fed "
                        "the reference values there (one extra engine run per sample)")
    e.add_argument("--expected", choices=("fp16", "bf16", "int8"),
                   help="mark the rows whose error is beyond what this precision causes: fp16/bf16 re-run "
                        "the model (the MODEL.py prepare recorded) in torch eager in that dtype; int8 (an "
                        "ort-int8 build; implies --local) rounds the prepared model onto the engine's own "
                        "int8 grids and judges each row's local error against it")
    g = p.add_argument_group("first-divergent rule (docs/verify.md)")
    g.add_argument("--div-nrmse", type=float, metavar="PCT",
                   help="a row diverges when its normalised RMS error, sqrt(mse)/rms(reference), is "
                        "above PCT percent (default 1)")
    g.add_argument("--div-mape", type=float, metavar="PCT",
                   help="... or (opt-in, off by default) its MAPE is above PCT percent; MAPE explodes "
                        "where the reference is near zero (ReLU outputs)")
    g.add_argument("--div-cosine", type=float, metavar="C",
                   help="... or its cosine similarity is below C (default 0.999)")
    g.add_argument("--no-div-nonfinite", action="store_true",
                   help="do not count extra non-finite engine values as divergence")
    g.add_argument("--rtol", type=float, help="rtol used for min_atol (default 1e-3)")
    p.set_defaults(command="verify")
    return p


class _ThrottledProgress:
    """Progress on stderr for long verifies: at most one line every ``every`` seconds, so a quick
    verify prints nothing and a long one shows it is alive."""

    def __init__(self, every: float = 2.0):
        import time
        self._clock = time.monotonic
        self._next = self._clock() + every
        self._every = every

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = self._clock()
        if now >= self._next or (done == total and now >= self._next - self._every + 0.5):
            unit = "samples through the teacher-forced engine" if stage == "local" else "(row, sample) pairs"
            print(f"[leapp-lab verify] {stage} {done}/{total} {unit}", file=sys.stderr, flush=True)
            self._next = now + self._every


def execute(args: argparse.Namespace, progress=None):
    """Verify through the Python API; unusable inputs raise UsageError (exit 2)."""
    builds = args.build if isinstance(args.build, list) else [args.build]
    if len(builds) > 1:
        return execute_many(args, builds, progress)
    args.build = builds[0]
    from ..compare.npzio import NpzInputError
    from ..steps.verify import verify

    save = not getattr(args, "no_save", False)
    try:
        report = verify(args.reference, args.build, max_mape=args.max_mape,
                        max_mape_taps=args.max_mape_taps, out=args.out, verbose=args.verbose,
                        json_path=args.json, save=save, html=getattr(args, "html", None),
                        div_nonfinite=not args.no_div_nonfinite,
                        progress=progress if progress is not None else _ThrottledProgress(),
                        **given(div_nrmse=args.div_nrmse, div_mape=args.div_mape,
                                div_cosine=args.div_cosine, rtol=args.rtol,
                                local=getattr(args, "local", None), expected=getattr(args, "expected", None)))
    except (NpzInputError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from None
    return report


def main(args: argparse.Namespace) -> int:
    return show(execute(args))


def execute_many(args: argparse.Namespace, builds: list[str], progress=None):
    """Several builds: each through ``execute`` exactly as alone (same flags), then one compare
    report (``leapp_lab.steps.verify_many.finish``): every build's run folder, the compare run, the
    --json and the --html are written, and only then committed."""
    from ..steps.verify_many import check_distinct, finish, runs_roots
    from ..steps.verify_build import check_verify_outputs

    check_distinct(builds)
    # every output against every input (the reference, every build) before the first build runs
    check_verify_outputs(args.reference, builds, json_path=args.json, html=getattr(args, "html", None),
                         runs_root=runs_roots(builds, args.out, not getattr(args, "no_save", False)))
    reports = []
    for b in builds:        # each verified unsaved; finish commits every run once all are written
        one = argparse.Namespace(**{**vars(args), "build": b, "json": None, "html": None, "no_save": True})
        reports.append(execute(one, progress))
    report = finish(reports, builds, out=args.out, save=not getattr(args, "no_save", False),
                    json_path=args.json, html=getattr(args, "html", None))
    return report

"""``leapp-lab repair REFERENCE.npz MODEL.onnx --engine ort-int8|ort-fp16 --target-nrmse 0.01
[--budget N] [--jobs N] [--dask ADDR] [--json F] [--out DIR] [--html F] [--rank output|excess]``.
Exit 0 when the target is met and verified, 1 when it is not, 2 when an input is unusable."""
from __future__ import annotations

import argparse
import sys

from . import UsageError, given, say, show


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from ..steps import REPAIRABLE

    p = sub.add_parser(
        "repair", help="keep the fewest model segments in fp32 that bring a reduced-precision engine "
                       "under a target error, and prove it with a verified build",
        description="Sweep a reduced-precision engine: rebuild it with one tap segment at a time kept in "
                    "fp32, rank the segments by how much output error each removes, keep the fewest that "
                    "bring every model output's nrmse under --target-nrmse, then build and verify that "
                    "mixed engine in its own folder. Exit 0: target met and verified; 1: not met "
                    "(the best verified set is reported); 2: an input is unusable. docs/repair.md")
    p.add_argument("reference", metavar="REFERENCE.npz", help="prepare's model.reference.npz")
    p.add_argument("onnx", metavar="MODEL.onnx", help="the ONNX written by leapp-lab prepare")
    p.add_argument("--engine", choices=REPAIRABLE, help="the engine to repair (default ort-int8)")
    p.add_argument("--target-nrmse", type=float, metavar="X",
                   help="every model output's nrmse must end at or below X, a fraction (default 0.01 = 1 %%)")
    p.add_argument("--budget", type=int, metavar="N", help="build at most N engines in all (default: no limit)")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="builds at once in a local process pool (default: CPU count, at most 8; "
                        "1 = in this process)")
    p.add_argument("--dask", metavar="ADDR",
                   help="run the builds on a Dask cluster (tcp://HOST:8786; default: $LEAPP_LAB_DASK); "
                        "its workers must see the same paths")
    p.add_argument("--npz", metavar="F", help="input samples (default: <onnx stem>.npz beside the model)")
    p.add_argument("--json", metavar="F", help="also write the report as JSON (leapp_lab.load reads it)")
    p.add_argument("--out", metavar="DIR",
                   help="runs root: the report goes to DIR/runs/<id>, the kept builds to DIR/repair/<id> "
                        "(default: <onnx dir>/leapp_lab)")
    p.add_argument("--html", metavar="F", help="also write a standalone HTML report (opens offline)")
    p.add_argument("--rank", choices=("output", "excess"),
                   help="how candidates are ranked: output (default: a sweep build per segment, by the output "
                        "error left) or excess (by each segment's local excess in the baseline's verify "
                        "--expected, one build per candidate in that order; docs/repair.md)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(command="repair")
    return p


def _stderr_progress(stage: str, done: int, total: int) -> None:
    say(f"[leapp-lab repair] {stage}: {done}/{total} builds", file=sys.stderr, flush=True)


def execute(args: argparse.Namespace, progress=None):
    """Repair through the Python API; unusable input -> UsageError (exit 2)."""
    from ..engines.base import CompileError
    from ..executor import ExecutorUnavailable
    from ..steps.repair import check_repair_options, check_repair_outputs, repair

    if progress is None and not getattr(args, "quiet", False):
        progress = _stderr_progress
    try:
        # every output checked before the inputs are read; the run, --json and --html commit together
        check_repair_options(**given(engine=args.engine, target_nrmse=args.target_nrmse, budget=args.budget,
                                     jobs=args.jobs, rank=getattr(args, "rank", None)))
        check_repair_outputs(args.reference, args.onnx, npz=args.npz, out=args.out, json_path=args.json,
                             html=getattr(args, "html", None))
        report = repair(args.reference, args.onnx, progress=progress, json_path=args.json,
                        html=getattr(args, "html", None),
                        **given(engine=args.engine, target_nrmse=args.target_nrmse, budget=args.budget,
                                jobs=args.jobs, dask=args.dask, npz=args.npz, out=args.out,
                                rank=getattr(args, "rank", None)))
    except (CompileError, ExecutorUnavailable, FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return report


def main(args: argparse.Namespace) -> int:
    return show(execute(args))

"""``leapp-lab diff RUN_A RUN_B [--html F] [--json F] [--out DIR] [--fail-on-flip]``: two verify runs row
by row. Exit 0; 1 with --fail-on-flip when a row passing in A fails in B; 2 when a run is unusable."""
from __future__ import annotations

import argparse

from . import UsageError, given, show


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "diff", help="compare two verify runs row by row: metric changes and verdict flips",
        description="Compare verify run A with verify run B (int8 vs fp16, before vs after a fix), from "
                    "their stored records: per row, each metric's change B − A and B / A, the rows whose "
                    "verdict flipped (pass → fail, fail → pass), the rows in one run only, each run's first "
                    "divergent row. RUN: a verify run folder (verify prints 'run folder: …'), its "
                    "report.json, or a folder holding 'latest'. Exit 0; 1 with --fail-on-flip when a row "
                    "flips to fail; 2 if a run is unusable.")
    p.add_argument("run_a", metavar="RUN_A", help="the baseline verify run (before, or the reference engine)")
    p.add_argument("run_b", metavar="RUN_B", help="the verify run compared with it (after)")
    p.add_argument("--html", metavar="F", help="also write a standalone HTML report of the diff (opens offline)")
    p.add_argument("--json", metavar="F", help="write the rows, flips and changes as JSON (docs/schema-verify.md)")
    p.add_argument("--out", metavar="DIR", help="save the diff as a run folder (DIR/runs/<id>, DIR/latest); "
                                                "default: not saved")
    p.add_argument("--fail-on-flip", action="store_true", default=None,
                   help="exit 1 when a row that passes in RUN_A diverges in RUN_B")
    p.set_defaults(command="diff")
    return p


def execute(args: argparse.Namespace):
    """Diff through the Python API; unusable runs raise UsageError (exit 2)."""
    from ..compare.diff import check_diff_outputs, diff

    try:
        # every output checked before the runs are read; the run, --json and --html commit together
        check_diff_outputs(args.run_a, args.run_b, json_path=args.json, out=args.out, html=args.html)
        report = diff(args.run_a, args.run_b, out=args.out, json_path=args.json, html=args.html,
                      **given(fail_on_flip=args.fail_on_flip))
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return report


def main(args: argparse.Namespace) -> int:
    return show(execute(args))

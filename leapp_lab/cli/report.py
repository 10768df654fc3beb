"""``leapp-lab report RUN -o report.html``: the standalone, offline HTML report of a run.

Needs neither torch nor onnxruntime: it loads the report model from the run folder and renders it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import UsageError, say


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "report", help="write the standalone HTML report of a trace, verify, compare or repair run",
        description="Write one self-contained HTML file (no network, no kernel needed) for a run folder: "
                    "a trace run (…/leapp_lab/runs/<id>, a graph folder, or the folder holding 'latest') "
                    "or a verify run, or a compare run (leapp-lab verify REF BUILD_A BUILD_B, "
                    "leapp-lab diff --out).")
    p.add_argument("run", metavar="RUN", help="run folder, its report.json, or a folder with a 'latest' run")
    p.add_argument("-o", "--output", metavar="FILE", default=None,
                   help="HTML file to write (default: report.html inside the run folder)")
    p.set_defaults(command="report")
    return p


def execute(args: argparse.Namespace):
    """Load the run, write the HTML, return the report (its path is ``args.output``)."""
    from leapp_lab import views
    from leapp_lab.model.base import load

    try:
        report = load(args.run)
        run = Path(report.path)
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    src = Path(args.run)
    if args.output:
        out = Path(args.output)
    elif src.is_file() and src.suffix == ".json" and src.name != "report.json":
        out = src.with_suffix(".html")      # `leapp-lab run --json F`'s combined report: F.html
    else:
        out = run / "report.html"
    kind = getattr(report, "kind", None)
    try:
        # a kind without an HTML view is said before the output is looked at (a build's default
        # output lies inside the build, which the output check would name first)
        if kind not in views.kinds("html"):
            views.lookup(kind, "view", type(report).__name__)
    except TypeError as exc:
        hint = {"build": "; verify the build against its reference to get a report: leapp-lab verify "
                         "MODEL.reference.npz BUILD --html F",
                "prepare": "; compile and verify the prepared model to get a report (leapp-lab compile, "
                           "then leapp-lab verify ... --html F)"}.get(kind or "", "")
        raise UsageError(f"{run}: {exc}{hint}") from None
    if out.is_dir():
        raise UsageError(f"{out}: is a folder; pass a file name such as {out / 'report.html'}")
    try:
        # the HTML host refuses an output on the run's own files or on anything it did not render
        views.render(report, "html", path=out)
    except OSError as exc:
        from leapp_lab.model.safepaths import oserror_line
        raise UsageError(f"{out}: cannot write the report: {oserror_line(exc)}") from None
    args.output = str(out)
    return report


def main(args: argparse.Namespace) -> int:
    execute(args)
    say(f"wrote {args.output}")
    sys.stdout.flush()
    return 0

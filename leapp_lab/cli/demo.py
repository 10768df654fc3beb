"""``leapp-lab demo --out DIR``: trace the embedded frozen-constant pipeline and diagnose it.

Deterministic (seeded). Prints the report and a short diagnosis (which node / port / sample fails
first, the frozen-constant hazard, the FX literal that holds the frozen value) and writes
``DIR/report.html``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from . import given, say


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("demo", help="trace the embedded example pipeline (a frozen .item() bug) "
                                    "and write a report",
                       description="Trace leapp_lab.examples.frozen_constant (a normaliser that "
                                   "divides by a live .item() statistic, and a policy MLP) with "
                                   "leapp_lab.trace, print the diagnosis and write DIR/report.html.")
    p.add_argument("--out", metavar="DIR",
                   help="output folder (LEAPP artifacts, run folder, report.html); default demo-out")
    p.add_argument("--samples", type=int, default=None, help="samples to trace (default 5)")
    return p


def main(args) -> int:
    from leapp_lab.examples import frozen_constant
    from leapp_lab.model.safepaths import check_outputs
    from leapp_lab.views.text_trace import render_diagnosis

    out = Path(args.out if args.out is not None else frozen_constant.DEFAULT_OUT)
    check_outputs([(out, "out-dir", "--out"), (out / "report.html", "html", None)])
    out.mkdir(parents=True, exist_ok=True)
    report = frozen_constant.trace_demo(str(out), **given(samples=args.samples))
    say(report)
    print()
    say(render_diagnosis(report))
    html = out / "report.html"
    report.to_html(html)
    say(f"\nreport: {html}")
    say(f"run folder: {report.path}")
    return 0

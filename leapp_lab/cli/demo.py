"""``leapp-lab demo --out DIR``: trace the embedded frozen-constant pipeline and diagnose it.

Deterministic (seeded). Prints the report and a short diagnosis (which node / port / sample fails
first, the frozen-constant hazard, the FX literal that holds the frozen value) and writes
``DIR/report.html``.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("demo", help="trace the embedded example pipeline (a frozen .item() bug) "
                                    "and write a report",
                       description="Trace leapp_lab.examples.frozen_constant (a normaliser that "
                                   "divides by a live .item() statistic, and a policy MLP) with "
                                   "leapp_lab.trace, print the diagnosis and write DIR/report.html.")
    p.add_argument("--out", default="demo-out", metavar="DIR",
                   help="output folder (LEAPP artifacts, run folder, report.html); default demo-out")
    p.add_argument("--samples", type=int, default=None, help="samples to trace (default 5)")
    return p


def diagnosis_lines(report) -> list[str]:
    from leapp_lab.views.text_trace import fx_line

    g = report.graph
    L = ["Diagnosis"]
    failing = [c for c in g.checks if c.passed is False]
    if failing:
        c = min(failing, key=lambda c: (next(n.index for n in g.nodes if n.name == c.node), c.sample))
        L.append(f"  first failing: node {c.node!r}, port {c.port!r}, sample {c.sample} "
                 f"(max |exported - recorded| = {c.stats.get('max'):.4g}; "
                 f"FX replay vs recorded {c.fx_stats.get('max'):.4g}, exported vs FX "
                 f"{c.export_vs_fx_max:.3g})")
        ok = sorted({x.sample for x in g.checks if x.node == c.node and x.port == c.port and x.passed})
        if ok:
            L.append(f"  samples that pass on that port: {', '.join(map(str, ok))}")
    else:
        L.append("  every node / port / sample validated")
    for h in g.hazards:
        if h.kind in ("frozen-constant", "trace-loss"):
            where = "/".join(x for x in (h.node, h.port) if x)
            first = h.message.split(". ")[0].rstrip(".") + "."   # the full text is above
            L.append(f"  hazard {h.kind} at {where}: {first}")
    for n in g.nodes:
        for f in (n.fx.nodes if n.fx else []):
            if f.suspect:
                L.append(f"  frozen literal in the FX graph of {n.name!r}: {fx_line(n, f)}")
    return L


def main(args) -> int:
    from leapp_lab.examples import frozen_constant
    from leapp_lab.model.safepaths import check_outputs

    out = Path(args.out)
    check_outputs([(out, "out-dir", "--out"), (out / "report.html", "html", None)])
    out.mkdir(parents=True, exist_ok=True)
    report = frozen_constant.trace_demo(str(out), samples=args.samples or frozen_constant.SAMPLES)
    print(str(report))
    print()
    print("\n".join(diagnosis_lines(report)))
    html = out / "report.html"
    report.to_html(html)
    print(f"\nreport: {html}")
    print(f"run folder: {report.path}")
    return 0

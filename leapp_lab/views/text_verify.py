"""Plain-text rendering of verify and build reports (terminals, ``str(report)``). Reads fields only."""
from __future__ import annotations

import math


def _num(v, fmt="{:.3g}") -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and not math.isfinite(v):
        return "-"
    return fmt.format(v)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    fmt = lambda cells: "  ".join(c.ljust(w) if i < 3 else c.rjust(w)  # noqa: E731
                                  for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]


def render_verify(report, verbose: bool | None = None) -> str:
    name = report.build_name or report.build
    lines = [f"verify [{name}] engine={report.engine or '?'}  samples={report.samples}  "
             f"reference={report.reference}"]
    header = ["", "name", "kind", "order", "status", "mape%", "nrmse", "mse", "max_abs", "cosine",
              "min_atol", "growth", "source"]
    body = []
    for r in report.table(verbose):
        mark = ">>" if r.first_divergent else ("!!" if r.exceeded else ("~ " if r.self_compare else "  "))
        status = r.status if r.status == "compared" else r.status.upper()
        body.append([mark, r.name, r.kind, _num(r.order, "{}"), status, _num(r.mape), _num(r.nrmse), _num(r.mse),
                     _num(r.max_abs), _num(r.cosine, "{:.6f}"), _num(r.min_atol),
                     _num(r.growth, "{:.3g}x"), r.source or ""])
    lines += _table(header, body)  # mark, name and kind left-justified; the rest right-justified
    rule = report.rule
    marks = [m for m, used in ((">> first divergent", report.first_divergent),
                               ("!! above --max-mape", report.exceeded),
                               ("~ ort compared with itself", report.self_compare_note)) if used]
    if marks:
        lines.append("   ".join(marks))
    lines.append("")
    lines.append(f"first divergent ({' or '.join(rule.criteria())}): {report.first_divergent or 'none'}")
    if report.worst_tap or report.largest_jump:
        lines.append(f"worst row: {report.worst_tap or 'none'}   largest error jump: "
                     f"{report.largest_jump or 'none'}")
    if report.self_compare_note:
        lines.append(f"~ {report.self_compare_note}")
    for r in report.table(verbose):
        if r.note and (r.status != "compared" or r.exceeded):
            lines.append(f"  {r.name}: {r.note}")
        nf = r.nonfinite_engine + r.nonfinite_reference
        if nf:
            lines.append(f"  {r.name}: {r.nonfinite_engine} non-finite engine values, "
                         f"{r.nonfinite_reference} non-finite reference values (left out of the metrics)")
    for w in report.warnings:
        lines.append(f"warning: {w}")
    if report.max_mape is not None:
        scope = "outputs and taps" if report.max_mape_taps else "model outputs"
        if report.exceeded:
            row = {r.name: r for r in report.rows}
            over = [n for n in report.exceeded if n in row and row[n].status == "compared"
                    and row[n].mape is not None and row[n].mape > report.max_mape]
            unjudged = [f"{n} ({_unjudged(row[n])})" for n in report.exceeded if n in row and n not in over
                        and (row[n].status in ("compared", "dtype-unsupported"))]
            unchecked = [f"{n} ({row[n].status})" for n in report.exceeded if n in row and n not in over
                         and row[n].status not in ("compared", "dtype-unsupported")]
            if over:
                lines.append(f"FAIL: mape above --max-mape {report.max_mape:g}% ({scope}): "
                             + ", ".join(over))
            if unchecked:
                lines.append("FAIL: model outputs not compared, so not verified (is this the reference "
                             "of the model this build came from?): " + ", ".join(unchecked))
            if unjudged:
                lines.append("FAIL: values that cannot be judged (a dtype that cannot be compared, no "
                             "finite value, NaN/Inf on one side), so not verified: " + ", ".join(unjudged))
        elif report.exit_code:
            lines.append("FAIL: --max-mape judged nothing (no model output was compared), so nothing "
                         "was verified")
        else:
            lines.append(f"PASS: every judged mape <= --max-mape {report.max_mape:g}% ({scope})")
    if report.path:
        lines.append(f"run folder: {report.path}")
    return "\n".join(lines)


def _unjudged(r) -> str:
    if r.status != "compared":
        return r.status
    return "nothing finite" if r.mape is None else "non-finite on one side"


def render_build(report) -> str:
    lines = [f"build engine={report.engine}  artifact={report.artifact}  samples={report.samples}  "
             f"onnx={report.onnx}"]
    if report.taps:
        body = [[t.name, t.kind, _num(t.order, "{}"), t.status, t.via or "", t.source or ""]
                for t in report.taps]
        lines += _table(["tap", "kind", "order", "status", "via", "source"], body)
        for t in report.taps:
            if t.reason:
                lines.append(f"  {t.name}: {t.reason}")
    ob = report.observer
    if ob.checked:
        agree = "agree" if ob.outputs_agree else "DIFFER"
        lines.append(f"observer effect: outputs with and without taps {agree}; "
                     + ("same kernels" if not ob.kernels_differ else
                        "kernels differ: " + ", ".join(map(str, ob.kernels_differ))))
        if ob.naive is not None and ob.naive.kernels_differ:
            lines.append("  (taps added before conversion would have changed: "
                         + ", ".join(map(str, ob.naive.kernels_differ))
                         + ")")
    elif ob.note:
        lines.append(f"observer effect: {ob.note}")
    for w in report.warnings:
        lines.append(f"warning: {w}")
    if report.path:
        kind = "build archive" if str(report.path).endswith((".tgz", ".tar.gz")) else "build folder"
        lines.append(f"{kind}: {report.path}")
    return "\n".join(lines)

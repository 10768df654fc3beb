"""Plain-text rendering of a compare report (``str(report)``, ``leapp-lab diff``, a multi-build
``leapp-lab verify``): the compare view's columns (``compare_view``), a header line naming each group,
then the flips, the rows in one run only and each run's first divergent row. Reads fields only."""
from __future__ import annotations

from .compare_view import FLIP_WORDS, STATUS_LABELS, _columns, _row, beyond_words
from .finding import lead
from .numfmt import fmt

_LEFT = ("text", "status", "bool", "verdict", "flip")


def _cell(col: dict, row: dict) -> str:
    v = row["cells"].get(col["key"])
    if col["type"] == "verdict":
        side = row["sides"][col["group"]]
        word = side["tap_status"] if v == "uncompared" else STATUS_LABELS.get(v, v)
        word = "–" if word is None else str(word)     # a hand-edited run may hold null here
        return (word.upper() if v == "fail" else word) + (" >>" if side["first_divergent"] else "")
    if col["type"] == "flip":
        return FLIP_WORDS.get(v, "")
    return fmt(v, col["type"])


def render_compare(report) -> str:
    sides = report.sides
    what = "diff of two verify runs" if report.mode == "diff" else f"{len(sides)} engines"
    lines = [f"compare [{what}]  baseline {report.baseline.key}"]
    lines += [f"  {s.title}" for s in sides]
    columns, groups = _columns(report)
    label = {g["key"]: g["label"] for g in groups}
    body = []
    for r in report.rows:
        row = _row(report, r, columns, panel=False)
        mark = "!!" if r.flip == "to-fail" else ("++" if r.flip == "to-pass" else "  ")
        body.append([mark, *(_cell(c, row) for c in columns)])
    header = ["", *(c["label"] for c in columns)]
    left = [True, *(c["type"] in _LEFT for c in columns)]
    widths = [max(len(header[i]), *(len(b[i]) for b in body)) if body else len(header[i])
              for i in range(len(header))]

    def line(cells):
        return "  ".join(c.ljust(w) if lj else c.rjust(w) for c, w, lj in zip(cells, widths, left)).rstrip()

    # the group line: each group's label over its columns
    spans: list[list] = []
    for i, c in enumerate(columns, 1):
        g = c.get("group")
        if spans and spans[-1][0] == g:
            spans[-1][2] = i
        else:
            spans.append([g, i, i])
    parts = ["".ljust(widths[0])]
    for g, a, b in spans:
        width = sum(widths[a:b + 1]) + 2 * (b - a)
        text = f"[{label[g]}]" if g else ""
        parts.append(text.center(width, "-" if g else " ")[:max(width, len(text))])
    lines.append("  ".join(parts).rstrip())
    lines += [line(header), line(["-" * w for w in widths])] + [line(b) for b in body]
    lines.append("!! flipped to fail   ++ flipped to pass   >> first divergent in that run   "
                 "× ratio to the baseline, Δ difference")
    lines.append("")
    base = report.baseline.key
    for s in sides[1:]:
        to_fail = [r.name for r in report.rows if r.flips.get(s.key) == "to-fail"]
        to_pass = [r.name for r in report.rows if r.flips.get(s.key) == "to-pass"]
        lines.append(f"{s.key} vs {base}: {len(to_fail)} flipped to fail"
                     + (f" ({', '.join(to_fail)})" if to_fail else "")
                     + f", {len(to_pass)} flipped to pass" + (f" ({', '.join(to_pass)})" if to_pass else ""))
    for s in sides:
        if s.expected:
            lines.append(f"{beyond_words(s.expected)} in {s.key}: {', '.join(s.beyond_expected) or 'nothing'}"
                         + (f" (largest local excess: {s.worst_local})" if s.worst_local else ""))
        lines.append(f"first divergent in {s.key}: {s.first_divergent or 'none'}")
    for w in report.warnings:
        lines.append(f"warning: {w}")
    if report.mode == "engines":
        bad = [s.key for s in sides if s.exit_code]
        if bad:
            lines.append(f"FAIL: --max-mape exceeded in {', '.join(bad)} (each run's own table: leapp-lab "
                         f"verify REFERENCE BUILD)")
    if report.fail_on_flip:
        lines.append("FAIL: rows flipped to fail (--fail-on-flip): " + ", ".join(report.to_fail)
                     if report.to_fail else "PASS: no row flipped to fail (--fail-on-flip)")
    if report.path:
        lines.append(f"run folder: {report.path}")
    return lead(report, "\n".join(lines))

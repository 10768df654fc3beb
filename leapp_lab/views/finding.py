"""The finding in the views: the first lines of every text renderer, and the view dict's
``finding`` (what the front-end draws as ``[data-leapp-finding]``, its row names as links).
The sentences themselves are the model's (``leapp_lab.model.finding``)."""
from __future__ import annotations

from typing import Any, Callable


def lead(report: Any, body: str) -> str:
    """``body`` (a text renderer's output) led by the report's finding and a blank line."""
    return f"{report.finding}\n\n{body}"


def finding_view(report: Any, row_id: Callable[[str], str | None] | None = None) -> dict[str, Any]:
    """``{"text", "status", "links": [{"text", "row"}]}``: each row name the finding cites, and the
    table row it selects (``row_id``: name -> row id, None where the table has no such row)."""
    f = report.finding_record()
    links = []
    for name in f.rows:
        rid = row_id(name) if row_id is not None else name
        if rid is not None:
            links.append({"text": name, "row": rid})
    return {"text": f.text, "status": f.status, "links": links}


def finding_parts(text: str, links: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """``[(text, row id | None)]``: ``text`` cut at every whole occurrence of a link's name, longest
    name first (the front-end's ``findingParts``, extensions/src/shared/finding.js)."""
    import re
    names = sorted((ln for ln in links if ln.get("text")), key=lambda ln: -len(ln["text"]))
    if not names:
        return [(text, None)] if text else []
    pat = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(re.escape(ln["text"]) for ln in names) + r")(?![A-Za-z0-9_])")
    row = {}
    for ln in names:
        row.setdefault(ln["text"], ln["row"])
    out, at = [], 0
    for m in pat.finditer(text):
        if m.start() > at:
            out.append((text[at:m.start()], None))
        out.append((m.group(1), row[m.group(1)]))
        at = m.end()
    if at < len(text):
        out.append((text[at:], None))
    return out

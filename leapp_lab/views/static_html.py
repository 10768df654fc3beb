"""A script-free HTML rendering of a view dict: the ``text/html`` fallback of every notebook view.

Shown where widgets cannot run (nbconvert, GitHub, a notebook opened without its kernel): the
summary, the table with the same DOM hooks as the live view, and the graph SVGs. No JavaScript, so
it also renders in untrusted notebooks. Every string is escaped.
"""
from __future__ import annotations

import html
import re
from typing import Any

from . import assets
from .numfmt import fmt

MAX_STATIC_ROWS = 300


def esc(v: Any) -> str:
    return html.escape("" if v is None else str(v), quote=True)


_BREAK_AFTER = re.compile(r"([._/:,])")


def breakable(text: str) -> str:
    """Escaped text that may wrap after a module dot, path slash, underscore, colon or comma (a
    narrow static table wraps "mlp_policy.py:26" there, never inside "manual")."""
    return _BREAK_AFTER.sub(r"\1<wbr>", esc(text))


def row_attrs(r: dict[str, Any]) -> str:
    """The DOM hooks of one table row (the front-end writes the same attributes)."""
    a = f'data-leapp-row="{esc(r["id"])}" data-leapp-status="{esc(r["status"])}"'
    if r.get("tap_status"):
        a += f' data-leapp-tap-status="{esc(r["tap_status"])}"'
    if r.get("first_divergent"):
        a += ' data-leapp-first-divergent="true"'
    for k, v in (r.get("attrs") or {}).items():      # extra hooks (compare views), data-leapp-* only
        if k.startswith("data-leapp-") and v is not None:
            a += f' {esc(k)}="{esc(v)}"'
    return a


def group_header(t: dict[str, Any], shown: list[dict[str, Any]] | None = None) -> str:
    """The grouped header row of a table whose columns (``shown``: those drawn) carry ``group``
    (compare views), else ''."""
    cols = (t.get("columns") or []) if shown is None else shown
    if not any(c.get("group") for c in cols):
        return ""
    info = {g["key"]: g for g in t.get("groups") or []}
    out, i = [], 0
    while i < len(cols):
        g = cols[i].get("group")
        j = i
        while j < len(cols) and cols[j].get("group") == g:
            j += 1
        if g:
            gi = info.get(g, {"label": g})
            out.append(f'<th colspan="{j - i}" data-leapp-group="{esc(g)}" title="{esc(gi.get("title"))}" '
                       f'class="leapp-group leapp-group-{esc(gi.get("kind") or "side")}">{esc(gi.get("label"))}</th>')
        else:
            out.append(f'<th colspan="{j - i}"></th>')
        i = j
    return '<tr class="leapp-grouprow">' + "".join(out) + "</tr>"


def _group_cell(c: dict[str, Any], r: dict[str, Any], t: dict[str, Any]) -> str:
    """A compare view's verdict or flip cell (extensions/leapp_view.js verdictCell / flipCell)."""
    v = r["cells"].get(c["key"])
    if c["type"] == "flip":
        label = (t.get("flip_labels") or {}).get(v, v) if v else ""
        return f'<td class="leapp-flipcell leapp-gstart{" leapp-" + esc(v) if v else ""}">{esc(label)}</td>'
    side = (r.get("sides") or {}).get(c.get("group")) or {}
    label = (t.get("status_labels") or {}).get(v, v)
    extra = side.get("tap_status") if side.get("tap_status") not in (None, "compared", "absent") else None
    more = f' <span class="leapp-muted">{esc(extra)}</span>' if extra else ""
    mark = ' <span class="leapp-firstmark">◀ first</span>' if side.get("first_divergent") else ""
    return (f'<td class="leapp-status leapp-gstart" data-leapp-side="{esc(c.get("group"))}" '
            f'data-leapp-verdict="{esc(v)}"><span class="leapp-pill leapp-{esc(v)}">{esc(label)}</span>{more}{mark}</td>')


def _hazards(hazards: list[dict[str, Any]]) -> str:
    """A trace's hazards with what each means (the live view's Hazards tab), or ''."""
    if not hazards:
        return ""
    items = []
    for z in hazards:
        where = " · ".join(esc(x) for x in (z.get("node"), z.get("port")) if x)
        samples = ", ".join(str(x) for x in z.get("samples") or [])
        items.append(f'<li data-leapp-hazard="{esc(z.get("kind"))}"><b>{esc(z.get("kind"))}</b>'
                     + (f" · {where}" if where else "") + (f" (samples {esc(samples)})" if samples else "")
                     + f': <span class="leapp-wrap">{esc(z.get("message"))}</span></li>')
    return (f'<div class="leapp-sub">hazards ({len(hazards)})</div>'
            f'<ul class="leapp-hazards leapp-static-hazards">{"".join(items)}</ul>')


def finding_html(finding: dict[str, Any] | None) -> str:
    """The finding as the live view draws it (extensions/src/shared/finding.js), its row names in
    bold (no script: no link to select them), or ''."""
    if not finding or not finding.get("text"):
        return ""
    from .finding import finding_parts
    text = "".join(f'<b class="leapp-finding-link">{esc(t)}</b>' if row else esc(t)
                   for t, row in finding_parts(finding["text"], finding.get("links") or []))
    status = esc(finding.get("status") or "pass")
    return (f'<div class="leapp-finding leapp-{status}" data-leapp-finding="" '
            f'data-leapp-finding-status="{status}" role="status">{text}</div>')


# The static output published just before a live view (widget.display_view) hides the widget output
# that follows it while it is on the page: a live view takes its static output off the page first
# (extensions/leapp_view.js), so what this hides is "Loading widget..." or, in a notebook reopened
# without the widget's model, "Error displaying widget: model not found". Class names: JupyterLab 4
# and Notebook 7 output areas; elsewhere the rule matches nothing.
STATIC_COMPANION_CSS = (".jp-OutputArea-child:has([data-leapp-static]) + .jp-OutputArea-child"
                        ":has(> .jupyter-widgets) { display: none; }")


def render_static(view: dict[str, Any], include_css: bool = True, static_id: str = "") -> str:
    t = view.get("table") or {}
    cols = [c for c in t.get("columns") or [] if not c.get("hidden")]     # as the live view opens
    rows = t.get("rows") or []
    out = []
    if include_css:
        out.append(f"<style>{assets.renderer_css()}</style>")
    if static_id:
        out.append(f"<style>{STATIC_COMPANION_CSS}</style>")
    marker = f' data-leapp-static="{esc(static_id)}"' if static_id else ""
    out.append(f'<div class="leapp-view leapp-static" data-leapp-kind="{esc(view.get("kind"))}" '
               f'data-leapp-status="{esc(view.get("status"))}"{marker}>')
    out.append(f'<div class="leapp-head"><div class="leapp-title"><span class="leapp-dot leapp-{esc(view.get("status"))}">'
               f'</span>{esc(view.get("title"))}</div>')
    if view.get("subtitle"):
        out.append(f'<div class="leapp-subtitle">{esc(view["subtitle"])}</div>')
    out.append(finding_html(view.get("finding")))
    out.append('<div class="leapp-badges">' + "".join(
        f'<span class="leapp-badge{" leapp-" + esc(b["status"]) if b.get("status") else ""}"><b>{esc(b["label"])}</b> '
        f'{esc(fmt(b["value"]))}</span>' for b in view.get("badges") or []) + "</div>")
    if view.get("notes"):
        out.append('<ul class="leapp-notes">' + "".join(f"<li>{esc(n)}</li>" for n in view["notes"]) + "</ul>")
    out.append("</div>")
    out.append(f'<div class="leapp-sub">{esc(t.get("title"))}</div>')
    if t.get("rule"):
        out.append(f'<div class="leapp-rule">{esc(t["rule"])}</div>')
    out.append('<div class="leapp-tablewrap"><table class="leapp-table"><thead>' + group_header(t, cols) + '<tr>'
               + "".join(f"<th>{esc(c['label'])}</th>" for c in cols) + "</tr></thead><tbody>")
    for r in rows[:MAX_STATIC_ROWS]:
        cls = f'leapp-row leapp-{esc(r["status"])}' + (" leapp-first" if r.get("first_divergent") else "")
        cells = []
        for c in cols:
            v = r["cells"].get(c["key"])
            if c["type"] in ("verdict", "flip"):
                cells.append(_group_cell(c, r, t))
            elif c["type"] == "status":
                label = (t.get("status_labels") or {}).get(r["status"], r["status"])
                extra = r.get("tap_status") if r.get("tap_status") not in (None, "compared") else None
                mark = ' <span class="leapp-firstmark">◀ first</span>' if r.get("first_divergent") else ""
                more = f' <span class="leapp-muted">{esc(extra)}</span>' if extra else ""
                cells.append(f'<td><span class="leapp-pill leapp-{esc(r["status"])}">{esc(label)}</span>{more}{mark}</td>')
            elif c["type"] == "text":
                cells.append(f'<td class="leapp-text">{breakable(fmt(v, "text"))}</td>')
            else:
                cells.append(f'<td class="leapp-{esc(c["type"])}">{esc(fmt(v, c["type"]))}</td>')
        out.append(f'<tr class="{cls}" {row_attrs(r)}>' + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    if len(rows) > MAX_STATIC_ROWS:
        out.append(f'<div class="leapp-muted">{len(rows) - MAX_STATIC_ROWS} more rows in the interactive view</div>')
    out.append(_hazards(view.get("hazards") or []))
    for g in view.get("graphs") or []:
        if g.get("svg"):
            out.append(f'<div class="leapp-graphhead"><b>{esc(g["name"])}</b></div><div class="leapp-graph">{g["svg"]}</div>')
    out.append('<div class="leapp-muted">Static view: run the notebook (or open the HTML report) for the '
               'interactive table, histograms and graphs.</div></div>')
    return "".join(out)

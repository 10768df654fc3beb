"""Graph drawings as SVG strings: the trace's connectivity graph and each node's FX graph.

Both are described once as a small ``Drawing`` (boxes with text lines, edges), then written as DOT
(by the ``graphviz`` package, which quotes every name and attribute) and laid out by Graphviz's
``dot`` when the binary is on PATH (run here, with a time limit the package's ``pipe`` lacks), or
by the simple layered layout below when it is not (longest-path layers, barycentre ordering) — so
no system dependency is required. Every shape that stands for a named thing carries ``data-leapp-node="<name>"`` (or
``data-leapp-fx="<name>"``) so the front-end can make it clickable and tests can find it; every
user string is escaped for DOT, HTML-like labels and SVG. Hover texts (SVG ``<title>``) say what a
box is in words (``Box.hover``: name, op, verdict) and an edge which boxes it joins; internal ids
(``n0``, ``n0->n1``) stay out of sight. The front-end adds zoom, pan, fit and search
(``graphNav`` in extensions/leapp_view.js).
"""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from dataclasses import dataclass, field

from .static_html import esc

# colours by verdict / flag (also used by the CSS legend)
COLORS = {"pass": "#2e7d32", "fail": "#c62828", "error": "#ef6c00", "skipped": "#757575",
          "uncompared": "#757575", "io": "#1565c0", "suspect": "#c62828", "weight": "#6a1b9a",
          "plain": "#455a64"}
FILLS = {"fail": "#fdecea", "error": "#fff3e0", "suspect": "#ffd7d2", "io": "#e3f2fd"}
_DOT_TIMEOUT_S = 20
_MAX_DOT_NODES = 600


@dataclass
class Box:
    key: str                         # unique id inside the drawing
    title: str                       # first line, bold
    lines: list[str] = field(default_factory=list)
    kind: str = "plain"              # colour key (pass/fail/error/skipped/io/suspect/weight/plain)
    attr: str = "data-leapp-node"    # the hook attribute carrying ``key``
    shape: str = "box"               # box | ellipse
    hover: str = ""                  # the tooltip: what the box is, in words (default: title)


@dataclass
class Arrow:
    src: str
    dst: str
    label: str = ""
    feedback: bool = False


@dataclass
class Drawing:
    boxes: list[Box] = field(default_factory=list)
    arrows: list[Arrow] = field(default_factory=list)
    rankdir: str = "LR"

    def edge_hovers(self) -> list[str]:
        """Each arrow's tooltip: the boxes it joins, by their titles."""
        titles = {b.key: b.title for b in self.boxes}
        return [f"{titles.get(a.src, a.src)} → {titles.get(a.dst, a.dst)}" + (f" ({a.label})" if a.label else "")
                + (" · feedback" if a.feedback else "") for a in self.arrows]


def render_svg(drawing: Drawing, prefer_dot: bool = True) -> tuple[str, str]:
    """Return ``(svg, layout)`` where layout is ``"dot"`` or ``"layered"``."""
    if not drawing.boxes:
        return "", "none"
    if prefer_dot and shutil.which("dot") and len(drawing.boxes) <= _MAX_DOT_NODES:
        try:
            return _dot_svg(drawing), "dot"
        except (OSError, subprocess.SubprocessError, ValueError):
            pass  # a broken or hanging dot must not cost the user the view: draw it ourselves
    return _layered_svg(drawing), "layered"


# -- DOT -----------------------------------------------------------------------------------------
def _html_label(box: Box) -> str:
    color = COLORS.get(box.kind, COLORS["plain"])
    rows = [f'<TR><TD ALIGN="LEFT"><B>{_hl(box.title)}</B></TD></TR>']
    rows += [f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="9" COLOR="#333333">{_hl(x)}</FONT></TD></TR>'
             for x in box.lines]
    return (f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1" COLOR="{color}">'
            + "".join(rows) + "</TABLE>>")


def _hl(s: str) -> str:
    # Graphviz HTML-like labels: escape markup; ']' and '[' are fine, but keep it printable
    return esc(s) or " "


def to_dot(drawing: Drawing) -> str:
    """The DOT source, written by the ``graphviz`` package (it quotes every name, attribute and
    label; an HTML-like label, ``<...>``, passes as it is, its text escaped by ``_hl``)."""
    import graphviz
    ids = {b.key: f"n{i}" for i, b in enumerate(drawing.boxes)}
    g = graphviz.Digraph("G", graph_attr={"rankdir": drawing.rankdir, "bgcolor": "transparent",
                                          "nodesep": "0.25", "ranksep": "0.45"},
                         node_attr={"fontname": "DejaVu Sans", "fontsize": "10", "margin": "0.08,0.04"},
                         edge_attr={"fontname": "DejaVu Sans", "fontsize": "8", "color": "#607d8b",
                                    "arrowsize": "0.6"})
    for b in drawing.boxes:
        g.node(ids[b.key], _html_label(b), id="leapp_" + ids[b.key], shape=b.shape, style="rounded,filled",
               fillcolor=FILLS.get(b.kind, "#ffffff"), color=COLORS.get(b.kind, COLORS["plain"]),
               penwidth="1.4")
    for k, a in enumerate(drawing.arrows):
        if a.src not in ids or a.dst not in ids:
            continue
        extra = {"style": "dashed", "color": "#8e24aa", "constraint": "false"} if a.feedback else {}
        label = graphviz.escape(a.label.replace("\r", "").replace("\n", " ")) if a.label else None
        g.edge(ids[a.src], ids[a.dst], label, id=f"leapp_e{k}", **extra)
    return g.source


_SVG_HEAD = re.compile(r"^.*?(<svg\b)", re.S)


def _dot_svg(drawing: Drawing) -> str:
    proc = subprocess.run(["dot", "-Tsvg"], input=to_dot(drawing).encode(), capture_output=True,
                          timeout=_DOT_TIMEOUT_S, check=False)
    if proc.returncode != 0:
        raise ValueError(proc.stderr.decode(errors="replace")[:300])
    svg = _SVG_HEAD.sub(r"\1", proc.stdout.decode("utf-8"), count=1)   # drop <?xml?> and DOCTYPE
    svg = _DOT_GRAPH_TITLE.sub("", svg, count=1)                       # "G" over the background
    # hook attributes and tooltips on the node groups dot wrote with our ids; edges say what they join
    boxes, hovers = drawing.boxes, drawing.edge_hovers()

    def node(m: re.Match) -> str:
        b = boxes[int(m.group(1))]
        return (f'<g id="leapp_n{m.group(1)}" class="node leapp-{b.kind}" {b.attr}="{esc(b.key)}">'
                f"{m.group(2)}<title>{esc(b.hover or b.title)}</title>")

    def edge(m: re.Match) -> str:
        return f"{m.group(1)}<title>{esc(hovers[int(m.group(2))])}</title>"

    svg = _DOT_NODE.sub(node, svg)
    return _DOT_EDGE.sub(edge, svg)


_DOT_GRAPH_TITLE = re.compile(r"<title>G</title>\n?")
_DOT_NODE = re.compile(r'<g id="leapp_n(\d+)" class="node">(\s*)<title>[^<]*</title>')
_DOT_EDGE = re.compile(r'(<g id="leapp_e(\d+)" class="edge">\s*)<title>[^<]*</title>')


# -- the fallback: a layered layout drawn by hand -------------------------------------------------
_CHAR_W, _LINE_H, _PAD, _GAP_X, _GAP_Y = 6.6, 14.0, 8.0, 60.0, 18.0


def _preds(drawing: Drawing) -> dict[str, list[str]]:
    """Each box's forward predecessors (feedback arrows and self-loops left out)."""
    preds: dict[str, list[str]] = {b.key: [] for b in drawing.boxes}
    for a in drawing.arrows:
        if not a.feedback and a.src in preds and a.dst in preds and a.src != a.dst:
            preds[a.dst].append(a.src)
    return preds


def _layers(drawing: Drawing, preds: dict[str, list[str]]) -> dict[str, int]:
    layer: dict[str, int] = {}
    visiting: set[str] = set()

    def depth(k: str) -> int:
        if k in layer:
            return layer[k]
        if k in visiting:           # a cycle not marked as feedback: break it here
            return 0
        visiting.add(k)
        d = max((depth(p) + 1 for p in preds[k]), default=0)
        visiting.discard(k)
        layer[k] = d
        return d

    for b in drawing.boxes:
        depth(b.key)
    return layer


def _layered_svg(drawing: Drawing) -> str:
    preds = _preds(drawing)
    layer = _layers(drawing, preds)
    cols: dict[int, list[str]] = {}
    for b in drawing.boxes:
        cols.setdefault(layer[b.key], []).append(b.key)
    # barycentre ordering, two sweeps: keeps most edges from crossing in small graphs
    pos = {k: i for c in cols.values() for i, k in enumerate(c)}
    for _ in range(2):
        for li in sorted(cols)[1:]:
            cols[li].sort(key=lambda k: (sum(pos[p] for p in preds[k]) / len(preds[k])) if preds[k] else pos[k])
            for i, k in enumerate(cols[li]):
                pos[k] = i
    size = {}
    for b in drawing.boxes:
        w = max(len(b.title), *(len(x) for x in b.lines), 4) * _CHAR_W + 2 * _PAD
        h = (1 + len(b.lines)) * _LINE_H + 2 * _PAD - 4
        size[b.key] = (w, h)
    horizontal = drawing.rankdir == "LR"
    xy: dict[str, tuple[float, float]] = {}
    offset = 10.0
    for li in sorted(cols):
        along = 10.0
        breadth = max((size[k][0] if horizontal else size[k][1]) for k in cols[li])
        for k in cols[li]:
            w, h = size[k]
            xy[k] = (offset, along) if horizontal else (along, offset)
            along += (h if horizontal else w) + _GAP_Y
        offset += breadth + (_GAP_X if horizontal else _GAP_Y + 24)
    width = max(xy[k][0] + size[k][0] for k in xy) + 10
    height = max(xy[k][1] + size[k][1] for k in xy) + 10
    # The marker id comes from the drawing itself, so the same report renders byte-identical HTML.
    # Ids are page-global and a marker inside a hidden tab does not draw for others that reference
    # it: the front-end gives every marker it inserts a page-unique id (uniqueSvgIds in the JS).
    arrow = "leapp-arrow-" + hashlib.sha1(repr(drawing).encode()).hexdigest()[:10]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}pt" height="{height:.0f}pt" '
             f'viewBox="0 0 {width:.1f} {height:.1f}" class="leapp-layered">',
             f'<defs><marker id="{arrow}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" '
             'markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#607d8b"/></marker></defs>']
    for a, hover in zip(drawing.arrows, drawing.edge_hovers()):
        if a.src not in xy or a.dst not in xy:
            continue
        (x0, y0), (w0, h0) = xy[a.src], size[a.src]
        (x1, y1), (w1, h1) = xy[a.dst], size[a.dst]
        if horizontal:
            sx, sy, tx, ty = x0 + w0, y0 + h0 / 2, x1, y1 + h1 / 2
            c = f"C{(sx + tx) / 2:.1f},{sy:.1f} {(sx + tx) / 2:.1f},{ty:.1f} "
        else:
            sx, sy, tx, ty = x0 + w0 / 2, y0 + h0, x1 + w1 / 2, y1
            c = f"C{sx:.1f},{(sy + ty) / 2:.1f} {tx:.1f},{(sy + ty) / 2:.1f} "
        style = ' stroke="#8e24aa" stroke-dasharray="4,3"' if a.feedback else ' stroke="#607d8b"'
        parts.append(f'<g class="edge"><title>{esc(hover)}</title>'
                     f'<path d="M{sx:.1f},{sy:.1f} {c}{tx:.1f},{ty:.1f}" fill="none"{style} '
                     f'marker-end="url(#{arrow})"/>'
                     + (f'<text x="{(sx + tx) / 2:.1f}" y="{(sy + ty) / 2 - 3:.1f}" font-size="8" '
                        f'text-anchor="middle" fill="#455a64">{esc(a.label)}</text>' if a.label else "")
                     + "</g>")
    for b in drawing.boxes:
        (x, y), (w, h) = xy[b.key], size[b.key]
        color = COLORS.get(b.kind, COLORS["plain"])
        fill = FILLS.get(b.kind, "#ffffff")
        rx = h / 2 if b.shape == "ellipse" else 6
        texts = [f'<text x="{x + _PAD:.1f}" y="{y + _PAD + 10:.1f}" font-size="10" font-weight="bold" '
                 f'fill="#212121">{esc(b.title)}</text>']
        texts += [f'<text x="{x + _PAD:.1f}" y="{y + _PAD + 10 + (i + 1) * _LINE_H:.1f}" font-size="9" '
                  f'fill="#333333">{esc(t)}</text>' for i, t in enumerate(b.lines)]
        parts.append(f'<g class="node leapp-{b.kind}" {b.attr}="{esc(b.key)}">'
                     f'<title>{esc(b.hover or b.title)}</title>'
                     f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{rx:.1f}" '
                     f'fill="{fill}" stroke="{color}" stroke-width="1.4"/>' + "".join(texts) + "</g>")
    parts.append("</svg>")
    return "\n".join(parts)

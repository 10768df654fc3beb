"""The standalone HTML report: one offline file, the same renderer and view dict as the widget.

``to_html(report, path=None) -> str`` and ``report(run_or_report, path) -> Path``. The page
inlines the plotly.js basic bundle, the dagre layout bundle, the renderer's CSS and ES module and
the view dict as JSON; it loads nothing from the network and needs no kernel. The output is deterministic for a given report.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from leapp_lab.model.jsonio import atomic_write_text, to_jsonable
from leapp_lab.model.safepaths import HTML_MARKER, check_outputs

from . import assets
from .registry import render
from .static_html import esc, render_static
from .viewdict import build_view

# the offline report: the selection lives in the URL fragment (a permalink), the table takes the
# window's height, and the keys work anywhere on the page
_BOOT = ('\nrenderView(document.getElementById("leapp-root"), '
         'JSON.parse(document.getElementById("leapp-view").textContent), '
         '{permalink: true, fill: true, globalKeys: true});\n')


def view_json(view: dict[str, Any]) -> str:
    """JSON safe to place inside a <script> element (no '<', '>' or '&' survive literally)."""
    text = json.dumps(to_jsonable(view), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def page(view: dict[str, Any]) -> str:
    js = assets.renderer_js()
    if "</script" in js.lower():       # never true for our file; a guard against a future edit
        raise ValueError("renderer source contains '</script'")
    return "".join([
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">',
        HTML_MARKER,    # lets leapp_lab recognise, and so replace, only the pages it wrote
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(view.get('title'))}</title>",
        f"<style>body{{margin:16px;background:#fff}}\n{assets.renderer_css()}</style>",
        f"<!-- plotly.js basic {assets.PLOTLY_VERSION} (MIT), vendored: see leapp_lab/_extensions/vendor -->",
        f"<!-- + dagre {assets.DAGRE_VERSION} (MIT), the accuracy graph's layout, vendored likewise -->",
        f"<script>{assets.plotly_js()}\n;\n{assets.dagre_js()}</script>",
        "</head><body>",
        '<div id="leapp-root"></div>',
        f"<noscript>{render_static(view, include_css=False)}</noscript>",
        f'<script type="application/json" id="leapp-view">{view_json(view)}</script>',
        f'<script type="module">{js}{_BOOT}</script>',
        "</body></html>\n",
    ])


def to_html(report: Any, path: str | os.PathLike | None = None) -> str:
    """The report as one standalone HTML page; also written to ``path`` when given."""
    if path is not None:
        check_outputs([(path, "html", None)], _inputs_of(report), inside_ok=_run_folder(report))
    text = page(build_view(report))
    if path is not None:
        atomic_write_text(Path(path), text)
    return text


def _run_folder(report: Any) -> list[Path]:
    p = getattr(report, "path", None)
    return [Path(p)] if p is not None and Path(p).is_dir() else []


def _inputs_of(report: Any) -> list[tuple[Path, str]]:
    """What the page is rendered from: the run's own report files and, for a verify run, its
    reference and build. The page may sit in the run folder, never on one of these."""
    out = []
    for run in _run_folder(report):
        out += [(run / f, "the run's report") for f in ("report.json", "build.json")
                if (run / f).exists()]
        out.append((run, "the run folder"))
    for attr, what in (("reference", "the reference npz"), ("build", "the build")):
        v = getattr(report, attr, None)
        if isinstance(v, str) and v and Path(v).exists():
            out.append((Path(v), what))
    return out


def report(run_or_report: Any, path: str | os.PathLike) -> Path:
    """Write the HTML report of a report object or of a run folder (``leapp_lab.load`` resolves it)."""
    if isinstance(run_or_report, (str, os.PathLike)):
        from leapp_lab.model.base import load
        run_or_report = load(run_or_report)
    render(run_or_report, "html", path=path)     # the kind's own html renderer, else this host
    return Path(path)

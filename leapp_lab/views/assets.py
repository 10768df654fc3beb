"""The front-end files: one renderer (ES module + CSS), the vendored plotly.js basic bundle and the
vendored dagre graph layout (the accuracy graph).

The renderer ``leapp_view.js`` is esbuild's bundle of the ES modules in ``extensions/src/``,
committed so that an install needs no Node (docs/contributing.md, "Front-end modules").

They live in the repository's ``extensions/`` folder; the wheel force-includes that folder as
``leapp_lab/_extensions`` (pyproject.toml). Both places are looked up, the installed one first.
"""
from __future__ import annotations

import functools
from pathlib import Path

PLOTLY_VERSION = "4.1.1"          # plotly.js-basic-dist-min, see extensions/vendor/VENDORED.md
RENDERER_JS = "leapp_view.js"
RENDERER_CSS = "leapp_view.css"
PLOTLY_JS = "vendor/plotly-basic.min.js"
DAGRE_VERSION = "3.1.3"           # @dagrejs/dagre, see extensions/vendor/VENDORED.md
DAGRE_JS = "vendor/dagre.min.js"


@functools.lru_cache(maxsize=1)
def extensions_dir() -> Path:
    here = Path(__file__).resolve().parent.parent          # leapp_lab/
    for cand in (here / "_extensions", here.parent / "extensions"):
        if (cand / RENDERER_JS).is_file():
            return cand
    raise FileNotFoundError(
        f"leapp_lab front-end files not found (looked for {RENDERER_JS} in {here / '_extensions'} and "
        f"{here.parent / 'extensions'}); reinstall leapp-lab")


@functools.lru_cache(maxsize=None)
def read(name: str) -> str:
    return (extensions_dir() / name).read_text(encoding="utf-8")


def renderer_js() -> str:
    return read(RENDERER_JS)


def renderer_css() -> str:
    return read(RENDERER_CSS)


def plotly_js() -> str:
    return read(PLOTLY_JS)


@functools.lru_cache(maxsize=1)
def dagre_js() -> str:
    """dagre's IIFE bundle (it declares ``var dagre``), without its trailing sourceMappingURL
    comment: the .map is not shipped, and no browser should go looking for it."""
    text = read(DAGRE_JS)
    return "\n".join(line for line in text.splitlines() if not line.startswith("//# sourceMappingURL="))


def widget_esm() -> str:
    """The anywidget module: plotly and dagre (installed once per page as ``window.Plotly`` and
    ``window.dagre``) + the renderer.

    The UMD bundle assigns ``window.Plotly`` itself; dagre's ``var dagre`` would stay local to the
    module, so it is handed to ``globalThis``. The guards keep a second widget on the same page
    from evaluating the bundles again.
    """
    return ("if (!globalThis.Plotly) {\n" + plotly_js() + "\n}\n"
            + "if (!globalThis.dagre) {\nglobalThis.dagre = (function () {\n" + dagre_js()
            + "\nreturn dagre;\n})();\n}\n" + renderer_js())

"""The front-end files: one renderer (ES module + CSS) and the vendored plotly.js basic bundle.

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


def widget_esm() -> str:
    """The anywidget module: plotly (installed once per page as ``window.Plotly``) + the renderer.

    The UMD bundle assigns ``window.Plotly`` itself; the guard keeps a second widget on the same
    page from evaluating 1.2 MB again.
    """
    return "if (!globalThis.Plotly) {\n" + plotly_js() + "\n}\n" + renderer_js()

"""The renderer registry: one renderer per (report kind, target), and the one ``render`` every
report goes through.

A report never names a view function: ``str(report)``, ``report.to_html()``, ``report.figure(row)``,
``_repr_mimebundle_`` ... all call ``Report._render(target, **opts)`` (``leapp_lab.model.base``),
which imports this package on use (the model's one way into the views) and calls
``render(report, target, **opts)``. Here the pair (``report.kind``, target) picks the renderer.

A renderer is registered as a callable or as ``"module:function"``, imported on first use, so that
``import leapp_lab.views`` stays cheap (no anywidget, no plotly) and a text-only CLI never imports the
HTML host. A renderer under the kind ``"*"`` serves every kind that has none of its own: the hosts
(the HTML page, the notebook bundle) are written once over the ``view`` target, so a new kind with a
``view`` renderer gets its HTML, notebook and widget display for free. docs/contributing.md
("Adding a report kind") walks through a new kind.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

#: every target, and what its renderer returns (``opts``: the keyword arguments it takes)
TARGETS: dict[str, str] = {
    "text": "str: plain text (str(report), what the CLI prints)",
    "view": "dict: the view dict the front-end draws (leapp_lab.views.viewdict has its shape)",
    "html": "str: the standalone offline HTML page (path=: also written there)",
    "figure": "a plotly Figure (plot=: which one; the kind's renderer names its plots)",
    "model_explorer": "list[Path]: Google Model Explorer node-data files (directory=, model_name=, graph_id=)",
    "mimebundle": "dict: the notebook display bundle (include=, exclude=)",
    "display": "None: what display(report) shows in a kernel",
}
#: the kind whose renderers serve every kind without one of its own (the hosts)
ANY_KIND = "*"

_RENDERERS: dict[tuple[str, str], Callable[..., Any] | str] = {}


class NoRenderer(TypeError):
    """No renderer for this (kind, target). A TypeError, as the view dict's dispatch raised before
    the registry (``leapp-lab report`` turns it into one usage line)."""


def register(kind: str, target: str, renderer: Callable[..., Any] | str) -> None:
    """Make ``render(report, target)`` call ``renderer(report, **opts)`` for reports of ``kind``.

    ``renderer``: a callable, or ``"module:function"`` imported on first use. Registering a pair
    again replaces it (as ``leapp_lab.model.register`` does for report classes: a re-run notebook
    cell must not fail)."""
    if target not in TARGETS:
        raise ValueError(f"unknown view target {target!r}; targets: {', '.join(TARGETS)}")
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"a renderer needs a report kind (a non-empty name), got {kind!r}")
    if isinstance(renderer, str):
        if renderer.count(":") != 1:
            raise ValueError(f"renderer {renderer!r}: write it as 'module:function'")
    elif not callable(renderer):
        raise TypeError(f"renderer for ({kind!r}, {target!r}) is {type(renderer).__name__}, not a callable "
                        f"or 'module:function'")
    _RENDERERS[(kind, target)] = renderer


def kinds(target: str) -> list[str]:
    """The report kinds with a renderer of their own for ``target``, in registration order."""
    return [k for (k, t) in _RENDERERS if t == target and k != ANY_KIND]


def lookup(kind: str | None, target: str, cls_name: str = "report") -> Callable[..., Any]:
    """The renderer ``render`` would call (the kind's own, else the ``"*"`` one)."""
    if target not in TARGETS:
        raise ValueError(f"unknown view target {target!r}; targets: {', '.join(TARGETS)}")
    key = (kind, target) if (kind, target) in _RENDERERS else (ANY_KIND, target)
    entry = _RENDERERS.get(key)
    if entry is None or (key[0] == ANY_KIND and kind is None):
        if target == "view":        # the words the view dict's dispatch always used
            raise NoRenderer(f"no view for a report of kind {kind!r} ({cls_name}); "
                             f"views exist for: {', '.join(kinds('view'))}")
        raise NoRenderer(f"no {target} renderer for a report of kind {kind!r} ({cls_name}); "
                         f"{target} renderers exist for: {', '.join(kinds(target)) or 'none'}; add one with "
                         f"leapp_lab.views.register({kind!r}, {target!r}, fn) (docs/contributing.md)")
    if isinstance(entry, str):
        module, _, name = entry.partition(":")
        entry = getattr(importlib.import_module(module), name)
        _RENDERERS[key] = entry      # imported once
    return entry


def render(report: Any, target: str, **opts: Any) -> Any:
    """Render ``report`` for ``target`` (``TARGETS``) with the renderer registered for its kind."""
    kind = getattr(report, "kind", None)
    return lookup(kind, target, type(report).__name__)(report, **opts)


def plain_repr(report: Any) -> str:
    """The text of a kind with no text renderer: its dataclass repr, what ``str`` gave before
    reports had a text target."""
    return repr(report)


# -- the built-in registrations: one line per (kind, target) --------------------------------------
for _kind, _target, _renderer in (
    ("trace", "text", "leapp_lab.views.text_trace:render_trace"),
    ("trace", "view", "leapp_lab.views.trace_view:trace_view"),
    ("verify", "text", "leapp_lab.views.text_verify:render_verify"),
    ("verify", "view", "leapp_lab.views.verify_view:verify_view"),
    ("verify", "figure", "leapp_lab.views.figures:verify_figure"),
    ("verify", "model_explorer", "leapp_lab.views.model_explorer:to_model_explorer"),
    ("replay", "figure", "leapp_lab.views.replay_figures:replay_figure"),
    ("compare", "text", "leapp_lab.views.text_compare:render_compare"),
    ("compare", "view", "leapp_lab.views.compare_view:compare_view"),
    ("repair", "text", "leapp_lab.views.text_repair:render_repair"),
    ("repair", "view", "leapp_lab.views.repair_view:repair_view"),
    ("build", "text", "leapp_lab.views.text_verify:render_build"),
    ("prepare", "text", "leapp_lab.views.text_verify:render_prepare"),
    # the hosts, written once over the "view" target
    (ANY_KIND, "text", "leapp_lab.views.registry:plain_repr"),
    (ANY_KIND, "html", "leapp_lab.views.html:to_html"),
    (ANY_KIND, "mimebundle", "leapp_lab.views.widget:mimebundle"),
    (ANY_KIND, "display", "leapp_lab.views.widget:display_view"),
):
    register(_kind, _target, _renderer)
del _kind, _target, _renderer

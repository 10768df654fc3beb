"""The notebook view: an anywidget fed the view dict through one trait.

``LeappView(report)`` syncs ``view`` (the dict from ``build_view``) to the renderer in
``extensions/leapp_view.js``; the renderer sends the user's selection back in ``selected`` (row id)
and ``sample`` (sample key), and setting those from Python moves the selection in the browser.
``mimebundle(report)`` is what reports return from ``_repr_mimebundle_``: ``text/plain`` and a
script-free ``text/html`` always, plus the widget when a kernel is there to talk to.

``display_view`` is what ``display(report)`` does in a kernel (reports' ``_ipython_display_``): two
outputs, the static view (``text/html``, marked ``data-leapp-static=ID``) and then the widget alone.
JupyterLab and Notebook 7 give a widget output to their widget renderer even when its model is gone
(a reopened notebook), so the static view must be an output of its own to survive. While the widget
is live its module takes the static view out of the page (one view, not two); without the widget the
static view stays, and its CSS hides the "model not found" line of the widget output right after it.
"""
from __future__ import annotations

from typing import Any

import uuid

import anywidget
import traitlets

from . import assets
from .static_html import render_static
from .viewdict import build_view

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def text_plain(report: Any) -> str:
    """The text a front-end without HTML shows (a terminal, jupyter console, a text viewer): the
    report's text view, with what a terminal would act on (ESC, CR, bidi overrides) in a name
    escaped as the command line prints it (``printable``)."""
    from leapp_lab.model.messages import printable
    try:
        return printable(str(report))
    except Exception as exc:   # a text view that is missing or broken must not hide the others
        return printable(f"<{type(report).__name__} kind={getattr(report, 'kind', '?')}> (text view failed: {exc})")


def plain_text_repr(shell: Any, cls: type) -> None:
    """Show a report that has no view (build, prepare) through its text (``text_plain``: its
    ``__str__``, escaped) rather than the dataclass repr, when it has no display protocol of its own."""
    if any(hasattr(cls, m) for m in ("_repr_pretty_", "_repr_mimebundle_", "_repr_html_")):
        return
    if cls.__str__ is object.__str__:
        return
    shell.display_formatter.formatters["text/plain"].for_type(cls, lambda obj, p, cycle: p.text(text_plain(obj)))


class LeappView(anywidget.AnyWidget):
    """Interactive view of a trace or verify report (one renderer, shared with the HTML report)."""

    _esm = traitlets.Unicode().tag(sync=True)
    _css = traitlets.Unicode().tag(sync=True)
    view = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)    # row id shown in the histogram panel
    sample = traitlets.Unicode("").tag(sync=True)      # sample key of that row ("" = the row's default)
    # data-leapp-static of this view's static output: the live view takes that output off the page
    _static_id = traitlets.Unicode("").tag(sync=True)

    @traitlets.default("_esm")
    def _default_esm(self) -> str:
        return assets.widget_esm()

    @traitlets.default("_css")
    def _default_css(self) -> str:
        return assets.renderer_css()

    def __init__(self, report: Any = None, *, view: dict | None = None, **kwargs: Any) -> None:
        if view is None:
            if report is None:
                raise TypeError("LeappView needs a report (or a view dict)")
            view = build_view(report)
        from leapp_lab.model.jsonio import to_jsonable
        view = to_jsonable(view)          # strict JSON: NaN/Inf -> null
        first = (view.get("table") or {}).get("first_divergent") or ""
        kwargs.setdefault("selected", first)
        kwargs.setdefault("_static_id", uuid.uuid4().hex)
        super().__init__(view=view, **kwargs)
        self.report = report

    # -- Python-side selection --------------------------------------------------------------------
    def rows(self) -> list[dict]:
        return list((self.view.get("table") or {}).get("rows") or [])

    def row(self, row_id: str | None = None) -> dict:
        row_id = self.selected if row_id is None else row_id
        for r in self.rows():
            if r["id"] == row_id:
                return r
        known = [r["id"] for r in self.rows()[:8]]
        raise KeyError(f"no row {row_id!r} in this view; rows look like {known}")

    def select(self, row_id: str, sample: str | int | None = None) -> None:
        r = self.row(row_id)
        key = "" if sample is None else str(sample)
        if key and key not in {s["key"] for s in r["samples"]}:
            raise KeyError(f"row {row_id!r} has no sample {key!r}; samples: {[s['key'] for s in r['samples']]}")
        self.sample = key
        self.selected = row_id

    @traitlets.validate("selected")
    def _check_selected(self, proposal: Any) -> str:
        v = proposal["value"]
        if v and self.view and not any(r["id"] == v for r in self.rows()):
            raise traitlets.TraitError(f"no row {v!r} in this view")
        return v

    # -- display ------------------------------------------------------------------------------------
    def _widget_data(self, **kwargs: Any) -> dict:
        """anywidget's own bundle (the widget mime type and its text)."""
        data = super()._repr_mimebundle_(**kwargs) or {}
        return dict(data[0] if isinstance(data, tuple) else data)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any):
        data = self._widget_data(**kwargs)
        data["text/html"] = render_static(self.view)
        if self.report is not None:
            data["text/plain"] = text_plain(self.report)
        return _filter(data, include, exclude)

    def _ipython_display_(self) -> None:
        display_view(self.report, widget=self)

    def widget_bundle(self) -> dict:
        """The widget output of ``display_view``: the widget and one line of text, no HTML (front-ends
        that cannot draw the widget show the static output published just before it)."""
        data = self._widget_data()
        data.pop("text/html", None)
        data["text/plain"] = "leapp_lab interactive view (the static view is the output above)"
        return data


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def _filter(data: dict, include: Any, exclude: Any) -> dict:
    if include:
        data = {k: v for k, v in data.items() if k in include}
    if exclude:
        data = {k: v for k, v in data.items() if k not in exclude}
    return data


def _make_widget(report: Any, view: dict | None = None) -> LeappView | None:
    """The widget, or None with a warning (no comm, no anywidget front-end...): the static view
    still shows."""
    try:
        return LeappView(report, view=view)
    except Exception as exc:
        import warnings
        warnings.warn(f"leapp_lab: interactive view unavailable ({type(exc).__name__}: {exc}); "
                      f"showing the static HTML view", stacklevel=3)
        return None


def mimebundle(report: Any, include: Any = None, exclude: Any = None, widget: bool | None = None) -> dict:
    """``text/plain`` + ``text/html`` (+ the widget when running in a kernel, or ``widget=True``)."""
    want_widget = _in_kernel() if widget is None else widget
    view = build_view(report)
    if want_widget and not (include and WIDGET_MIME not in include) and not (exclude and WIDGET_MIME in exclude):
        w = _make_widget(report, view)
        if w is not None:
            return w._repr_mimebundle_(include=include, exclude=exclude)
    return _filter({"text/plain": text_plain(report), "text/html": render_static(view)}, include, exclude)


def static_bundle(report: Any, view: dict, static_id: str = "") -> dict:
    return {"text/plain": text_plain(report) if report is not None else "leapp_lab view",
            "text/html": render_static(view, static_id=static_id)}


def display_view(report: Any = None, widget: LeappView | None = None) -> None:
    """Publish the static view as its own output, then the widget (see the module docstring).

    Outside a kernel, or when the widget cannot be made, only the static output is published."""
    from IPython.display import display
    if widget is None:
        view = build_view(report)
        widget = _make_widget(report, view) if _in_kernel() else None
        if widget is None:
            display(static_bundle(report, view), raw=True)
            return
    display(static_bundle(widget.report, widget.view, widget._static_id), raw=True)
    display(widget.widget_bundle(), raw=True)


def show(report: Any) -> LeappView:
    """Display the interactive view of ``report`` and return the widget (to read its selection)."""
    w = LeappView(report)
    display_view(report, widget=w)
    return w

"""plotly ``Figure`` objects of a verify report: a row's |diff| histogram and the error-growth plot.

They are drawn from the same view-dict pieces as the interactive view (``verify_view.view_row`` and
``profile_view``), so a figure shows what the view shows: the exact-zero bin, the log bins, the
non-finite pairs in a bar of their own; nrmse by default, the rule's threshold, the first divergent
row, rows without a value at the top. plotly (Python) is an optional dependency, imported here
only; plotly 7.1 bundles plotly.js 4.1.1, the version vendored for the views (tests check it).
"""
from __future__ import annotations

import math
from typing import Any

from leapp_lab.model.hist import bin_lower_edge
from leapp_lab.model.numfmt import fmt_exp


def _go():
    try:
        import plotly.graph_objects as go
    except ImportError as exc:     # optional: the views and reports never need it
        raise ImportError("report.figure() / growth_figure() need plotly: pip install 'plotly>=7.1'") from exc
    return go


def _colour(status: str) -> str:
    return {"fail": "#c62828", "pass": "#2e7d32"}.get(status, "#9e9e9e")


def hist_figure(row: dict[str, Any], sample: str | int | None = None, *, title: str = "|engine − reference|",
                nonfinite_label: str = "non-finite") -> Any:
    """The |diff| histogram of a view-dict row (``sample``: a sample key or index; None: the row's
    default, the aggregate over all samples)."""
    go = _go()
    key = row["default_sample"] if sample is None else str(sample)
    s = next((x for x in row["samples"] if x["key"] == key), None)
    if s is None:
        raise KeyError(f"row {row['id']!r} has no sample {key!r}; samples: {[x['key'] for x in row['samples']]}")
    h = s["hist"] or {"zero": 0, "first_bin": 0, "counts": [], "nonfinite": 0}
    counts, first = h["counts"], h["first_bin"]
    xs, ys, text, colours = [0], [h["zero"]], ["exactly 0"], ["#1565c0"]
    for i, c in enumerate(counts):
        lo, hi = bin_lower_edge(first + i), bin_lower_edge(first + i + 1)
        xs.append(i + 2), ys.append(c), text.append(f"[{fmt_exp(lo, 2)}, {fmt_exp(hi, 2)})"), colours.append("#ef6c00")
    step = max(1, math.ceil(len(counts) / 7))
    tickvals, ticktext = [0], ["0"]
    for i in range(0, len(counts), step):
        tickvals.append(i + 1.5)
        ticktext.append(fmt_exp(bin_lower_edge(first + i), 1))
    if h.get("nonfinite"):
        x = len(counts) + 3
        xs.append(x), ys.append(h["nonfinite"]), text.append(nonfinite_label), colours.append("#6a1b9a")
        tickvals.append(x), ticktext.append("non-finite")
    fig = go.Figure(go.Bar(x=xs, y=ys, text=text, textposition="none", width=0.92, marker_color=colours,
                           hovertemplate="%{text}<br>count %{y}<extra></extra>"))
    fig.update_layout(title=f"{title} · {row['id']} · {s['label']}", bargap=0.05, showlegend=False, height=320,
                      xaxis=dict(tickvals=tickvals, ticktext=ticktext, zeroline=False,
                                 title="|diff| (log bins; 0 = exact zero)"),
                      yaxis=dict(title="elements", rangemode="tozero"))
    return fig


def verify_figure(report: Any, plot: str = "hist", *, row: str | None = None, sample: str | int | None = None,
                  metric: str = "nrmse") -> Any:
    """The registry's ``figure`` renderer of a verify report (``report.figure`` and
    ``growth_figure``): ``plot="hist"``, the |diff| histogram of ``row`` as the view draws it;
    ``plot="growth"``, the error-growth plot of ``metric``."""
    from .verify_view import HIST_TITLE, NONFINITE_LABEL, profile_view, view_row
    if plot == "hist":
        if row is None:
            raise TypeError("the verify histogram figure needs row=: a row name (report.figure(row))")
        return hist_figure(view_row(report, report.row(row)), sample, title=HIST_TITLE,
                           nonfinite_label=NONFINITE_LABEL)
    if plot == "growth":
        return growth_figure(profile_view(report), metric)
    raise ValueError(f"no verify figure {plot!r}; choose plot='hist' (a row's |diff| histogram) or 'growth'")


def growth_figure(profile: dict[str, Any] | None, metric: str = "nrmse") -> Any:
    """The error-growth plot of a view dict's profile (``metric``: a profile series key)."""
    go = _go()
    if not profile:
        raise ValueError("this report has no judged rows: there is no error-growth profile")
    series = {s["key"]: s for s in profile["series"]}
    if metric not in series:
        raise KeyError(f"no profile metric {metric!r}; choose one of {sorted(series)}")
    s = series[metric]
    n = len(profile["x"])
    hover = [f"{name}{' · ' + sc if sc else ''}{'<br>why: ' + rs if rs else ''}"
             for name, sc, rs in zip(profile["x"], profile["scope"], profile["reason"])]
    fig = go.Figure(go.Scatter(x=list(range(n)), y=s["y"], mode="lines+markers" if n <= 600 else "markers",
                               text=hover, customdata=profile["x"], name=s["label"],
                               hovertemplate="%{text}<br>" + s["label"] + " %{y:.3e}<extra></extra>",
                               line=dict(width=1, color="rgba(120,120,120,0.6)"),
                               marker=dict(color=[_colour(st) for st in profile["status"]], size=8 if n <= 100 else 5)))
    ok = [v for v in s["y"] if v is not None and (not s["log"] or v > 0)]
    top = max(ok + ([s["threshold"]] if s["threshold"] is not None else []), default=1.0)
    missing = [i for i, v in enumerate(s["y"]) if v is None or (s["log"] and not v > 0)]
    if missing:        # no value (every pair non-finite, or nothing to divide by): at the top, not dropped
        y_top = top * 4 if s["log"] else top + abs(top) * 0.12 + (1 if top == 0 else 0)
        fig.add_trace(go.Scatter(x=missing, y=[y_top] * len(missing), mode="markers", name="no value",
                                 customdata=[profile["x"][i] for i in missing],
                                 text=[f"{hover[i]}<br>{profile['nonfinite'][i]} non-finite values" for i in missing],
                                 hovertemplate="%{text}<extra></extra>",
                                 marker=dict(symbol="x", size=9, color="#6a1b9a")))
    if s["threshold"] is not None:
        fig.add_hline(y=s["threshold"], line_dash="dash", line_color="#c62828",
                      annotation_text=f"rule: {s['label']} {'<' if s.get('worse') == 'below' else '>'} "
                                      f"{s['threshold']:g}")
    for key, colour, dash, label in (("first_divergent_index", "#c62828", "dot", "first divergent"),
                                     ("first_local_divergent_index", "#ef6c00", "dashdot", "first locally divergent")):
        i = profile.get(key)
        if i is not None:
            fig.add_vline(x=i, line_dash=dash, line_color=colour, annotation_text=label)
    tickvals = list(range(n)) if n <= 40 else list(range(0, n, max(1, math.ceil(n / 30))))
    fig.update_layout(title=f"{s['label']} over outputs and taps, in model order ({n} rows)", showlegend=False,
                      height=480 if n > 200 else 360, hovermode="closest",
                      xaxis=dict(tickvals=tickvals, ticktext=[profile["x"][i] for i in tickvals], tickangle=-40),
                      yaxis=dict(type="log" if s["log"] else "linear", title=s["label"]))
    return fig

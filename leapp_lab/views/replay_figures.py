"""plotly ``Figure`` objects of a replay section (``report.graph.replay.figure(...)``).

Drawn from the stored rows only (every number was computed by the replay): the error per step, an
engine's own vs inherited error, the per-element error of an output, and the steps × taps heatmap
of an engine. plotly (Python) is optional and imported here only.
"""
from __future__ import annotations

from typing import Any

from leapp_lab.model.numfmt import fmt

from .figures import _colour, _go


def _runs(sec: Any, engine: str | None):
    if engine is None:
        return sec.runs(), "fp32 export"
    e = sec.engine(engine)
    return e.runs(), engine


def _pick(runs: list, tier: str | None):
    if not runs:
        raise ValueError("this replay holds no sequence to draw (it did not run)")
    if tier is None:
        return runs[-1]
    for r in runs:
        if r.tier == tier:
            return r
    raise KeyError(f"no tier {tier!r} in this replay; tiers: {[r.tier for r in runs]}")


def _marks(fig: Any, run: Any) -> None:
    for k in run.resets:
        fig.add_vline(x=k - 0.5, line_dash="dash", line_color="#6a1b9a", annotation_text="reset")


def _output(run: Any, output: str | None) -> str:
    names = [o.output for o in run.outputs]
    if output is None:
        if not names:
            raise ValueError("this sequence compared no output")
        return names[0]
    if output not in names:
        raise KeyError(f"no output {output!r} in this sequence; outputs: {names}")
    return output


def error_figure(sec: Any, engine: str | None, output: str | None, tier: str | None) -> Any:
    go = _go()
    runs, who = _runs(sec, engine)
    run = _pick(runs, tier)
    fig = go.Figure()
    outs = [o.output for o in run.outputs] if output is None else [_output(run, output)]
    for o in outs:
        rows = [r for r in run.rows if r.output == o]
        st = ["uncompared" if r.passed is None else ("pass" if r.passed else "fail") for r in rows]
        fig.add_trace(go.Scatter(x=[r.step for r in rows], y=[r.max_abs for r in rows], mode="lines+markers",
                                 name=o, marker=dict(color=[_colour(s) for s in st], size=7)))
        if engine is not None:
            fig.add_trace(go.Scatter(x=[r.step for r in rows], y=[r.fp32_max_abs for r in rows], mode="lines",
                                     name=f"{o} vs fp32", line=dict(dash="dot")))
    _marks(fig, run)
    s = next((x for x in run.outputs if x.output in outs and x.first_fail_step is not None), None)
    if s is not None:
        fig.add_vline(x=s.first_fail_step, line_dash="dot", line_color="#c62828",
                      annotation_text=f"first beyond tolerance ({s.output})")
    fig.update_layout(title=f"replay tier ({run.tier}) on {who}: max |diff| per step", height=360,
                      xaxis=dict(title="step"), yaxis=dict(title="max |diff|", rangemode="tozero"))
    return fig


def split_figure(sec: Any, engine: str | None, output: str | None, tier: str | None) -> Any:
    go = _go()
    if engine is None:
        raise TypeError("the own / inherited split is an engine's: figure('split', engine=NAME)")
    runs, who = _runs(sec, engine)
    run = _pick(runs, tier)
    o = _output(run, output)
    rows = [r for r in run.rows if r.output == o]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[r.step for r in rows], y=[r.own_error for r in rows], mode="lines+markers",
                             name="own (a step from the fp32 state)"))
    fig.add_trace(go.Scatter(x=[r.step for r in rows], y=[r.inherited_error for r in rows], mode="lines+markers",
                             name="inherited (through the state and upstream)"))
    _marks(fig, run)
    fig.update_layout(title=f"{o} on {who}, tier ({run.tier}): own vs inherited error per step", height=360,
                      xaxis=dict(title="step"), yaxis=dict(title="max |diff| vs fp32", rangemode="tozero"))
    return fig


def elements_figure(sec: Any, engine: str | None, output: str | None, tier: str | None) -> Any:
    go = _go()
    runs, who = _runs(sec, engine)
    run = _pick(runs, tier)
    o = _output(run, output)
    s = next(x for x in run.outputs if x.output == o)
    if not s.elements:
        raise ValueError(f"{o} has no per-element breakdown (no semantics, and more than 32 elements)")
    fig = go.Figure(go.Bar(x=[e.name for e in s.elements], y=[e.max_abs for e in s.elements],
                           marker_color=["#c62828" if e.name == s.worst_element else "#ef6c00" for e in s.elements],
                           text=[f"nrmse {fmt(e.nrmse)}" for e in s.elements],
                           hovertemplate="%{x}<br>max |diff| %{y:.3e}<br>%{text}<extra></extra>"))
    fig.update_layout(title=f"{o} on {who}, tier ({run.tier}): max |diff| per element (worst: {s.worst_element})",
                      height=340, xaxis=dict(type="category", tickangle=-40), yaxis=dict(title="max |diff|"))
    return fig


def taps_figure(sec: Any, engine: str | None, output: str | None, tier: str | None, local: bool = False) -> Any:
    go = _go()
    if engine is None:
        raise TypeError("the taps heatmap is an engine's: figure('taps', engine=NAME)")
    e = sec.engine(engine)
    t = e.taps
    if t is None or not t.taps:
        raise ValueError(f"the replay on {engine} holds no taps over time (no node with taps)")
    z = t.local_nrmse if local else t.nrmse
    fig = go.Figure(go.Heatmap(z=[list(r) for r in z], x=t.taps, y=t.steps, colorscale="Reds",
                               colorbar=dict(title="nrmse"), hovertemplate="step %{y}<br>%{x}<br>nrmse %{z:.3e}<extra></extra>"))
    first = t.first_local if local else t.first
    if first is not None:
        fig.add_trace(go.Scatter(x=[first["tap"]], y=[first["step"]], mode="markers",
                                 marker=dict(symbol="x", size=14, color="#1565c0"), name="first beyond the rule"))
    fig.update_layout(title=f"taps of {t.node} on {engine} over the steps ({'local, ' if local else ''}nrmse)",
                      height=420, xaxis=dict(type="category", tickangle=-40), yaxis=dict(title="step", autorange="reversed"))
    return fig


PLOTS = {"error": error_figure, "split": split_figure, "elements": elements_figure, "taps": taps_figure}


def replay_figure(sec: Any, plot: str = "error", *, engine: str | None = None, output: str | None = None,
                  tier: str | None = None, **opts: Any) -> Any:
    """The registry's ``figure`` renderer of a replay section (``ReplayResult.figure``)."""
    if plot not in PLOTS:
        raise ValueError(f"no replay figure {plot!r}; choose one of {', '.join(PLOTS)}")
    return PLOTS[plot](sec, engine, output, tier, **opts)

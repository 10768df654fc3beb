"""``leapp_lab.parity(trace_report, step_fn, n=8)``: exported vs original on fresh inputs.

The integration guide's last check ("Validate the whole exported pipeline"): new inputs drawn like
the captured ones, scaled and shifted (``deep/fresh.py``), through ``leapp.InferenceManager`` and
through the original pipeline. Each fresh input is one step from the initial state on both sides;
the statistics are validation's own (``leapp_lab.numerics.checks.sample_check``).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from leapp_lab.model.parity import ParityOutput, ParityResult
from leapp_lab.model.sections import save_section
from leapp_lab.model.semantics import ElementSums, element_layout
from leapp_lab.model.trace import GraphReport
from leapp_lab.numerics.checks import sample_check

from . import fresh as fresh_inputs
from . import stepfn as stepfns
from .common import (Progress, Unavailable, failed_reason, leapp_passes, report_progress, resolve,
                     tolerances)
from .runtime import ExportedPipeline
from leapp_lab.model.numfmt import fmt

DEFAULT_N = 8


def run_parity(graph: GraphReport, arrays: dict, step_fn: Callable | None, *, n: int | None = None,
               seed: int = 0, rtol: float | None = None, atol: float | None = None,
               progress: Progress | None = None) -> tuple[ParityResult, dict[str, np.ndarray]]:
    """The parity section of one graph (never raises: a failure is the section's status)."""
    rtol, atol = tolerances(graph, rtol, atol)
    n = DEFAULT_N if n is None else int(n)
    res = ParityResult(status="ok", n=n, seed=int(seed), rtol=rtol, atol=atol,
                       scales=list(fresh_inputs.SCALES), shift=fresh_inputs.SHIFT)
    saved: dict[str, np.ndarray] = {}
    if step_fn is None:
        res.status = "unavailable"
        res.reason = ("fresh-input parity needs the original pipeline to call: "
                      "leapp_lab.parity(report, step_fn), or --step-fn with --parity N")
        return res, saved
    if n < 1:
        raise ValueError(f"parity: n must be at least 1, got {n}")
    try:
        stepfns.check_callable(step_fn)
    except TypeError as exc:
        res.status, res.reason = "failed", str(exc)
        return res, saved
    try:
        pipe = ExportedPipeline(graph)
        res.inputs = fresh_inputs.plan(arrays, pipe.inputs)
    except Unavailable as exc:
        res.status, res.reason = "unavailable", str(exc)
        return res, saved
    except Exception as exc:
        res.status, res.reason = "failed", failed_reason("preparing the parity check", exc)
        return res, saved
    names = stepfns.output_names(graph)
    drawer = fresh_inputs.Drawer(res.inputs, seed)
    try:
        for i in range(n):
            report_progress(progress, f"parity: fresh input {i + 1}/{n}", i, n)
            x = drawer.draw(i)
            pipe.reset()
            out = pipe.step(x)
            orig = stepfns.call(step_fn, x, True, names)
            for key, v in x.items():
                saved[f"{key}/{i}/input"] = v.numpy().copy()
            for o in pipe.outputs:
                if o not in orig:
                    continue
                node, port = o.split("/", 1)
                e = out.get(o)
                res.checks.append(sample_check(node, port, i, recorded=orig[o], exported=e, fx=None,
                                               passed=leapp_passes(e, orig[o], rtol, atol),
                                               rtol=rtol, atol=atol, semantics=graph.semantics_of(o)))
                saved[f"{o}/{i}/original"] = orig[o]
                if e is not None:
                    saved[f"{o}/{i}/exported"] = e
    except Exception as exc:
        res.status, res.reason = "failed", failed_reason("the parity check (step_fn)", exc)
        return res, saved
    if not res.checks:
        res.status = "failed"
        res.reason = (f"step_fn returned none of the graph's node outputs; return "
                      f"{{'node/port': tensor}} for some of {pipe.outputs}")
        return res, saved
    for o in pipe.outputs:
        cs = [c for c in res.checks if f"{c.node}/{c.port}" == o]
        if not cs:
            continue
        po = ParityOutput(output=o, samples=len(cs), failed=sum(c.passed is False for c in cs))
        with_max = [c for c in cs if c.stats.get("max") is not None]
        if with_max:
            worst = max(with_max, key=lambda c: c.stats["max"])
            po.max_abs, po.worst_sample = worst.stats["max"], worst.sample
        atols = [c.min_atol for c in cs if c.min_atol is not None]
        po.min_atol = max(atols) if atols else None
        lay = element_layout(graph.semantics_of(o), np.shape(saved.get(f"{o}/{cs[0].sample}/original")))
        if lay is not None:
            sums = ElementSums(lay)
            for c in cs:
                sums.add(saved.get(f"{o}/{c.sample}/exported"), saved.get(f"{o}/{c.sample}/original"))
            po.elements, po.worst_element = sums.errors(), sums.worst()
        res.outputs.append(po)
    shapes = {o: (np.shape(saved.get(f"{o}/{c.sample}/exported")), np.shape(saved[f"{o}/{c.sample}/original"]))
              for c in res.checks for o in [f"{c.node}/{c.port}"]
              if f"{o}/{c.sample}/exported" in saved
              and np.shape(saved[f"{o}/{c.sample}/exported"]) != np.shape(saved[f"{o}/{c.sample}/original"])}
    for o, (e, r) in shapes.items():
        res.notes.append(f"{o}: not compared: the exported pipeline returns shape {list(e)}, step_fn "
                         f"{list(r)}; step_fn must return each output with the shape the traced code gave it")
    if any(c.passed is False for c in res.checks):
        res.status = "diverged"
    bad = [p for p in res.outputs if p.failed and p.output not in shapes]
    if bad:
        res.notes.append("fresh inputs fail on " + ", ".join(
            f"{p.output} ({p.failed}/{p.samples}, max {fmt(p.max_abs)})" if p.max_abs is not None
            else f"{p.output} ({p.failed}/{p.samples})" for p in bad)
            + ": the export reproduces the traced samples but not new ones (a value frozen at "
              "trace time, a Python branch, a shape- or range-dependent path)")
    missing = [o for o in pipe.outputs if o not in {f"{c.node}/{c.port}" for c in res.checks}]
    if missing:
        res.notes.append(f"not compared (step_fn does not return them): {', '.join(missing)}")
    return res, saved


def parity(trace_report: Any, step_fn: Callable, n: int | None = None, *, seed: int = 0,
           rtol: float | None = None, atol: float | None = None, graph: str | None = None,
           progress: Progress | None = None) -> ParityResult:
    """Fresh-input parity of a traced graph (docs/deep-checks.md).

    ``step_fn(inputs, reset=...)``: the original pipeline, one step (``leapp_lab/deep/stepfn.py``).
    ``n`` fresh inputs (8 when None), drawn with ``seed``; ``rtol``/``atol`` default to the graph's
    validation tolerances. Saved as ``parity.json`` / ``parity.npz`` in the graph's run folder and
    attached (``report.graph.parity``).
    """
    rep, g = resolve(trace_report, graph)
    res, saved = run_parity(g, rep.graph_arrays(g), step_fn, n=n, seed=seed, rtol=rtol, atol=atol,
                            progress=progress)
    return save_section(g, res, saved)

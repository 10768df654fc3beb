"""Sequential replay (``leapp_lab.replay``, composed in ``leapp_lab.steps.replay_engines``).

Tier (a) replays the captured trajectory through ``leapp.InferenceManager`` with the exported
state and feedback carried forward; tier (b), given the original pipeline as ``step_fn``, runs
fresh observations and episode resets on both; when the exported pipeline cannot be loaded the
result is tier (c), ``status: unavailable`` with the reason (docs/deep-checks.md).

Resets in the captured trajectory are read from the recording: step ``k`` starts an episode when
some feedback input was *not* fed the previous step's output and every feedback input holds its
initial value (sample 0) or zeros. The exported side then calls ``InferenceManager.reset()``, as a
deployed runtime would. A feedback input changed in any other way is a *break*: the Python loop
fed back something the exported graph cannot (it keeps carrying its own output).

Values LEAPP never really recorded (``leapp_lab.model.episodes.unrecorded``: the ``unfilled-cache``
placeholders of a module-tracked state, input and next state) are never read as a reset nor used as
a reference: the closed loop carries its own state through them and lists those steps per port in
``not_comparable``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from leapp_lab.model.replay import ReplayOutput, ReplayResult, ReplayRow, ReplayRun
from leapp_lab.model.semantics import ElementSums, PortSemantics, breakdown, element_layout
from leapp_lab.model.trace import GraphReport
from leapp_lab.model.episodes import captured_steps, read_resets, unrecorded_pairs

from . import fresh as fresh_inputs
from . import stepfn as stepfns
from .common import (Progress, Unavailable, diff_numbers, failed_reason, leapp_passes, report_progress,
                     tolerances)
from .growth import fit_growth
from .runtime import ExportedPipeline
from leapp_lab.model.numfmt import fmt

DEFAULT_FRESH_STEPS = 16


NOT_RECORDED = "not comparable: LEAPP did not record this value (its unfilled zero placeholder)"


class ElementTotals:
    """Per output, the per-element error over the whole sequence (ReplayOutput.elements)."""

    def __init__(self, graph: GraphReport) -> None:
        self.graph = graph
        self.sums: dict[str, ElementSums | None] = {}

    def add(self, output: str, value, ref) -> None:
        if value is None or ref is None:
            return
        if output not in self.sums:
            lay = element_layout(self.graph.semantics_of(output), np.shape(ref))
            self.sums[output] = ElementSums(lay) if lay is not None else None
        s = self.sums[output]
        if s is not None:
            s.add(value, ref)

    def fill(self, run: ReplayRun) -> None:
        for o in run.outputs:
            s = self.sums.get(o.output)
            if s is not None:
                o.elements, o.worst_element = s.errors(), s.worst()


def _row(step: int, output: str, value, ref, rtol: float, atol: float, reset: bool,
         note: str | None = None, semantics: PortSemantics | None = None) -> ReplayRow:
    if ref is None:
        return ReplayRow(step, output, reset=reset, note=note or "no reference value")
    if value is None:
        return ReplayRow(step, output, reset=reset, passed=False, note=note or "the exported pipeline returned nothing")
    if np.shape(value) != np.shape(ref):
        return ReplayRow(step, output, reset=reset, passed=False,
                         note=f"the export's shape {list(np.shape(value))} vs the reference's "
                              f"{list(np.shape(ref))}")
    n = diff_numbers(value, ref)
    row = ReplayRow(step, output, n["max_abs"], n["nrmse"], n["ref_max"],
                    leapp_passes(value, ref, rtol, atol), reset, note)
    row.elements, row.worst_element = breakdown(semantics, value, ref)
    return row


def summarize(run: ReplayRun, outputs: list[str], atol: float, feedback: bool = True) -> None:
    """Per-output summary (first / last / max error, first failing step, growth) and the verdict.
    Without feedback no error is carried from step to step: ``grows`` stays False."""
    run.outputs = []
    for o in outputs:
        rows = [r for r in run.rows if r.output == o and r.max_abs is not None]
        fails = [r.step for r in run.rows if r.output == o and r.passed is False]
        s = ReplayOutput(output=o, steps=len(rows), first_fail=min(fails) if fails else None)
        s.first_fail_step = s.first_fail
        if rows:
            s.first, s.last = rows[0].max_abs, rows[-1].max_abs
            worst = max(rows, key=lambda r: r.max_abs)
            s.max_abs, s.max_step = worst.max_abs, worst.step
            s.growth = s.last / s.first if s.first > 0 else None
            s.grows = bool(feedback and len(rows) > 1 and s.last > 2 * s.first and s.last > atol)
            s.growth_per_step, s.trend = fit_growth([(r.step, r.max_abs) for r in rows], run.resets, atol)
        else:
            why = next((r.note for r in run.rows if r.output == o and r.passed is False and r.note), None)
            if why:                 # failed at every step without a number: say why once
                run.notes.append(f"{o}: no step compared ({why})")
        run.outputs.append(s)
    bad = [r for r in run.rows if r.passed is False]
    if bad:
        first = min(bad, key=lambda r: (r.step, outputs.index(r.output) if r.output in outputs else 0))
        run.first_divergent = {"step": first.step, "output": first.output}
        run.status = "diverged"
    else:
        run.first_divergent = None
        run.status = "ok"
    if run.rows and all(r.max_abs is None and r.passed is None for r in run.rows):
        run.status = "unavailable"
        run.reason = ("no step has a recorded value to compare with"
                      + (f" (not comparable: {', '.join(sorted(run.not_comparable))})" if run.not_comparable else ""))


def _not_comparable(run: ReplayRun) -> None:
    """``run.not_comparable``: per output, the steps with no number (no real reference there)."""
    nc: dict[str, list[int]] = {}
    for r in run.rows:
        if r.max_abs is None and r.passed is None:
            nc.setdefault(r.output, []).append(r.step)
    run.not_comparable = nc


def detect_resets(arrays: dict, feedback: list[tuple[str, str]], steps: int,
                  skip: set[tuple[str, int]] = frozenset()
                  ) -> tuple[list[int], dict[str, list[int]], dict[str, float]]:
    """(reset steps, breaks {feedback input: steps}, largest break |diff| per input) of a recording;
    the values in ``skip`` (not recorded) are no evidence (``leapp_lab.model.episodes.read_resets``)."""
    return read_resets(arrays, feedback, steps, skip)


def closed_loop(graph: GraphReport, arrays: dict, pipe: ExportedPipeline, steps: int | None,
                rtol: float, atol: float, progress: Progress | None = None
                ) -> tuple[ReplayRun, dict[str, np.ndarray]]:
    """Tier (a): the captured trajectory, recorded observations in, exported state carried."""
    captured = captured_steps(graph)
    n = captured if steps is None else max(0, min(int(steps), captured))
    run = ReplayRun(tier="a", steps=n)
    saved: dict[str, np.ndarray] = {}
    if n == 0:
        run.status, run.reason = "unavailable", "no captured step to replay"
        return run, saved
    placeholder = unrecorded_pairs(graph, arrays)   # never a reset, never a reference
    resets, breaks, gaps = detect_resets(arrays, pipe.feedback, n, placeholder)
    run.resets, run.breaks = resets, breaks
    totals = ElementTotals(graph)
    pipe.reset()
    for k in range(n):
        report_progress(progress, f"replay: captured step {k + 1}/{n}", k, n)
        if k in resets:
            pipe.reset()
        inputs = {}
        for key in pipe.inputs:
            v = None if (key, k) in placeholder else arrays.get(f"{key}/{k}/input")
            if v is None:
                raise Unavailable(f"the run holds no recorded value of the pipeline input {key!r} at "
                                  f"step {k}")
            inputs[key] = v
        out = pipe.step(inputs)
        for o in pipe.outputs:
            if o in out:
                saved[f"a/{o}/{k}/exported"] = out[o]
            if (o, k) in placeholder:
                run.rows.append(ReplayRow(k, o, reset=k in resets, note=NOT_RECORDED))
                continue
            ref = arrays.get(f"{o}/{k}/recorded")
            run.rows.append(_row(k, o, out.get(o), ref, rtol, atol, k in resets,
                                 semantics=graph.semantics_of(o)))
            totals.add(o, out.get(o), ref)
    _not_comparable(run)
    summarize(run, pipe.outputs, atol, bool(pipe.feedback))
    totals.fill(run)
    _explain_closed_loop(graph, arrays, pipe, run, gaps)
    return run, saved


def _explain_closed_loop(graph: GraphReport, arrays: dict, pipe: ExportedPipeline, run: ReplayRun,
                         gaps: dict[str, float]) -> None:
    if not pipe.feedback:
        run.notes.append("the graph has no feedback: each step is independent, so the closed loop "
                         "checks the runtime's wiring but cannot accumulate error")
    if run.not_comparable:
        listed = "; ".join(f"{o} at step{'s' if len(ks) > 1 else ''} {', '.join(map(str, ks))}"
                           for o, ks in run.not_comparable.items())
        run.notes.append(
            f"not comparable (no real recorded value): {listed}. LEAPP did not really record those "
            f"values (the unfilled-cache zero placeholders, or no recording at all), so they are "
            f"neither a reference nor an episode reset; the exported pipeline carried its own state "
            f"through them")
    src_of = {dst: src for src, dst in pipe.feedback}
    for dst, ks in run.breaks.items():
        run.notes.append(
            f"at step(s) {', '.join(map(str, ks))} the Python loop fed the feedback input {dst!r} a "
            f"value other than the output {src_of.get(dst)!r} of the step before (max |diff| "
            f"{fmt(gaps.get(dst, 0.0))}): it changes that value outside the traced graph. The "
            f"exported pipeline feeds {src_of.get(dst)!r} "
            f"back unchanged, so it cannot follow; move that computation inside a node (or declare "
            f"it with annotate.state_tensors/update_state)")
    fd = run.first_divergent
    if fd is None:
        return
    checks = [c for c in graph.checks if c.passed is not None]
    if checks and all(c.passed for c in checks):
        run.notes.append(
            f"every per-sample validation passed, yet the closed loop diverges from step {fd['step']} "
            f"({fd['output']}): validation feeds each sample its recorded state, the replay feeds "
            f"back the exported one")
    for k in run.resets:
        if fd["step"] < k:
            break
        diffs = []
        for src, dst in pipe.feedback:
            init, now = arrays.get(f"{dst}/0/input"), arrays.get(f"{dst}/{k}/input")
            if init is not None and now is not None and np.shape(init) == np.shape(now):
                gap = float(np.max(np.abs(np.asarray(init, np.float64) - np.asarray(now, np.float64))))
                if gap > 0:
                    diffs.append(f"{dst} by {fmt(gap)}")
        bad_here = any(r.step == k and r.passed is False for r in run.rows)
        if diffs and bad_here:
            run.notes.append(
                f"at the episode reset at step {k} the exported pipeline restarts from LEAPP's saved "
                f"initial values (the state at the first traced pass), while the Python pipeline "
                f"reset to other values ({'; '.join(diffs)}): the trace started mid-episode (warm "
                f"start). Start tracing at an episode start so the saved initial values are the "
                f"reset state")


def fresh_run(graph: GraphReport, arrays: dict, pipe: ExportedPipeline, step_fn: Callable,
              steps: int | None, resets: Any, seed: int, rtol: float, atol: float,
              progress: Progress | None = None) -> tuple[ReplayRun, dict[str, np.ndarray]]:
    """Tier (b): fresh observations and episode resets, exported vs the original ``step_fn``."""
    n = DEFAULT_FRESH_STEPS if steps is None else int(steps)
    if n < 1:
        raise ValueError(f"replay: steps must be at least 1, got {steps}")
    rs = sorted({int(r) for r in resets}) if resets is not None else ([n // 2] if n >= 2 else [])
    bad = [r for r in rs if not 0 < r < n]
    if bad:
        raise ValueError(f"replay: resets {bad} are not steps of the fresh sequence 1..{n - 1} "
                         f"(step 0 always starts an episode)")
    run = ReplayRun(tier="b", steps=n, seed=int(seed), resets=rs)
    names = stepfns.output_names(graph)
    drawer = fresh_inputs.Drawer(fresh_inputs.plan(arrays, pipe.inputs), seed)
    saved: dict[str, np.ndarray] = {}
    totals = ElementTotals(graph)
    pipe.reset()
    for i in range(n):
        report_progress(progress, f"replay: fresh step {i + 1}/{n}", i, n)
        start = i == 0 or i in rs
        if start and i:
            pipe.reset()
        x = drawer.draw(i)
        out = pipe.step(x)
        orig = stepfns.call(step_fn, x, start, names)
        for key, v in x.items():
            saved[f"b/{key}/{i}/input"] = v.numpy().copy()
        for o in pipe.outputs:
            if o not in orig:
                continue
            run.rows.append(_row(i, o, out.get(o), orig[o], rtol, atol, start and i > 0,
                                 semantics=graph.semantics_of(o)))
            totals.add(o, out.get(o), orig[o])
            saved[f"b/{o}/{i}/original"] = orig[o]
            if o in out:
                saved[f"b/{o}/{i}/exported"] = out[o]
    _not_comparable(run)
    compared = [o for o in pipe.outputs if any(r.output == o for r in run.rows)]
    if not compared:
        raise ValueError("step_fn returned none of the graph's node outputs; return "
                         f"{{'node/port': tensor}} for some of {pipe.outputs}")
    summarize(run, compared, atol, bool(pipe.feedback))
    totals.fill(run)
    fd = run.first_divergent
    if fd is not None and not pipe.feedback:
        run.notes.append(f"the graph has no feedback, so each step stands alone: step {fd['step']} "
                         f"diverges on its own fresh observation (see the fresh-input parity)")
    elif fd is not None and fd["step"] == 0:
        run.notes.append(
            "the first step already differs: the exported pipeline starts from LEAPP's saved initial "
            "values (the state at the first traced pass), step_fn(reset=True) from its own initial "
            "state. If the trace did not start at an episode start (warm start) they differ")
    elif fd is not None and fd["step"] in rs:
        run.notes.append(f"the divergence starts at the episode reset at step {fd['step']}: the two "
                         f"sides do not reset to the same state")
    if fd is not None and pipe.feedback and any(o.grows for o in run.outputs):
        grow = [o.output for o in run.outputs if o.grows]
        run.notes.append(f"the error grows along the sequence on {', '.join(grow)}: the exported "
                         f"state carries it forward")
    return run, saved


def run_replay(graph: GraphReport, arrays: dict, *, steps: int | None = None, step_fn: Callable | None = None,
               resets: Any = None, seed: int = 0, rtol: float | None = None, atol: float | None = None,
               progress: Progress | None = None) -> tuple[ReplayResult, dict[str, np.ndarray]]:
    """The replay section of one graph (never raises: a failure is the section's status)."""
    rtol, atol = tolerances(graph, rtol, atol)
    res = ReplayResult(status="ok", rtol=rtol, atol=atol)
    saved: dict[str, np.ndarray] = {}
    if step_fn is not None:
        try:
            stepfns.check_callable(step_fn)
        except TypeError as exc:
            res.status, res.reason = "failed", str(exc)
            return res, saved
    try:
        pipe = ExportedPipeline(graph)
    except Unavailable as exc:
        res.status, res.tier, res.reason = "unavailable", "c", str(exc)
        return res, saved
    except Exception as exc:
        res.status, res.reason = "failed", failed_reason("loading the exported pipeline", exc)
        return res, saved
    try:
        res.closed_loop, a = closed_loop(graph, arrays, pipe, steps, rtol, atol, progress)
        saved.update(a)
    except Unavailable as exc:
        res.closed_loop = ReplayRun(tier="a", status="unavailable", reason=str(exc))
    except Exception as exc:
        res.closed_loop = ReplayRun(tier="a", status="failed", reason=failed_reason("the closed-loop replay", exc))
    res.tier = "a"
    if step_fn is None:
        res.notes.append("tier (b) not run: it needs the original pipeline as step_fn "
                         "(leapp_lab.replay(..., step_fn=f), --step-fn)")
    else:
        try:
            res.fresh, b = fresh_run(graph, arrays, pipe, step_fn, steps, resets, seed, rtol, atol, progress)
            saved.update(b)
            res.tier = "b"
        except Exception as exc:
            res.fresh = ReplayRun(tier="b", status="failed", reason=failed_reason("the fresh replay (step_fn)", exc))
    statuses = [r.status for r in res.runs()]
    if "diverged" in statuses:
        res.status = "diverged"
    elif "failed" in statuses:
        res.status = "failed"
        res.reason = next(r.reason for r in res.runs() if r.status == "failed")
    elif statuses and all(s == "unavailable" for s in statuses):
        res.status, res.tier = "unavailable", "c"
        res.reason = res.runs()[0].reason
    return res, saved

"""What a captured trajectory says about itself: which values LEAPP really recorded, where the
Python loop started an episode, and whether the trace began mid-episode (``warm-start``).

LEAPP caches consecutive passes of every node, so the samples of a stateful graph are a trajectory:
sample ``k`` of a feedback input is normally the feedback output of sample ``k - 1``. Three readings
of that trajectory are shared by the hazards (docs/hazards.md) and the closed-loop replay
(docs/deep-checks.md), so both judge from the same evidence:

- :func:`unrecorded`: the values that are not evidence: LEAPP's unfilled zero placeholders
  (``SampleCheck.placeholder``, set by the ``unfilled-cache`` rule) and, on those samples, the
  node's state / feedback inputs that are all-zero there (LEAPP leaves a module-tracked state
  unrecorded on both sides); a reset or a reference must never be read from them;
- :func:`read_resets`: the steps where the loop started an episode (every cut feedback input back
  at its initial value or zeros), and the *breaks* (a feedback input changed any other way);
- and the ``warm-start`` hazard (``leapp_lab.trace.hazards``) reads them: a trace whose saved
  initial values are not the reset state.
"""
from __future__ import annotations

import numpy as np

from leapp_lab.model.trace import GraphReport


def _all_zero(a) -> bool:
    a = np.asarray(a)
    return a.size > 0 and not np.any(a)


def _equal(a, b) -> bool:
    return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b, equal_nan=np.asarray(a).dtype.kind in "fc"))


def unrecorded(graph: GraphReport, arrays: dict) -> dict[str, list[int]]:
    """``{"node/port": [sample, ...]}``: the cached values LEAPP never really recorded.

    Output ports: the samples the ``unfilled-cache`` rule marked (``SampleCheck.placeholder``).
    Input ports, on those samples of the node: the state / feedback inputs that are all-zero (the
    placeholder's other side), and every input of a sample beyond what the node recorded. Graph
    inputs and data inputs a real pass fed stay evidence."""
    found: dict[str, set[int]] = {}
    for node in graph.nodes:
        marked = sorted({c.sample for c in graph.checks if c.node == node.name and c.placeholder})
        for c in graph.checks:
            if c.node == node.name and c.placeholder:
                found.setdefault(f"{node.name}/{c.port}", set()).add(c.sample)
        for p in node.inputs():
            key = f"{node.name}/{p.name}"
            for k in marked:
                v = arrays.get(f"{key}/{k}/input")
                beyond = node.samples > 0 and k >= node.samples
                if beyond or ((p.role == "state" or p.feedback) and v is not None and _all_zero(v)):
                    found.setdefault(key, set()).add(k)
    return {key: sorted(ks) for key, ks in found.items()}


def unrecorded_pairs(graph: GraphReport, arrays: dict) -> set[tuple[str, int]]:
    """:func:`unrecorded` as a set of ``("node/port", sample)``."""
    return {(key, k) for key, ks in unrecorded(graph, arrays).items() for k in ks}


def feedback_pairs(graph: GraphReport) -> list[tuple[str, str]]:
    """``[(source "node/port", fed input "node/port")]`` of the graph's feedback edges."""
    return [(p.source, f"{n.name}/{p.name}") for n in graph.nodes for p in n.inputs()
            if p.feedback and p.source]


def captured_steps(graph: GraphReport) -> int:
    """Consecutive passes every node holds (the trajectory's length)."""
    counts = [n.samples for n in graph.nodes if n.samples]
    return min(counts) if counts else 0


def read_resets(arrays: dict, feedback: list[tuple[str, str]], steps: int,
                skip: set[tuple[str, int]] = frozenset()
                ) -> tuple[list[int], dict[str, list[int]], dict[str, float]]:
    """(reset steps, breaks {feedback input: steps}, largest break |diff| per input) of a recording.

    Step ``k`` starts an episode when some feedback input was *not* fed the previous step's output
    and every feedback input holds its initial value (sample 0) or zeros; any other cut is a break.
    A feedback input or source that LEAPP did not record there (``skip``) is no evidence either way:
    it neither cuts nor holds a reset value, so a step where nothing was recorded is neither."""
    resets, breaks, gaps = [], {}, {}
    for k in range(1, steps):
        broken = {}
        at_start = True
        for src, dst in feedback:
            now = arrays.get(f"{dst}/{k}/input")
            if now is None or (dst, k) in skip:
                continue
            prev = None if (src, k - 1) in skip else arrays.get(f"{src}/{k - 1}/recorded")
            init = arrays.get(f"{dst}/0/input")
            if prev is not None and not _equal(now, prev):
                broken[dst] = float(np.max(np.abs(np.asarray(now, np.float64) - np.asarray(prev, np.float64)))) \
                    if np.shape(now) == np.shape(prev) else float("inf")
            if not ((init is not None and _equal(now, init)) or _all_zero(now)):
                at_start = False
        if not broken:
            continue
        if at_start:
            resets.append(k)
        else:
            for dst, gap in broken.items():
                breaks.setdefault(dst, []).append(k)
                gaps[dst] = max(gaps.get(dst, 0.0), gap)
    return resets, breaks, gaps

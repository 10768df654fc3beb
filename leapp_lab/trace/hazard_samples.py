"""Hazard rules that read the samples: recorded vs FX replay vs exported per node / output port /
sample (``single-sample``, ``identical-samples``, ``unfilled-cache``, ``mutated-after-trace``,
``frozen-constant``, ``export-mismatch``, ``tolerance-only``, ``constant-output``) and the trajectory
(``warm-start``). ``trace.hazards`` (its module doc says what the three values are) runs them after
the log rules (``trace.hazard_log``); docs/hazards.md documents each rule.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from leapp_lab.model.episodes import captured_steps, feedback_pairs, read_resets, unrecorded_pairs
from leapp_lab.model.numfmt import fmt
from leapp_lab.model.trace import GraphReport, Hazard, NodeReport, SampleCheck
from leapp_lab.numerics.checks import allclose, min_atol

# "tolerance-only": every sample would pass with an atol at most this many times the given one.
TOLERANCE_FACTOR = 10.0


def _is_all_zero(a) -> bool:
    a = np.asarray(a)
    return a.size > 0 and not np.any(a)


def _fmt_samples(samples: Iterable[int]) -> str:
    s = sorted(samples)
    if not s:
        return "no sample"
    return ("sample " if len(s) == 1 else "samples ") + ", ".join(str(x) for x in s)


def _g(x: float | None) -> str:
    # the one number format (model/numfmt.py; "–" when missing) for what was measured; a tolerance
    # the message suggests is written as the Python literal a user pastes (atol=5e-08)
    return fmt(x)


# -- per-port view of the checks --------------------------------------------------------------------

@dataclass
class _Port:
    """Everything the sample rules need about one node / output port."""

    node: str
    port: str
    checks: dict[int, SampleCheck] = field(default_factory=dict)
    recorded: dict[int, np.ndarray] = field(default_factory=dict)
    exported: dict[int, np.ndarray] = field(default_factory=dict)
    fx: dict[int, np.ndarray] = field(default_factory=dict)

    def fx_agrees(self, k: int) -> bool | None:
        """FX replay ≈ recorded at sample k (None: unknown)."""
        c = self.checks[k]
        if k in self.fx and k in self.recorded:
            return allclose(self.fx[k], self.recorded[k], c.rtol, c.atol)
        return _close_from_stats(c.fx_stats.get("max") if c.fx_stats else None, c.recorded_range, c)

    def export_agrees_fx(self, k: int) -> bool | None:
        """exported ≈ FX replay at sample k (None: unknown)."""
        c = self.checks[k]
        if k in self.exported and k in self.fx:
            return allclose(self.exported[k], self.fx[k], c.rtol, c.atol)
        return _close_from_stats(c.export_vs_fx_max, c.fx_range, c)

    def min_atol(self, k: int) -> float | None:
        c = self.checks[k]
        if k in self.exported and k in self.recorded:
            return min_atol(self.exported[k], self.recorded[k], c.rtol)
        if c.nonfinite_exported or c.nonfinite_recorded:
            return None   # LEAPP fails non-finite values whatever the atol
        return c.min_atol


def _close_from_stats(max_abs: float | None, ref_range, c: SampleCheck) -> bool | None:
    """Fallback without arrays: a bound from the max |diff| and the reference's value range."""
    if max_abs is None:
        return None
    if max_abs <= c.atol:
        return True
    mag = max([abs(v) for v in (ref_range or []) if v is not None] or [0.0])
    return max_abs <= c.atol + c.rtol * mag


def ports_of(graph: GraphReport, arrays: dict) -> dict[tuple[str, str], _Port]:
    ports: dict[tuple[str, str], _Port] = {}
    for c in graph.checks:
        p = ports.setdefault((c.node, c.port), _Port(c.node, c.port))
        p.checks[c.sample] = c
        for kind, store in (("recorded", p.recorded), ("exported", p.exported), ("fx", p.fx)):
            a = arrays.get(f"{c.node}/{c.port}/{c.sample}/{kind}")
            if a is not None:
                store[c.sample] = a
    return ports


def _inputs_of(node: NodeReport, arrays: dict, samples: Iterable[int]) -> dict[int, dict[str, np.ndarray]]:
    """Recorded input arrays per sample (only samples where every input port is stored)."""
    names = [p.name for p in node.inputs()]
    out: dict[int, dict[str, np.ndarray]] = {}
    if not names:
        return out
    for k in samples:
        vals = {n: arrays.get(f"{node.name}/{n}/{k}/input") for n in names}
        if all(v is not None for v in vals.values()):
            out[k] = vals
    return out


def _same_inputs(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return all(np.asarray(a[n]).shape == np.asarray(b[n]).shape
               and np.array_equal(a[n], b[n], equal_nan=np.asarray(a[n]).dtype.kind in "fc")
               for n in a)


def _input_groups(inputs: dict[int, dict[str, np.ndarray]]) -> list[list[int]]:
    """Samples grouped by exactly equal inputs, in sample order."""
    groups: list[list[int]] = []
    for k in sorted(inputs):
        for g in groups:
            if _same_inputs(inputs[g[0]], inputs[k]):
                g.append(k)
                break
        else:
            groups.append([k])
    return groups


# -- the sample rules -----------------------------------------------------------------------------

def placeholders(node: NodeReport, ports: list[_Port], arrays: dict) -> dict[str, list[int]]:
    """Per output port: samples whose recorded value is LEAPP's unfilled zero placeholder."""
    found: dict[str, list[int]] = {}
    roles = {p.name: p.role for p in node.outputs()}

    def zero_input(k: int) -> bool | None:
        vals = [arrays.get(f"{node.name}/{p.name}/{k}/input") for p in node.inputs()]
        vals = [v for v in vals if v is not None]
        return any(_is_all_zero(v) for v in vals) if vals else None

    for p in ports:
        for k, c in sorted(p.checks.items()):
            if k == 0:
                continue   # sample 0 is the trace itself: always really recorded
            never_written = node.samples > 0 and k >= node.samples
            if k in p.recorded and k in p.fx:
                zero_not_fx = _is_all_zero(p.recorded[k]) and not _is_all_zero(p.fx[k])
            else:   # no arrays: the stored value ranges say the same
                zero_not_fx = (c.recorded_range == [0.0, 0.0] and not c.nonfinite_recorded
                               and c.fx_range is not None and c.fx_range != [0.0, 0.0])
            # LEAPP leaves state unrecorded on both sides (input and next state), so a placeholder
            # output comes with an all-zero input; without that, an all-zero output that the FX
            # replay does not reproduce is a frozen value that happened to be zero, not a slot.
            if zero_not_fx and roles.get(p.port) != "state" and zero_input(k) is False:
                zero_not_fx = False
            if never_written or zero_not_fx:
                found.setdefault(p.port, []).append(k)
    return found


def unfilled_cache(graph: GraphReport, node: NodeReport, found: dict[str, list[int]],
                    arrays: dict) -> list[Hazard]:
    out = []
    all_samples = sorted({k for ks in found.values() for k in ks})
    zero_inputs = []
    for p in node.inputs():
        stored = [arrays[key] for key in (f"{node.name}/{p.name}/{k}/input" for k in all_samples)
                  if key in arrays]
        if stored and all(_is_all_zero(a) for a in stored):
            zero_inputs.append(p.name)
    zin = (f" The input(s) {', '.join(repr(z) for z in zero_inputs)} are all-zero there as well."
           if zero_inputs else "")
    for port, ks in found.items():
        out.append(Hazard(
            "unfilled-cache", node.name, port, ks,
            f"node {node.name!r} / {port!r}: LEAPP never recorded {_fmt_samples(ks)}; the cached "
            f"value is its zero placeholder (exactly all-zero, while the FX replay of the same "
            f"sample is not).{zin} This is what state tracked with annotate.module() looks like in "
            f"LEAPP 0.7.2 (re-entries do not record it). The verdicts of every port of "
            f"{node.name!r} on {_fmt_samples(all_samples)} are not evidence either way and are "
            f"ignored. Declare the state with annotate.state_tensors()/update_state() to have every "
            f"sample recorded, then trace again."))
    return out


def node_sample_hazards(node: NodeReport, ports: list[_Port], excluded: set[int],
                         arrays: dict) -> list[Hazard]:
    out = []
    if node.samples == 1:
        out.append(Hazard(
            "single-sample", node.name, None, [0],
            f"node {node.name!r} was recorded on a single sample: validation compared one pair of "
            f"tensors, which cannot characterise the error nor show a value frozen at the first "
            f"pass. Loop the annotated code over several different inputs (and set max_cached_io "
            f"to keep them)."))
    sample_ids = sorted({k for p in ports for k in p.checks} | set(range(node.samples)))
    real = [k for k in sample_ids if k not in excluded]
    inputs = _inputs_of(node, arrays, real)
    groups = _input_groups(inputs)
    dup = [g for g in groups if len(g) > 1]
    if dup:
        ks = sorted(k for g in dup for k in g)
        desc = "; ".join(f"{_fmt_samples(g[1:])} repeat{'s' if len(g) == 2 else ''} the inputs "
                         f"of sample {g[0]}" for g in dup)
        out.append(Hazard(
            "identical-samples", node.name, None, ks,
            f"node {node.name!r}: {_fmt_samples(ks)} have identical inputs ({desc} exactly). Repeated samples add no evidence: a value frozen "
            f"at the first pass passes on them. Feed different inputs on every pass (different "
            f"observations, state and commands, as in deployment)."))
    # constant-output: needs at least two samples whose inputs differ
    if len(groups) >= 2:
        varying = sorted(k for g in groups for k in g)
        # a declared static output is constant by contract (Isaac Lab's PD gains, action scales)
        declared = {q.name for q in node.outputs() if q.static}
        for p in ports:
            if p.port in declared:
                continue
            ks = [k for k in varying if k in p.recorded]
            if len(ks) < 2 or len(ks) != len(varying):
                continue
            first = p.recorded[ks[0]]
            if all(np.asarray(p.recorded[k]).shape == np.asarray(first).shape
                   and np.array_equal(p.recorded[k], first, equal_nan=np.asarray(first).dtype.kind in "fc")
                   for k in ks[1:]):
                out.append(Hazard(
                    "constant-output", node.name, p.port, ks,
                    f"node {node.name!r} / {p.port!r}: the recorded output is identical on "
                    f"{_fmt_samples(ks)} although their inputs differ. The output does not depend "
                    f"on what varies (lost tracing, a clamp/saturation that always hits, or a "
                    f"value computed outside the graph). If it is meant to be constant, declare it "
                    f"with output_tensors(..., static_outputs=...); otherwise find where the "
                    f"dependence on the inputs is lost."))
    return out


def port_hazards(p: _Port, excluded: set[int], unfilled: bool, suspects: str = "",
                 explained: bool = False) -> list[Hazard]:
    """The per-port rules. ``explained``: a node-level hazard (undeclared-state, a watched state
    change) already explains why this port's FX replay differs: no mutated-after-trace or
    frozen-constant of its own."""
    ks = [k for k in sorted(p.checks) if k not in excluded]
    if not ks:
        return []
    c0 = p.checks.get(0)
    out: list[Hazard] = []
    fails = [k for k in ks if p.checks[k].passed is False]
    where = f"node {p.node!r} / {p.port!r}"

    # mutated-after-trace: the trace no longer reproduces its own first pass
    mutated: list[int] = []
    if 0 in ks and not explained and p.fx_agrees(0) is False:
        mutated = [k for k in ks if p.fx_agrees(k) is False]
        out.append(Hazard(
            "mutated-after-trace", p.node, p.port, mutated,
            f"{where}: the FX replay of the traced graph already differs from the recorded output "
            f"on sample 0 (max |fx - recorded| = {_g(c0.fx_stats.get('max') if c0 else None)}), and "
            f"on {_fmt_samples(mutated)} in all. The trace holds module state by reference "
            f"(buffers, parameters) and that state changed after it was traced, e.g. a running "
            f"normaliser that keeps updating, or an optimiser step. The export uses the state at "
            f"compile time. Freeze the state while tracing (update statistics outside the traced "
            f"passes, or only after compile_graph), or make it an explicit input / state "
            f"(annotate.state_tensors) if it must evolve."))

    # frozen-constant: sample 0 passes, later ones fail, and there the export equals the FX replay
    frozen: list[int] = []
    if c0 is not None and 0 in ks and c0.passed is True and not explained:
        frozen = [k for k in fails if k >= 1 and p.export_agrees_fx(k) is True
                  and p.fx_agrees(k) is False]
        if frozen:
            worst = max((p.checks[k].stats.get("max") or 0.0) for k in frozen)
            out.append(Hazard(
                "frozen-constant", p.node, p.port, frozen,
                f"{where}: sample 0 passes but {_fmt_samples(frozen)} fail (max |exported - "
                f"recorded| = {_g(worst)}), and there the exported model agrees with the FX replay "
                f"of the trace: the trace itself is wrong. A value that changes from pass to pass "
                f"was baked into the graph as the constant it had on the first pass (a .item(), "
                f"float(), a Python branch, a NumPy call, or an unannotated input). Keep it in "
                f"torch operations on the traced tensors, or declare it with "
                f"annotate.input_tensors() for this node.{suspects}"))

    # tolerance-only: every sample would pass with atol <= 10x the given one
    tol_only = False
    if fails and not unfilled and not frozen and not explained:
        need = [p.min_atol(k) for k in ks]
        if all(m is not None and m <= TOLERANCE_FACTOR * p.checks[k].atol for m, k in zip(need, ks)):
            tol_only = True
            c = p.checks[fails[0]]
            out.append(Hazard(
                "tolerance-only", p.node, p.port, fails,
                f"{where}: fails on {_fmt_samples(fails)} at rtol={c.rtol:g}, atol={c.atol:g}, but "
                f"every sample passes with atol={max(need):.3g} (at most {TOLERANCE_FACTOR:g}x the "
                f"given atol): numeric noise of the export backend, not a bug. Validate with a "
                f"tolerance that fits the values (e.g. atol={max(need):.3g}), or keep the tight one "
                f"if the deployment really needs it and change the exporter/precision."))

    # export-mismatch: the trace reproduces Python, the exported model does not
    if not tol_only:
        mism = [k for k in fails if p.fx_agrees(k) is True and p.export_agrees_fx(k) is False]
        if mism:
            worst = max((p.checks[k].stats.get("max") or 0.0) for k in mism)
            out.append(Hazard(
                "export-mismatch", p.node, p.port, mism,
                f"{where}: on {_fmt_samples(mism)} the FX replay of the trace matches the recorded "
                f"Python output but the exported model does not (max |exported - recorded| = "
                f"{_g(worst)}): the trace is right, the export backend computes something else. "
                f"Find the op in the FX graph whose exported lowering differs (integer division, "
                f"rounding, casts, ...), try the other exporter (onnx <-> onnx-torchscript, jit, "
                f"pt2) or patch the op with leapp.FunctionPatch."))
    return out


def warm_start(graph: GraphReport, arrays: dict) -> list[Hazard]:
    """``warm-start``: the recording holds an episode reset (:func:`read_resets`) at which a
    feedback input went back to zeros while the value LEAPP saved as its initial value (sample 0)
    is not zero: the trace began mid-episode, so the shipped initial values are not the reset state
    and a deployed runtime starts every episode from the wrong state. Without a reset in the
    recording there is no evidence (the replay's tier b with a step_fn says it)."""
    fb = feedback_pairs(graph)
    if not fb:
        return []
    skip = unrecorded_pairs(graph, arrays)
    resets, _, _ = read_resets(arrays, fb, captured_steps(graph), skip)
    out = []
    for src, dst in fb:
        init = arrays.get(f"{dst}/0/input")
        if init is None or _is_all_zero(init) or not np.all(np.isfinite(np.asarray(init, np.float64))):
            continue
        node, port = dst.split("/", 1)
        big = float(np.max(np.abs(np.asarray(init, np.float64))))
        if not resets:
            if not _reset_like(init):
                out.append(_warm_no_reset(node, port, src, big))
            continue
        ks = [k for k in resets if (dst, k) not in skip and arrays.get(f"{dst}/{k}/input") is not None
              and _is_all_zero(arrays[f"{dst}/{k}/input"])]
        if not ks:
            continue
        when = ("step " if len(ks) == 1 else "steps ") + ", ".join(map(str, ks))
        out.append(Hazard(
            "warm-start", node, port, ks,
            f"node {node!r} / {port!r}: the trace started mid-episode (warm start). At {when} the "
            f"Python loop started an episode and reset {port!r} to zeros, but LEAPP saved its value "
            f"at the first traced pass (max |value| {fmt(big)}, fed back from {src!r}) as the "
            f"initial value: a deployed runtime resets to that, so every episode starts from another "
            f"state than the Python policy's. Start tracing at an episode start (reset the policy "
            f"before the first traced pass), then trace again."))
    return out


def _reset_like(a) -> bool:
    """A value a reset gives: zeros, one constant, or one row broadcast along the first axis (the
    backfill of a history buffer's first push, as Isaac Lab's CircularBuffer does)."""
    a = np.asarray(a, np.float64)
    if a.size == 0 or np.all(a == a.flat[0]):
        return True
    return a.ndim >= 1 and a.shape[0] > 1 and bool(np.all(a == a[:1]))


def _warm_no_reset(node: str, port: str, src: str, big: float) -> Hazard:
    return Hazard(
        "warm-start", node, port, [0],
        f"node {node!r} / {port!r}: the trace most likely started mid-episode (warm start): the "
        f"value LEAPP saved as its initial value (sample 0, max |value| {fmt(big)}, fed back from "
        f"{src!r}) is not a reset state (not zeros, one constant or a broadcast row), and the "
        f"recording holds no episode reset to compare with. A deployed runtime starts every episode "
        f"from this value, the Python policy from its reset state (if this value is the intended "
        f"initial state, nothing is wrong: the recording alone cannot tell). Reset the policy (its state and "
        f"previous action) before the first traced pass, then trace again.")

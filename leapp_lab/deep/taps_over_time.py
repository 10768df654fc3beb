"""Taps over time (docs/deep-checks.md, "Taps over time"): a node's taps compared at every step of
an engine replay.

The engine pipeline is driven by the *untapped* engine (what ships: taps must not change it); at
each step three more runs give the node's tap values:

- the *tapped* engine on the inputs the engine pipeline gave the node (its own state): the tap
  values of the closed loop;
- the tapped engine on the inputs the fp32 pipeline gave the node (the reference state): the
  *local* tap values, what this step adds (teacher forcing, as for the outputs);
- the prepared fp32 ONNX (the node with its taps as outputs) on the fp32 inputs: the reference.

Per (step, tap): nrmse and max |diff| of the closed loop and nrmse of the local values against the
reference, and the |diff| histogram on the global log bins (``numerics.metrics.diff_stats``, the
verify metrics). The first (step, tap), in step then model order, whose nrmse exceeds the rule is
marked, for the closed loop and for the local values.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from leapp_lab.model.replay import TapsOverTime
from leapp_lab.numerics.metrics import diff_stats


class TapProbe:
    """The runners that give one node's tap values at every step (module doc).

    ``tapped``: the tapped engine runner; ``reference``: the fp32 runner of the prepared ONNX; both
    duck-typed like ``engines.base.Runner`` and activated. ``taps``: the tap names in model order
    (outputs of the reference). ``bound``: the output of the tapped engine that carries each tap
    (compile's ``bound_to``: int8 exposes a dequantized copy, a tap on a model output is that
    output); a tap not in it is read under its own name. ``input_names``: the node's inputs in the
    pipeline's order."""

    def __init__(self, node: str, tapped: Any, reference: Any, taps: list[str], input_names: list[str],
                 tier: str, max_nrmse: float, note: str | None = None,
                 bound: dict[str, str] | None = None) -> None:
        self.node, self.tapped, self.reference, self.taps = node, tapped, reference, list(taps)
        self.bound = {t: (bound or {}).get(t) or t for t in self.taps}
        self.input_names = list(input_names)
        self.result = TapsOverTime(node=node, tier=tier, taps=list(taps), max_nrmse=max_nrmse, note=note)

    def _run(self, runner: Any, inputs: list[np.ndarray], names: dict[str, str]) -> dict[str, np.ndarray]:
        feed = {n: v for n, v in zip(self.input_names, inputs) if n in runner.input_names}
        got = runner.run(feed, list(dict.fromkeys(names.values())))
        return {t: got[out] for t, out in names.items()}

    def step(self, k: int, own_inputs: list[np.ndarray], fp32_inputs: list[np.ndarray]) -> None:
        ref = self._run(self.reference, fp32_inputs, {t: t for t in self.taps})
        closed = self._run(self.tapped, own_inputs, self.bound)
        local = self._run(self.tapped, fp32_inputs, self.bound)
        r = self.result
        row_n, row_l, row_m, row_h = [], [], [], []
        for t in self.taps:
            a, b = np.asarray(closed[t]), np.asarray(ref[t])
            if a.shape != b.shape:
                row_n.append(None), row_l.append(None), row_m.append(None), row_h.append(None)
                continue
            m = diff_stats(a, b)
            row_n.append(m.nrmse), row_m.append(m.max_abs), row_h.append(m.hist)
            loc = np.asarray(local[t])
            row_l.append(diff_stats(loc, b).nrmse if loc.shape == b.shape else None)
        r.steps.append(int(k))
        r.nrmse.append(row_n)
        r.local_nrmse.append(row_l)
        r.max_abs.append(row_m)
        r.hists.append(row_h)

    def finish(self) -> TapsOverTime:
        r = self.result
        r.first = _first(r, r.nrmse)
        r.first_local = _first(r, r.local_nrmse)
        return r


def _first(r: TapsOverTime, grid: list[list[float | None]]) -> dict[str, Any] | None:
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            if v is not None and v > r.max_nrmse:
                return {"step": r.steps[i], "tap": r.taps[j]}
    return None

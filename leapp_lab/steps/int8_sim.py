"""The engine against its own int8 simulation (``verify --expected int8``).

The simulation is the reference model rounded onto the engine's grids (``engines.ort_fakequant``,
run by ``steps.expected_int8.Int8Job``). Compared with the *reference*, both the engine and the
simulation carry the same int8 rounding, which is large and even on a transformer, so a fault of a
few percent hides under it (the excess ratio barely moves). Compared with *each other*, the
rounding cancels: what is left is what the engine computes differently from its own quantization.

Per row, over every sample, normalised by the reference's scale (so that rows compare):

* ``sim_nrmse`` = sqrt(sum (engine - simulation)^2) / sqrt(sum reference^2), both run from the
  model inputs (the engine's sample outputs, the simulation's cumulative chain);
* ``sim_local_nrmse``: the same with both fed the reference at the row's upstream cuts
  (``--local``'s teacher-forced engine, the simulation's local chain).

Sums in float64 from the arrays as the engine and onnxruntime returned them.
"""
from __future__ import annotations

import numpy as np


class SimSums:
    """Running sums of (engine - simulation)^2 and reference^2 per row, cumulative and local."""

    def __init__(self):
        self.d2: dict[tuple[str, str], float] = {}
        self.r2: dict[tuple[str, str], float] = {}
        self.n: dict[tuple[str, str], int] = {}
        self.bad: dict[tuple[str, str], str] = {}

    def add(self, chain: str, name: str, engine: np.ndarray, sim: np.ndarray, ref: np.ndarray) -> None:
        key = (chain, name)
        if key in self.bad:
            return
        if engine.shape != sim.shape or engine.shape != ref.shape:
            self.bad[key] = (f"the engine's value has shape {tuple(engine.shape)}, the simulation's "
                             f"{tuple(sim.shape)}")
            return
        e = np.asarray(engine, np.float64).ravel()
        d = e - np.asarray(sim, np.float64).ravel()
        r = np.asarray(ref, np.float64).ravel()
        if not np.isfinite(d).all():
            # a value the engine or the simulation makes non-finite where the other does not is a
            # departure no finite distance measures; both non-finite at the same place: left out
            s = np.asarray(sim, np.float64).ravel()
            if (np.isfinite(e) != np.isfinite(s)).any():
                self.d2[key] = float("inf")
            both = np.isfinite(e) & np.isfinite(s)
            d, r = d[both], r[both]
        # einsum, not np.dot: the BLAS dot starts its thread pool per call (56 ms a row here on a
        # loaded 2-core machine against 0.05 ms)
        self.d2[key] = self.d2.get(key, 0.0) + float(np.einsum("i,i->", d, d))
        r = r[np.isfinite(r)] if not np.isfinite(r).all() else r
        self.r2[key] = self.r2.get(key, 0.0) + float(np.einsum("i,i->", r, r))
        self.n[key] = self.n.get(key, 0) + 1

    def value(self, chain: str, name: str, samples: int) -> float | None:
        """The row's normalised distance, or None unless every sample was added."""
        key = (chain, name)
        if key in self.bad or self.n.get(key, 0) != samples or samples == 0:
            return None
        d2, r2 = self.d2[key], self.r2[key]
        if d2 == 0.0:
            return 0.0
        return float("inf") if r2 == 0.0 else float(np.sqrt(d2) / np.sqrt(r2))

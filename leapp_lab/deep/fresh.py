"""Fresh inputs drawn like the captured ones (the integration guide's recipe, per graph input).

For a floating input with recorded samples ``x_0..x_{n-1}`` (every sample and element together):
``mean`` and ``std`` (1 when zero or not finite); fresh input ``i`` is
``mean + std · (randn(shape) · SCALES[i % 3] + SHIFT)``. Integer inputs are drawn uniformly between
the recorded min and max, bool inputs with the recorded fraction of True. One seeded
``torch.Generator`` draws every input of every step in order, so a seed gives the same inputs.
"""
from __future__ import annotations

import numpy as np

from leapp_lab.model.parity import FreshInput

SCALES = (0.7, 1.5, 3.0)      # the guide's recipe: torch.randn_like(x) * scale - 0.4
SHIFT = -0.4
RULE = "mean + std * (randn * scale + shift), scale = SCALES[i % 3]"


def _recorded(arrays: dict, key: str) -> list[np.ndarray]:
    out, k = [], 0
    while f"{key}/{k}/input" in arrays:
        out.append(np.asarray(arrays[f"{key}/{k}/input"]))
        k += 1
    return out


def plan(arrays: dict, inputs: list[str]) -> list[FreshInput]:
    """How each pipeline input ``node/port`` will be drawn, from its recorded samples."""
    out = []
    for key in inputs:
        xs = _recorded(arrays, key)
        if not xs:
            raise ValueError(f"no recorded sample of the pipeline input {key!r} in the run's arrays")
        x0 = xs[0]
        allv = np.concatenate([np.asarray(x, dtype=np.float64).reshape(-1) for x in xs])
        allv = allv[np.isfinite(allv)]
        fi = FreshInput(name=key, dtype=str(x0.dtype), shape=[int(s) for s in x0.shape])
        if x0.dtype.kind == "f":
            mean = float(allv.mean()) if allv.size else 0.0
            std = float(allv.std()) if allv.size else 1.0
            fi.mean, fi.std = mean, (std if std > 0 and np.isfinite(std) else 1.0)
            fi.rule = RULE
        elif x0.dtype.kind == "b":
            fi.mean = float(allv.mean()) if allv.size else 0.5
            fi.rule = "rand < mean (the recorded fraction of True)"
        else:
            fi.low = float(allv.min()) if allv.size else 0.0
            fi.high = float(allv.max()) if allv.size else 1.0
            fi.rule = "randint(low, high + 1)"
        out.append(fi)
    return out


class Drawer:
    """``draw(i)`` -> {input: torch tensor} for fresh step / sample ``i`` (call in order)."""

    def __init__(self, plans: list[FreshInput], seed: int) -> None:
        import torch
        self.plans = plans
        self.gen = torch.Generator().manual_seed(int(seed))

    def draw(self, i: int) -> dict:
        import torch
        out = {}
        for p in self.plans:
            shape = tuple(p.shape)
            dtype = getattr(torch, p.dtype) if hasattr(torch, p.dtype) else None
            if p.rule == RULE:
                z = torch.randn(shape, generator=self.gen, dtype=torch.float64)
                v = p.mean + p.std * (z * SCALES[i % len(SCALES)] + SHIFT)
                out[p.name] = v.to(dtype or torch.float32)
            elif p.dtype == "bool":
                out[p.name] = torch.rand(shape, generator=self.gen) < p.mean
            else:
                lo, hi = int(p.low), int(p.high)
                out[p.name] = torch.randint(lo, hi + 1, shape, generator=self.gen).to(dtype or torch.int64)
        return out

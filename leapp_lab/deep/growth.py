"""How an error evolves along a replay: a fitted growth per step and its trend.

``fit_growth(points, resets, atol)`` fits ``log(max |diff|) = a + b·step`` by least squares within
each episode (an episode reset restarts the state, so growth never spans one) and returns
``exp(b)``, the factor by which the error is multiplied per step (1.10 = +10 % a step), the slopes
of the episodes averaged by their number of intervals. Errors below 10 % of ``atol`` are floored
there first (10 % of atol): below it the error is rounding noise, and the log of noise would fit any growth.

The trend (docs/deep-checks.md, "Replay on an engine"):

- ``grows``: growth > 1.01 per step, and as fast (at least a third of it) over the later half;
- ``saturates``: growth > 1.01 per step over the whole, but over the later half of each episode it
  grows less than a third as fast (the error levels off: a bounded state, a saturating activation);
- ``damped``: growth < 0.99 per step (the state forgets the error);
- ``steady``: in between (or every error below the noise floor).

None (no fit) when no episode has 3 compared steps.
"""
from __future__ import annotations

import math
from leapp_lab.model.numfmt import fmt

GROW = 1.01
DAMP = 0.99
MIN_POINTS = 3
#: the later-half fit needs this many points per episode (else saturation is not judged)
MIN_HALF = 3


def _slope(xs: list[float], ys: list[float]) -> float | None:
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def _episodes(points: list[tuple[int, float]], resets: list[int]) -> list[list[tuple[int, float]]]:
    cuts = sorted(set(int(r) for r in resets))
    eps: dict[int, list[tuple[int, float]]] = {}
    for k, e in sorted(points):
        start = max([c for c in cuts if c <= k], default=0)
        eps.setdefault(start, []).append((k, e))
    return list(eps.values())


def _mean_slope(groups: list[list[tuple[int, float]]], floor: float) -> float | None:
    num = den = 0.0
    for g in groups:
        if len(g) < 2:
            continue
        b = _slope([float(k) for k, _ in g], [math.log(max(e, floor)) for _, e in g])
        if b is None:
            continue
        w = len(g) - 1
        num += b * w
        den += w
    return num / den if den else None


def fit_growth(points: list[tuple[int, float | None]], resets: list[int], atol: float
               ) -> tuple[float | None, str | None]:
    """(growth per step, trend) of ``[(step, max |diff|)]`` (module doc)."""
    pts = [(int(k), float(e)) for k, e in points if e is not None and math.isfinite(e)]
    floor = max(atol * 0.1, 1e-30)
    groups = [g for g in _episodes(pts, resets) if len(g) >= MIN_POINTS]
    b = _mean_slope(groups, floor)
    if b is None:
        return None, None
    growth = math.exp(b)
    if all(e <= floor for g in groups for _, e in g):
        return growth, "steady"
    if growth > GROW:
        late = [h for h in (g[len(g) // 2:] for g in groups) if len(h) >= MIN_HALF]
        bl = _mean_slope(late, floor) if late else None
        if bl is not None and math.exp(bl) <= 1 + (growth - 1) / 3:
            return growth, "saturates"
        return growth, "grows"
    if growth < DAMP:
        return growth, "damped"
    return growth, "steady"


def trend_text(growth: float | None, trend: str | None) -> str:
    """``grows ×1.12/step`` (what the text and notes print)."""
    if growth is None or trend is None:
        return "no fit (fewer than 3 steps per episode)"
    return f"{trend} (×{fmt(growth)}/step fitted)"

"""``repair(..., rank="excess")``: the candidates in the order of their local excess.

The baseline is verified with the engine's expectation (``verify --expected int8``, or fp16 for
``ort-fp16``): each row's ``local_excess``, how many times more error it adds than its precision's
rounding explains. A segment's excess is the largest over its taps (and the output it ends at).
Instead of a sweep build per segment and round, the segments are tried one at a time in that order,
largest excess first: each build keeps the chosen set plus the next candidate in fp32 and is kept
when it lowers the output error. It stops when the target is met, the candidates (or the budget)
run out. One build per candidate at most, against up to one per remaining segment per round for
``rank="output"``; which finds the better set is measured in docs/repair.md ("Ranking by excess").
"""
from __future__ import annotations

from typing import Any

from leapp_lab.model.repair import Trial


def segment_excess(segments: list[Any], excess: dict[str, float]) -> dict[str, float]:
    """segment name -> the largest local excess among its taps and the output it ends at."""
    out = {}
    for s in segments:
        vals = [excess[t] for t in [*s.taps, s.name] if excess.get(t) is not None]
        if vals:
            out[s.name] = max(vals)
    return out


def excess_rounds(sw: Any) -> tuple[list[str], Trial | None, float | None]:
    """The rounds of ``_Sweep`` ``sw`` by excess: (chosen segments, the trial of the last choice,
    its error)."""
    r = sw.r
    r.excess = segment_excess(r.segments, sw.excess)
    chosen: list[str] = []
    last: Trial | None = None
    current = r.baseline.error
    if not r.excess:
        r.warnings.append(f"--rank excess: the baseline's verify gave no local excess (no expected "
                          f"{'int8' if r.engine == 'ort-int8' else 'fp16'} error could be computed), so no "
                          "candidate was ranked; try --rank output")
        return chosen, last, current
    order = sorted(r.excess, key=lambda n: (-r.excess[n], sw.order[n]))
    for i, name in enumerate(order, 1):
        room = None if r.budget is None else r.budget - r.builds - 1     # one build stays for the proof
        if room is not None and room <= 0:
            r.warnings.append(f"budget of {r.budget} builds reached after {i - 1} of {len(order)} candidates")
            break
        sw.serial += 1
        ((_, res),) = sw._submit_all(f"candidate {i}", [(name, sw._args(
            chosen + [name], sw.sweep_dir / f"{sw.serial}.{r.engine}"))])
        t = sw._fill(Trial(round=i, segments=chosen + [name], added=name, rank=i), res)
        t.gain = None if t.error is None or current is None else current - t.error
        r.trials.append(t)
        if t.error is not None and (current is None or t.error < current):
            t.chosen = True
            chosen.append(name)
            current, last = t.error, t
            if current <= r.target_nrmse:
                break
    return chosen, last, current

"""Sequential replay: the exported pipeline run step after step with its own state fed back.

LEAPP's validation feeds every cached sample its *recorded* state, so an error within tolerance
never accumulates and a wrong feedback wiring, initial value or reset goes unseen. The replay runs
the exported graph through ``leapp.InferenceManager`` with the exported state / feedback outputs
carried forward, next to a reference from the same initial state:

- tier ``a`` (always): the captured trajectory; recorded observations in, compared with the
  recorded outputs of each step;
- tier ``b`` (with a ``step_fn``): fresh observations beyond the captured ones, and episode
  resets, compared with the original Python pipeline step by step;
- tier ``c``: the replay cannot run (``status: unavailable`` and the reason).

Values LEAPP never recorded (the ``unfilled-cache`` placeholders) are neither a reference nor an
episode reset: such steps are listed per output in ``ReplayRun.not_comparable``.

``replay.npz`` holds what the exported pipeline produced: ``a/<node>/<port>/<step>/exported``;
``b/<node>/<port>/<step>/exported|original`` and ``b/<node>/<port>/<step>/input``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .dc import Plain
from .semantics import ElementError
from .sections import SectionBase, register_section


@dataclass
class ReplayRow(Plain):
    """One step and one node output: |exported − reference| (reference: recorded or original)."""
    step: int
    output: str                        # "node/port" (port name after compile)
    max_abs: float | None = None
    nrmse: float | None = None         # sqrt(mean(d²)) / sqrt(mean(ref²)); None when ref is all zero
    ref_max: float | None = None       # max |reference|
    passed: bool | None = None         # LEAPP's rule: no NaN/Inf and allclose(exported, ref, rtol, atol)
    reset: bool = False                # both sides started an episode at this step
    note: str | None = None            # why there is no number (e.g. the reference lacks this output)
    # per element of the port (model/semantics.py), and the element with the largest |diff|
    elements: list[ElementError] = field(default_factory=list)
    worst_element: str | None = None
    # replay on an engine (ReplayResult.engines): the same step against the fp32 export, and the
    # error split (docs/deep-checks.md "Replay on an engine"): own = this step's engine error from
    # the reference (fp32) state; inherited = what the engine's own state and upstream carried
    fp32_max_abs: float | None = None
    fp32_nrmse: float | None = None
    own_error: float | None = None
    inherited_error: float | None = None


@dataclass
class ReplayOutput(Plain):
    """One node output over the whole sequence."""
    output: str
    steps: int = 0                     # steps with a number
    first: float | None = None         # max |diff| at the first compared step
    last: float | None = None          # ... at the last
    max: float | None = None
    max_step: int | None = None
    first_fail: int | None = None      # first step that fails LEAPP's rule
    growth: float | None = None        # last / first (None when first is 0)
    grows: bool = False                # last > 2 × first and last > atol (the error accumulates)
    first_fail_step: int | None = None  # = first_fail (the name replay-on-engine readers use)
    # the fitted growth of max |diff| per step (exp of the least-squares slope of log max |diff|
    # within each episode): 1.10 = +10 % a step; trend: grows | saturates | damped | steady
    growth_per_step: float | None = None
    trend: str | None = None
    # engine runs: the largest own / inherited error over the steps (ReplayRow.own_error, ...)
    own_error_max: float | None = None
    inherited_error_max: float | None = None
    fp32_max: float | None = None      # engine runs: max |engine − fp32 export| over the steps
    elements: list[ElementError] = field(default_factory=list)   # per element over the sequence
    worst_element: str | None = None


@dataclass
class ReplayRun(Plain):
    """One sequence (tier a or b)."""
    tier: str                          # "a" | "b"
    status: str = "ok"                 # ok | diverged | failed | unavailable
    reason: str | None = None
    steps: int = 0
    seed: int | None = None            # tier b: the seed of the fresh observations
    resets: list[int] = field(default_factory=list)   # steps that start an episode (besides step 0)
    breaks: dict[str, list[int]] = field(default_factory=dict)  # feedback input -> steps where the
                                       # Python loop fed back something else than the graph's output
    outputs: list[ReplayOutput] = field(default_factory=list)
    rows: list[ReplayRow] = field(default_factory=list)
    first_divergent: dict[str, Any] | None = None       # {"step", "output"}
    notes: list[str] = field(default_factory=list)
    # output -> steps with no number: no value LEAPP really recorded to compare with (its unfilled
    # placeholders); the loop carried its own state through them. Absent in older report.json: {}.
    not_comparable: dict[str, list[int]] = field(default_factory=dict)


@register_section
@dataclass
class ReplayResult(SectionBase, Plain):
    section: ClassVar[str] = "replay"
    status: str = "skipped"            # ok | diverged | failed | unavailable | skipped
    reason: str | None = None
    tier: str | None = None            # the highest tier that ran: "a", "b"; "c" when unavailable
    rtol: float | None = None
    atol: float | None = None
    closed_loop: ReplayRun | None = None   # tier a
    fresh: ReplayRun | None = None         # tier b
    notes: list[str] = field(default_factory=list)

    def runs(self) -> list[ReplayRun]:
        return [r for r in (self.closed_loop, self.fresh) if r is not None]

    def to_dataframe(self):
        """One row per tier / step / output."""
        import pandas as pd
        cols = ["tier", "step", "output", "max_abs", "nrmse", "ref_max", "passed", "reset", "worst_element", "note"]
        rows = [{"tier": run.tier, **{k: getattr(r, k) for k in cols[1:]}}
                for run in self.runs() for r in run.rows]
        return pd.DataFrame(rows, columns=cols)

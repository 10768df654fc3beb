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
from .hist import Hist
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
    max_abs: float | None = None       # the largest max |diff| over the steps (was max)
    max_step: int | None = None        # ... at this step
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
    fp32_max_abs: float | None = None  # engine runs: max |engine − fp32 export| over the steps (was fp32_max)
    elements: list[ElementError] = field(default_factory=list)   # per element over the sequence
    worst_element: str | None = None
    RENAMED: ClassVar[dict[str, str]] = {"max": "max_abs", "fp32_max": "fp32_max_abs"}   # older reports


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


@dataclass
class EngineNode(Plain):
    """How one node of the pipeline ran in an engine replay."""
    node: str
    runs_on: str                       # the engine's name, or "fp32 export" (not ONNX: LEAPP's runtime)
    build: str | None = None           # the engine build folder used
    source: str | None = None          # "built here" | "node build" (leapp-lab prepare --from-trace)
    note: str | None = None            # why it does not run on the engine


@dataclass
class TapsOverTime(Plain):
    """The taps of one node compared at every step of an engine replay (a steps × taps grid).

    ``nrmse[i][j]``: step ``steps[i]``, tap ``taps[j]``: the engine's tap value in the closed loop
    against the fp32 reference's (the prepared ONNX run on the fp32 pipeline's inputs of that
    node); ``local_nrmse``: the teacher-forced engine's (run from the fp32 state: what the step
    itself adds). ``hists[i][j]``: |diff| of that cell on the global log bins (model/hist.py).
    ``first``: the first (step, tap), in step then model order, beyond ``max_nrmse``."""
    node: str
    tier: str = "b"
    taps: list[str] = field(default_factory=list)      # model order
    steps: list[int] = field(default_factory=list)
    nrmse: list[list[float | None]] = field(default_factory=list)
    local_nrmse: list[list[float | None]] = field(default_factory=list)
    max_abs: list[list[float | None]] = field(default_factory=list)
    hists: list[list[Hist | None]] = field(default_factory=list)
    max_nrmse: float | None = None
    first: dict[str, Any] | None = None     # {"step", "tap"}
    first_local: dict[str, Any] | None = None
    note: str | None = None

    def to_dataframe(self):
        """One line per (step, tap), taps in model order: nrmse, local_nrmse, max_abs, and whether
        the cell is the first beyond the rule (closed loop / local)."""
        import pandas as pd
        cols = ["node", "step", "tap", "nrmse", "local_nrmse", "max_abs", "first", "first_local"]
        recs = [{"node": self.node, "step": k, "tap": t, "nrmse": self.nrmse[i][j],
                 "local_nrmse": self.local_nrmse[i][j], "max_abs": self.max_abs[i][j],
                 "first": self.first == {"step": k, "tap": t}, "first_local": self.first_local == {"step": k, "tap": t}}
                for i, k in enumerate(self.steps) for j, t in enumerate(self.taps)]
        return pd.DataFrame(recs, columns=cols)


@dataclass
class EngineReplay(Plain):
    """The replay of the pipeline with its ONNX nodes built for one engine (docs/deep-checks.md,
    "Replay on an engine"): ``closed_loop`` over the captured trajectory and ``fresh`` over tier
    (b)'s observations and resets, each a ReplayRun whose rows also hold the error against the fp32
    export and its split into own and inherited error."""
    engine: str
    status: str = "ok"                 # ok | diverged | failed | unavailable
    reason: str | None = None
    closed_loop: ReplayRun | None = None
    fresh: ReplayRun | None = None
    nodes: list[EngineNode] = field(default_factory=list)
    max_nrmse: float | None = None     # the rule a step is judged by: nrmse vs the reference > this
    teacher_forcing: bool = True       # own / inherited error computed
    timings_s: dict[str, float] = field(default_factory=dict)   # passes' seconds: docs/deep-checks.md, Cost
    notes: list[str] = field(default_factory=list)
    taps: TapsOverTime | None = None   # a node with taps: its taps at every step (docs/deep-checks.md)

    def runs(self) -> list[ReplayRun]:
        return [r for r in (self.closed_loop, self.fresh) if r is not None]


@register_section
@dataclass
class ReplayResult(SectionBase, Plain):
    section: ClassVar[str] = "replay"
    kind: ClassVar[str] = "replay"        # its renderers' kind in the view registry (figure)
    status: str = "skipped"            # ok | diverged | failed | unavailable | skipped
    reason: str | None = None
    tier: str | None = None            # the highest tier that ran: "a", "b"; "c" when unavailable
    rtol: float | None = None
    atol: float | None = None
    closed_loop: ReplayRun | None = None   # tier a
    fresh: ReplayRun | None = None         # tier b
    notes: list[str] = field(default_factory=list)
    # replay on engines (``replay(report, engine=...)``): one entry per engine; [] without
    engines: list[EngineReplay] = field(default_factory=list)

    def runs(self) -> list[ReplayRun]:
        return [r for r in (self.closed_loop, self.fresh) if r is not None]

    def engine(self, name: str) -> EngineReplay:
        for e in self.engines:
            if e.engine == name:
                return e
        raise KeyError(f"this replay ran no engine {name!r}; engines: {[e.engine for e in self.engines]}")

    def to_dataframe(self):
        """One row per engine / tier / step / output (``engine`` "fp32 export" for the exported
        pipeline itself; the engine columns are empty there)."""
        import pandas as pd
        cols = ["engine", "tier", "step", "output", "max_abs", "nrmse", "ref_max", "passed", "reset",
                "fp32_max_abs", "fp32_nrmse", "own_error", "inherited_error", "worst_element", "note"]
        rows = [{"engine": "fp32 export", "tier": run.tier, **{k: getattr(r, k) for k in cols[2:]}}
                for run in self.runs() for r in run.rows]
        rows += [{"engine": e.engine, "tier": run.tier, **{k: getattr(r, k) for k in cols[2:]}}
                 for e in self.engines for run in e.runs() for r in run.rows]
        return pd.DataFrame(rows, columns=cols)

    def figure(self, plot: str = "error", *, engine: str | None = None, output: str | None = None,
               tier: str | None = None, **opts):
        """A plotly ``Figure`` of this replay (needs plotly), drawn from the stored numbers:

        - ``"error"``: max |diff| per step and output (the fp32 export, or ``engine``'s run, against
          the reference), episode resets and the first step beyond tolerance marked;
        - ``"split"``: ``engine``'s own vs inherited error per step for ``output`` (two curves);
        - ``"elements"``: the per-element error of ``output`` over the sequence (a bar per element);
        - ``"taps"``: the steps × taps heatmap of ``engine`` (``local=True``: the teacher-forced
          taps).
        ``tier``: "a" (the captured trajectory) or "b" (fresh); default: the highest that ran."""
        from .base import Report
        return Report._render(self, "figure", plot=plot, engine=engine, output=output, tier=tier, **opts)

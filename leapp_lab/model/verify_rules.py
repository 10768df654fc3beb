"""The rules a verify judges rows by: ``DivergenceRule`` (the first-divergent rule: the one place that
says what diverging means) and ``ExpectedRule`` (``verify --expected``: an error beyond what a
precision explains). Both are saved in the report, so a loaded report is judged as it was.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from .dc import Plain, fields_from_dict, renamed
from .verify_rows import UNJUDGED_REASONS


@dataclass
class ExpectedRule(Plain):
    """When a row's error is more than its precision explains (``verify --expected fp16|bf16|int8``).

    ``expected_nrmse`` is the nrmse that the precision alone gives against the fp32 reference
    (fp16 / bf16: torch eager run in ``dtype``; int8: the prepared model rounded onto the engine's
    own int8 grids, run in fp32), ``expected_local_nrmse`` the same for each row computed from the
    reference values of the taps upstream (``verify --local``'s cuts). With both local values a row
    is judged by its own error: its ``local_excess`` is

        local_nrmse / max(expected_local_nrmse, floor)

    and it is *beyond expected* when ``local_excess > factor``. A row without local values is judged
    cumulatively: ``nrmse > factor * max(expected_nrmse, floor)``. ``local`` records that the
    verify had local expectations (the rule's ``text`` then says so).

    ``factor``: fp16 / bf16 4 (an engine that rounds like ``dtype`` differs from torch's own
    low-precision run in where it rounds and accumulates: on the test models the ``ort-fp16``
    engine's nrmse is 0.84-1.0x that of torch ``.half()``); int8 ``INT8_FACTOR`` (the rounded model
    reproduces the engine's S8S8 kernels closely; calibrated on clean builds, docs/verify.md).
    ``floor``: fp16 / bf16 the dtype's unit roundoff (2**-11, 2**-8); int8 ``INT8_FLOOR``: a row whose
    expected error is tiny (an exact op, a small tensor) is not flagged, nor ranked first, for
    ordinary float noise.
    """
    dtype: str = "fp16"
    factor: float = 4.0
    floor: float = 2.0 ** -11
    text: str = ""
    local: bool = False
    #: int8: a row *departs from its own int8 simulation* when ``sim_excess = sim_local_nrmse /
    #: max(expected_local_nrmse, floor) > sim_factor`` (the engine against the model rounded on its
    #: grids, both from the reference at the row's inputs: their rounding cancels). None: no
    #: simulation rule (fp16 / bf16, a report written before it). ``sim``: rows were judged by it.
    sim_factor: float | None = None
    sim: bool = False

    #: the floor of each dtype ``--expected`` takes
    FLOORS: ClassVar[dict[str, float]] = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8, "int8": 1e-3}
    #: the factor of each dtype
    FACTORS: ClassVar[dict[str, float]] = {"fp16": 4.0, "bf16": 4.0, "int8": 1.05}
    #: the simulation rule's factor (int8 only; calibrated on clean builds, docs/verify.md)
    SIM_FACTORS: ClassVar[dict[str, float]] = {"int8": 0.1}

    @classmethod
    def of(cls, dtype: str, factor: float | None = None, local: bool = False) -> "ExpectedRule":
        if dtype not in cls.FLOORS:
            raise ValueError(f"expected={dtype!r}: choose one of {', '.join(cls.FLOORS)}")
        r = cls(dtype=dtype, floor=cls.FLOORS[dtype],
                factor=float(cls.FACTORS[dtype] if factor is None else factor), local=local,
                sim_factor=cls.SIM_FACTORS.get(dtype))
        r.text = r.describe()
        return r

    def limit(self, expected_nrmse: float) -> float:
        return self.factor * max(expected_nrmse, self.floor)

    def beyond(self, nrmse: float | None, expected_nrmse: float | None) -> bool:
        return nrmse is not None and expected_nrmse is not None and nrmse > self.limit(expected_nrmse)

    def excess(self, local_nrmse: float | None, expected_local_nrmse: float | None) -> float | None:
        """``local_nrmse / max(expected_local_nrmse, floor)`` (None without both)."""
        if local_nrmse is None or expected_local_nrmse is None:
            return None
        return local_nrmse / max(expected_local_nrmse, self.floor)

    def sim_excess(self, sim_local_nrmse: float | None, expected_local_nrmse: float | None) -> float | None:
        """``sim_local_nrmse / max(expected_local_nrmse, floor)`` (None without both, or no rule)."""
        if self.sim_factor is None or sim_local_nrmse is None or expected_local_nrmse is None:
            return None
        return sim_local_nrmse / max(expected_local_nrmse, self.floor)

    def judge(self, row: Any) -> bool:
        """Is ``row`` beyond expected? By its departure from the int8 simulation when it has one
        (``sim_excess``), else by its local excess, else cumulatively."""
        if self.sim_factor is not None and getattr(row, "sim_excess", None) is not None:
            return row.sim_excess > self.sim_factor
        if getattr(row, "local_excess", None) is not None:
            return row.local_excess > self.factor
        return self.beyond(row.nrmse, row.expected_nrmse)

    def describe(self) -> str:
        cum = f"nrmse > {self.factor:g} x max(expected {self.dtype} nrmse, {self.floor:.3g})"
        if not self.local:
            return cum
        loc = f"local excess = local nrmse / max(expected {self.dtype} local nrmse, {self.floor:.3g}) > {self.factor:g}"
        if not self.sim or self.sim_factor is None:
            return f"{loc}; rows without a local value: {cum}"
        return (f"{loc} where the simulation does not reproduce the engine's kernels, else sim excess = sim "
                f"local nrmse / max(expected int8 local nrmse, {self.floor:.3g}) > {self.sim_factor:g} (departs "
                f"from its own int8 simulation); rows without a local value: {cum}")

    def headline(self) -> str:
        """How the views lead with this rule's verdict: ``beyond what int8 rounding explains``."""
        what = "int8 rounding" if self.dtype == "int8" else f"{self.dtype} precision"
        return f"beyond what {what} explains"


@dataclass
class DivergenceRule(Plain):
    """The first-divergent rule (docs/verify.md). A compared row not compared with itself
    (``self_compare``) *diverges* when any criterion of ``criteria_table()`` fires:

    * ``nrmse``: nrmse > ``div_nrmse`` / 100 (``div_nrmse`` in percent; None: off);
    * ``mape``: mape > ``div_mape`` (percent; None, the default: off; MAPE explodes where the
      reference is near zero, e.g. after a ReLU);
    * ``cosine``: cosine < ``div_cosine``;
    * ``non-finite``: the engine has more non-finite values than the reference (``div_nonfinite``);
    * ``nothing-compared``: no finite pair could be compared.

    The first diverging row in model order is ``first_divergent``. A fixed threshold trips at the
    first quantized/rounded layer of int8/fp16 engines, so the report also carries the error-growth
    profile (``VerifyRow.growth``), the worst row and the largest jump.
    """
    # the names of verify's options (div_nrmse=, --div-nrmse, ...): one name per threshold in the
    # API, the CLI and report.json (reports written before issue 18 named them nrmse_pct, mape_pct,
    # min_cosine, nonfinite: RENAMED loads them)
    div_nrmse: float | None = 1.0
    div_mape: float | None = None
    div_cosine: float = 0.999
    div_nonfinite: bool = True
    text: str = ""
    RENAMED: ClassVar[dict[str, str]] = {"nrmse_pct": "div_nrmse", "mape_pct": "div_mape",
                                         "min_cosine": "div_cosine", "nonfinite": "div_nonfinite"}

    def thresholds(self) -> dict[str, tuple[float, str]]:
        """Metric key -> (limit, ``"above"`` | ``"below"``: the side where a row diverges) of every
        metric the rule puts a limit on, in the units of the row's field (nrmse a fraction, mape a
        percentage). The one place the limits are read from: ``criteria_table`` tests them, and
        every view draws them (the growth plot's line, the graph's colour scale)."""
        out: dict[str, tuple[float, str]] = {}
        if self.div_nrmse is not None:
            out["nrmse"] = (self.div_nrmse / 100.0, "above")
        if self.div_mape is not None:
            out["mape"] = (self.div_mape, "above")
        out["cosine"] = (self.div_cosine, "below")
        return out

    def criteria_table(self) -> list[tuple[str, str, Callable[[Any], bool]]]:
        """(key, words, test(row)) of every criterion that applies, in the order they are tested:
        the one place that says what diverging means (the limits: ``thresholds``)."""
        out: list[tuple[str, str, Callable[[Any], bool]]] = []
        limits = self.thresholds()
        if "nrmse" in limits:
            lim = limits["nrmse"][0]
            out.append(("nrmse", f"nrmse > {lim:g} ({self.div_nrmse:g}%)",
                        lambda r: r.nrmse is not None and r.nrmse > lim))
        if "mape" in limits:
            mp = limits["mape"][0]
            out.append(("mape", f"mape > {mp:g}%", lambda r: r.mape is not None and r.mape > mp))
        mc = limits["cosine"][0]
        out.append(("cosine", f"cosine < {mc:g}", lambda r: r.cosine is not None and r.cosine < mc))
        if self.div_nonfinite:
            out.append(("non-finite", "more non-finite engine values than reference ones",
                        lambda r: r.nonfinite_engine > r.nonfinite_reference))
        out.append(("nothing-compared", "nothing finite compared", lambda r: r.mape is None and r.n > 0))
        return out

    def judge(self, row: Any) -> list[str]:
        """The keys of the criteria ``row`` fires (empty: it does not diverge)."""
        return [key for key, _, test in self.criteria_table() if test(row)]

    def diverges(self, row: Any) -> bool:
        return bool(self.judge(row))

    def reasons(self, row: Any) -> list[str]:
        """Why ``row`` has its verdict: the criteria it fires (``judge``) when the rule judges it,
        else the one UNJUDGED_REASONS key of its status; empty for a row that passes."""
        if row.status != "compared":
            return [UNJUDGED_REASONS[row.status][0]] if row.status in UNJUDGED_REASONS else [row.status]
        if row.self_compare:
            return [UNJUDGED_REASONS["self-compare"][0]]
        return self.judge(row)

    def reason_words(self) -> dict[str, str]:
        """reason key -> words (criteria as this rule words them, and the unjudged reasons)."""
        out = {key: words for key, words, _ in self.criteria_table()}
        out.update({k: w for k, w in UNJUDGED_REASONS.values()})
        return out

    def criteria(self) -> list[str]:
        """The criteria that apply, in words, in the order they are tested."""
        return [words for _, words, _ in self.criteria_table()]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DivergenceRule":
        data = renamed(data, cls.RENAMED)
        # reports written before nrmse existed judged by mape alone: load them as they were judged
        if "div_nrmse" not in data:
            data = {**data, "div_nrmse": None}
        return fields_from_dict(cls, data)

    def describe(self) -> str:
        """The rule in one sentence (``text`` holds it as recorded at verify time)."""
        return ("first row in model order, among compared rows not compared with itself, with "
                + " or ".join(self.criteria()))

"""Fresh-input parity: the exported pipeline and the original one on inputs never traced.

LEAPP validates the samples it cached while tracing; the integration guide then asks for a check
on *new* inputs drawn like the captured ones, scaled and shifted. Each of the ``n`` fresh inputs
runs one step from the initial state on both sides (``InferenceManager.reset()`` and
``step_fn(inputs, reset=True)``); every node output the original returns is compared with the
same statistics as validation (``SampleCheck``: percentiles, max, mean, min atol, histogram),
``sample`` being the index of the fresh input.

``parity.npz``: ``<node>/<port>/<i>/exported|original`` and ``<node>/<port>/<i>/input``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from .dc import Plain
from .semantics import ElementError
from .sections import SectionBase, register_section
from .trace import SampleCheck, ValidationTable


@dataclass
class FreshInput(Plain):
    """How one graph input was drawn (docs/deep-checks.md, "Fresh inputs")."""
    name: str                          # "node/port"
    dtype: str
    shape: list[int]
    mean: float | None = None          # over every recorded sample and element
    std: float | None = None
    low: float | None = None           # recorded min / max (integer and bool inputs)
    high: float | None = None
    rule: str = ""                     # the formula, e.g. "mean + std * (randn * scale + shift)"


@dataclass
class ParityOutput(Plain):
    """One node output over the n fresh inputs."""
    output: str                        # "node/port"
    samples: int = 0
    failed: int = 0                    # samples failing LEAPP's rule (NaN/Inf, or not allclose)
    max_abs: float | None = None       # max |exported − original| over the samples (was max)
    worst_sample: int | None = None
    min_atol: float | None = None      # the largest per-sample min atol
    elements: list[ElementError] = field(default_factory=list)   # per element over all fresh inputs
    worst_element: str | None = None
    RENAMED: ClassVar[dict[str, str]] = {"max": "max_abs"}   # older reports


@register_section
@dataclass
class ParityResult(SectionBase, Plain):
    section: ClassVar[str] = "parity"
    status: str = "skipped"            # ok | diverged | failed | unavailable | skipped
    reason: str | None = None
    n: int = 0
    seed: int | None = None
    rtol: float | None = None
    atol: float | None = None
    scales: list[float] = field(default_factory=list)
    shift: float | None = None
    inputs: list[FreshInput] = field(default_factory=list)
    outputs: list[ParityOutput] = field(default_factory=list)
    checks: list[SampleCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dataframe(self):
        """One row per node / output port / fresh input, the columns of the validation table."""
        return ValidationTable(self.checks).to_dataframe()

"""The columns of a verify report, defined once: key, label, format, description, and where they show.

Every table of a verify run is a selection of ``COLUMNS``: the DataFrame, ``verify --json`` rows
and ``metrics.csv`` hold every row column; ``per_sample.csv`` and the per-sample DataFrame the
``sample`` ones; the text table, the static HTML and the interactive table the ``table`` ones; the
error-growth plot offers the ``profile`` ones; a row's side panel lists the ``panel`` ones. The
front-end receives the selected columns (key, label, format, description) in the view dict and
never names a column itself. ``fmt`` names one formatting rule of ``leapp_lab.model.numfmt`` (the
JS front-end implements the same rules; a test compares them). A column that ``needs`` a report
attribute (the local-error and expected-drift columns) is on screen only in reports that computed
it (``shown``); the DataFrame, JSON and CSV always hold it.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    key: str                    # attribute of VerifyRow / SampleMetrics, and the JSON / CSV key
    label: str                  # short header
    fmt: str                    # int | num | cos | x | text | bool | shape | status
    description: str            # one sentence: tooltips, docs
    table: bool = False         # in the text / HTML / interactive table
    sample: bool = False        # a metric of each sample too (SampleMetrics)
    panel: bool = False         # listed in a row's (and a sample's) metric panel
    profile: bool = False       # a series of the error-growth plot
    log: bool = False           # plotted on a log axis
    needs: str | None = None    # shown on screen only when the report's attribute of this name is set


#: how the percentile columns are read (model.metrics.Metrics.fill)
_BINNED = "read from the log-binned histogram (within one bin, ~19 %) and clamped to the exact max"
WORST_RANKS = "most extra non-finite engine values, then largest nrmse, over judged outputs and taps"
JUMP_RANKS = "largest nrmse growth over the previous judged row"

COLUMNS: tuple[Column, ...] = (
    Column("order", "#", "int", "model order: index of the producing node in the prepared ONNX graph",
           table=True),
    Column("name", "output / tap", "text", "the ONNX output name (= reference npz key)", table=True),
    Column("kind", "kind", "text", "output, or the tap kind: manual, plugin, op; unknown: in no manifest",
           table=True),
    Column("status", "status", "status", "compared, no-reference, not-in-engine, shape-mismatch or "
           "dtype-unsupported", table=True),
    Column("reason", "reason", "text", "why the verdict: the rule criteria the row fires (nrmse, mape, "
           "cosine, non-finite, nothing-compared), or why it is not judged (missing-reference, "
           "missing-engine, shape, dtype, self-compare); empty when it passes", table=True),
    Column("mape", "MAPE %", "num", "100·mean(|e−r| / max(|r|, 1e-6)): mean absolute percentage error",
           table=True, sample=True, panel=True, profile=True, log=True),
    Column("nrmse", "NRMSE", "num", "√MSE / rms(reference): the error relative to the reference's scale",
           table=True, sample=True, panel=True, profile=True, log=True),
    Column("mse", "MSE", "num", "mean((e−r)²)", table=True, sample=True, panel=True),
    Column("max_abs", "max |diff|", "num", "max |engine − reference|", table=True, sample=True, panel=True,
           profile=True, log=True),
    Column("cosine", "cosine", "cos", "Σer / (‖e‖‖r‖); 1 when both are zero", table=True, sample=True,
           panel=True, profile=True),
    Column("min_atol", "min atol", "num", "smallest atol for which allclose(e, r, rtol, atol) holds",
           table=True, sample=True, panel=True),
    Column("nonfinite", "non-finite", "int", "NaN/Inf values, engine + reference (pairs with a non-finite "
           "side are left out of every metric)", table=True, sample=True),
    Column("mean_abs", "mean |diff|", "num", "mean |engine − reference|", sample=True, panel=True),
    Column("p50", "p50 ≈", "num", "median |diff|, approximate: " + _BINNED, sample=True, panel=True),
    Column("p90", "p90 ≈", "num", "90th percentile of |diff|, approximate: " + _BINNED, sample=True, panel=True),
    Column("p99", "p99 ≈", "num", "99th percentile of |diff|, approximate: " + _BINNED, sample=True, panel=True),
    Column("p999", "p99.9 ≈", "num", "99.9th percentile of |diff|, approximate: " + _BINNED, sample=True,
           panel=True),
    Column("n", "elements", "int", "elements paired (finite or not)", sample=True, panel=True),
    Column("nonfinite_engine", "non-finite engine", "int", "NaN/Inf values on the engine side",
           sample=True, panel=True),
    Column("nonfinite_reference", "non-finite reference", "int", "NaN/Inf values in the reference",
           sample=True, panel=True),
    Column("nonfinite_pairs", "non-finite pairs", "int", "pairs left out of the metrics (either side "
           "non-finite)", sample=True),
    Column("growth", "growth", "x", "nrmse / nrmse of the previous judged row in model order",
           table=True, profile=True, log=True),
    Column("local_nrmse", "local NRMSE", "num", "nrmse of the value the engine computes from the reference "
           "values of the taps upstream (teacher forcing): the error this row adds itself",
           table=True, profile=True, log=True, needs="local"),
    Column("local_cosine", "local cosine", "cos", "cosine of the locally computed value vs the reference",
           table=True, needs="local"),
    Column("local_max_abs", "local max |diff|", "num", "max |local − reference|", needs="local"),
    Column("local_share", "own share", "num", "local_nrmse / nrmse, clipped to [0, 1]: the part of the "
           "row's error that is its own (1: all of it; near 0: inherited from upstream)",
           table=True, needs="local"),
    Column("expected_nrmse", "expected NRMSE", "num", "the nrmse that the --expected precision alone "
           "causes: torch eager in fp16/bf16, or for int8 the model rounded onto the engine's own grids",
           table=True, profile=True, log=True, needs="expected"),
    Column("expected_local_nrmse", "expected local NRMSE", "num", "the local nrmse that the precision "
           "alone causes: the row computed from the reference values upstream (the --local cuts), "
           "rounded as the precision rounds", table=True, profile=True, log=True, needs="expected"),
    Column("local_excess", "local excess", "x", "local_nrmse / max(expected_local_nrmse, floor): how "
           "many times more error the row adds than its precision explains", table=True, profile=True,
           log=True, needs="expected"),
    Column("sim_nrmse", "sim NRMSE", "num", "int8: sqrt(Σ(engine − simulation)²) / sqrt(Σ reference²), "
           "both run from the model inputs; the simulation is the model rounded onto the engine's own "
           "grids", table=True, profile=True, log=True, needs="sim"),
    Column("sim_local_nrmse", "sim local NRMSE", "num", "the same with engine and simulation both fed "
           "the reference at the row's inputs (the --local cuts): what this layer computes differently "
           "from its own int8 simulation", table=True, profile=True, log=True, needs="sim"),
    Column("sim_excess", "sim excess", "x", "sim_local_nrmse / max(expected_local_nrmse, floor): the "
           "departure from the simulation as a share of the row's int8 rounding; beyond expected when "
           "above the rule's sim factor", table=True, profile=True, log=True, needs="sim"),
    Column("sim_note", "sim note", "text", "why a row is not judged by the simulation (a kernel whose "
           "rounding it does not reproduce, no local value): it falls back to the local excess",
           needs="sim"),
    Column("beyond_expected", "beyond expected", "bool", "local_excess > factor (rows without a local "
           "value: nrmse > factor × max(expected_nrmse, floor)): more error than the precision explains "
           "(a kernel, fusion, calibration or export problem)", table=True, needs="expected"),
    Column("worst_element", "worst element", "text", "the element of an output port with the largest "
           "|engine − reference| over the samples: its LEAPP element name (knee, t+2/knee) for a node "
           "prepared from a trace, else by index when the port holds at most 32 elements",
           table=True, needs="elements"),
    Column("range_max", "range max", "num", "the largest |value| of the reference over every sample "
           "(float64, NaN left out): the range an fp16 engine must hold"),
    Column("fp16_headroom", "fp16 headroom", "x", "65504 / range max: how many times larger the values "
           "could grow before float16 overflows (< 1: an fp16 engine makes them inf; prepare and verify "
           "name the row with its --keep-fp32 line)"),
    Column("first_divergent", "first divergent", "bool", "the first row in model order that crosses the "
           "divergence rule"),
    Column("diverged", "diverged", "bool", "the row crosses the divergence rule"),
    Column("first_locally_divergent", "first locally divergent", "bool", "the first row in model order "
           "whose local error crosses the divergence rule"),
    Column("locally_diverged", "locally diverged", "bool", "the row's local error crosses the divergence rule"),
    Column("worst", "worst", "bool", "the worst judged row: " + WORST_RANKS),
    Column("largest_jump", "largest jump", "bool", "the judged row with the " + JUMP_RANKS),
    Column("self_compare", "self compare", "bool", "reference from onnxruntime fp32 and engine ort: kept "
           "out of the rule"),
    Column("judged", "judged", "bool", "--max-mape applies to this row"),
    Column("exceeded", "exceeded", "bool", "above --max-mape (or a judged output that could not be compared)"),
    Column("paired", "paired", "bool", "present in both the reference and the build"),
    Column("scope", "scope", "text", "module path of the producing node, from the tap manifest (e.g. "
           "blocks.3.attn)", table=True),
    Column("reference_source", "reference", "text", "where the reference came from: torch or onnxruntime",
           table=True),
    Column("source", "source line", "text", "the Python line that made it", table=True),
    Column("producer_op", "op", "text", "ONNX op type of the producing node"),
    Column("shape_reference", "shape (reference)", "shape", "shape in the reference, with the sample axis"),
    Column("shape_engine", "shape (engine)", "shape", "shape in the build, with the sample axis"),
    Column("dtype_reference", "dtype (reference)", "text", "dtype in the reference"),
    Column("dtype_engine", "dtype (engine)", "text", "dtype in the build"),
    Column("note", "note", "text", "why a row is not compared, or a remark"),
    Column("local_note", "local note", "text", "why a row has no local error, or was not cut"),
    Column("expected_note", "expected note", "text", "why a row has no expected drift"),
)

BY_KEY = {c.key: c for c in COLUMNS}
#: what a per-sample table starts with before the sample metrics
SAMPLE_ID_KEYS = ("name", "kind", "order", "sample")


def row_columns() -> list[Column]:
    return list(COLUMNS)


def shown(c: Column, report=None) -> bool:
    """Is ``c`` on screen for ``report``? A column that ``needs`` a report attribute (``local``,
    ``expected``) shows only when that was computed; without a report, every column."""
    return c.needs is None or report is None or bool(getattr(report, c.needs, None))


def table_columns(report=None) -> list[Column]:
    return [c for c in COLUMNS if c.table and shown(c, report)]


def sample_columns() -> list[Column]:
    return [c for c in COLUMNS if c.sample]


def panel_columns() -> list[Column]:
    return [c for c in COLUMNS if c.panel]


def profile_columns(report=None) -> list[Column]:
    return [c for c in COLUMNS if c.profile and shown(c, report)]

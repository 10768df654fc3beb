"""The trace report: what one LEAPP tracing session captured and what it means.

Shape (JSON, see docs/schema-trace.md)::

    TraceReport{graphs: [GraphReport{name, status, nodes: [NodeReport{ports: [PortInfo]}],
                                     edges, validation: [SampleCheck], hazards: [Hazard], log}]}

``leapp_lab.trace(...)`` yields one graph; ``leapp-lab run SCRIPT`` yields one per compile_graph
call. Each graph is saved in its own run folder ``<graph dir>/leapp_lab/runs/<run id>/`` holding
``report.json``, ``arrays.npz`` (recorded / FX replay / exported outputs and inputs per sample),
``<graph>.yaml`` (a copy: LEAPP overwrites it on the next start) and ``log.txt`` (likewise).
"""
from __future__ import annotations

from dataclasses import dataclass, field
import os
from pathlib import Path
from typing import Any, ClassVar

from .base import Report, Viewable, register
from .dc import Plain
from .hist import Hist
from .jsonio import load_npz
from .safepaths import present
from .semantics import ElementError, PortSemantics

HAZARD_KINDS = (
    "frozen-constant", "export-mismatch", "mutated-after-trace", "unfilled-cache", "single-sample",
    "identical-samples", "constant-output", "trace-loss", "dropped-input", "tolerance-only",
    "trace-refused", "adapter-mismatch", "warm-start", "undeclared-state",
)
PERCENTILE_KEYS = ("p50", "p75", "p90", "p99", "p995", "max", "mean")


@dataclass
class PortInfo(Plain):
    name: str                       # after compile (ONNX may rename h -> h_in / h_out)
    direction: str                  # "in" | "out"
    dtype: str | None = None
    shape: list[int] | None = None
    role: str = "data"              # "data" | "state"
    traced_name: str | None = None  # the name at trace time, when compile renamed it
    source: str | None = None       # inputs: "node/port" that feeds it, None for graph inputs
    feedback: bool = False          # inputs: fed back from a later (or the same) node
    semantics: PortSemantics | None = None   # LEAPP's TensorSemantics of the port (model/semantics.py)
    static: bool = False            # outputs: declared with output_tensors(..., static_outputs=...)


@dataclass
class FxNode(Plain):
    op: str                         # placeholder | call_function | call_method | call_module | get_attr | output
    name: str
    target: str
    args: list[str] = field(default_factory=list)     # repr of each positional / keyword argument
    users: list[str] = field(default_factory=list)
    literals: list[Any] = field(default_factory=list)  # scalar literals found in the call arguments
    suspect: bool = False           # a literal that may be a frozen live value (.item(), float())
    weight: bool = False            # get_attr of a module weight / captured tensor (_tensor_constant*)


@dataclass
class FxGraph(Plain):
    code: str = ""
    nodes: list[FxNode] = field(default_factory=list)
    weights: list[str] = field(default_factory=list)


@dataclass
class NodeTap(Plain):
    """A ``tap(x, "name")`` / ``Tap("name")`` reached while LEAPP traced the node (docs/taps.md)."""
    name: str
    site: str                       # file:line of the tap() call, or where the Tap module was built


@dataclass
class NodeEngine(Plain):
    """The node prepared from the trace, compiled for one engine and verified tap by tap
    (``--engine``; docs/trace.md "Inside the nodes")."""
    engine: str
    build: str | None = None        # the engine build folder (absolute)
    verify_run: str | None = None   # the verify run folder: leapp_lab.load / leapp-lab report
    status: str = "failed"          # ok | diverged | failed | unavailable
    first_divergent: str | None = None   # the verify row name, model order
    worst_local: str | None = None       # the row with the largest local error (null without --local)
    error: str | None = None        # why failed / unavailable


@dataclass
class PipelinePort(Plain):
    """One node output port of the pipeline run on an engine (``pipeline_engines``)."""
    node: str
    port: str
    nrmse: float | None = None          # cumulative: fed the upstream nodes' engine outputs
    local_nrmse: float | None = None    # fed the recorded inputs
    own_share: float | None = None      # min(1, local_nrmse / nrmse): the part of the error its own
    diverged: bool | None = None        # cumulatively, by verify's rule (null: no cumulative value)


@dataclass
class PipelineEngine(Plain):
    engine: str
    first_divergent_node: str | None = None
    nodes: list[PipelinePort] = field(default_factory=list)   # model / pipeline order


@dataclass
class NodeReport(Plain):
    name: str
    index: int                      # completion order
    backend: str | None = None      # onnx-dynamo, jit-script, exported-program, None (not exported)
    artifact: str | None = None     # model file, relative to the graph dir
    sha256: str | None = None
    verdict: str = "skipped"        # pass | fail | error | skipped
    error: str | None = None        # LEAPP's message when the verdict is "error"
    samples: int = 0                # samples LEAPP really recorded (sample 0 + filled cache slots)
    dropped_inputs: list[str] = field(default_factory=list)  # traced inputs LEAPP trimmed as unused
    ports: list[PortInfo] = field(default_factory=list)
    fx: FxGraph | None = None
    taps: list[NodeTap] = field(default_factory=list)   # in the order they first fired
    engines: list[NodeEngine] = field(default_factory=list)   # with --engine
    saved_graph: str | None = None  # run-folder relative: the traced FX graph, for prepare --from-trace
    saved_graph_error: str | None = None   # why it could not be saved

    def inputs(self) -> list[PortInfo]:
        return [p for p in self.ports if p.direction == "in"]

    def outputs(self) -> list[PortInfo]:
        return [p for p in self.ports if p.direction == "out"]


@dataclass
class Edge(Plain):
    src: str                        # "node/port"
    dst: str                        # "node/port"
    kind: str = "data"              # "data" | "feedback"


@dataclass
class SampleCheck(Plain):
    """One node / output port / sample: recorded Python vs FX replay vs exported model."""
    node: str
    port: str
    sample: int
    passed: bool | None             # LEAPP's allclose verdict for this port+sample (None: not run)
    rtol: float
    atol: float
    shape: list[int] | None = None             # recorded
    exported_shape: list[int] | None = None
    dtype: str | None = None
    exported_dtype: str | None = None
    recorded_range: list[float | None] | None = None   # [min, max]
    exported_range: list[float | None] | None = None
    fx_range: list[float | None] | None = None
    stats: dict[str, float | None] = field(default_factory=dict)     # |exported-recorded|: PERCENTILE_KEYS
    fx_stats: dict[str, float | None] = field(default_factory=dict)  # |fx-recorded|
    export_vs_fx_max: float | None = None
    nonfinite_recorded: int = 0
    nonfinite_exported: int = 0
    min_atol: float | None = None   # smallest atol that would pass at this rtol
    hist: Hist | None = None                    # |exported-recorded| on the global log bins
    placeholder: bool = False       # the recorded value is LEAPP's unfilled zero placeholder
    # per element of the port (model/semantics.py: named by the port's semantics, else by index when
    # small): |exported − recorded| per element, and the element where it is largest
    elements: list[ElementError] = field(default_factory=list)
    worst_element: str | None = None

    @property
    def row_id(self) -> str:
        return f"{self.node}/{self.port}/{self.sample}"


@dataclass
class Hazard(Plain):
    kind: str
    node: str | None
    port: str | None
    samples: list[int]
    message: str
    # every output port one root cause touches (``port`` is the first of them); [] for one port
    ports: list[str] = field(default_factory=list)


@dataclass
class StateChange(Plain):
    """A module buffer or parameter that changed between ``leapp.start()`` and ``compile_graph()``
    (trace/hazard_state.py): running statistics updated while LEAPP recorded."""
    module: str                     # the root module's class and the path inside it: MLPModel.obs_normalizer
    name: str                       # the buffer / parameter: _mean
    how: str                        # "in place" | "reassigned"
    updates: int | None = None      # in-place updates counted by torch's version counter
    nodes: list[str] = field(default_factory=list)   # the nodes whose traced graph reads it


@dataclass
class LogRecord(Plain):
    level: str                      # DEBUG INFO SECTION WARNING SYSTEM ERROR FATAL
    levelno: int
    message: str                    # without ANSI codes
    section: str | None = None      # the last [SECTION] before it


class ValidationTable(list):
    """The SampleCheck rows of a graph (or of every graph) with a pandas view."""

    def to_dataframe(self):
        import pandas as pd
        rows = []
        for c in self:
            row = {"node": c.node, "port": c.port, "sample": c.sample, "passed": c.passed,
                   "rtol": c.rtol, "atol": c.atol, "min_atol": c.min_atol,
                   "placeholder": c.placeholder, "shape": c.shape, "dtype": c.dtype,
                   "worst_element": c.worst_element}
            row.update({k: c.stats.get(k) for k in PERCENTILE_KEYS})
            row["fx_max"] = c.fx_stats.get("max")
            rows.append(row)
        cols = ["node", "port", "sample", "passed", "rtol", "atol", "min_atol", *PERCENTILE_KEYS,
                "fx_max", "worst_element", "placeholder", "shape", "dtype"]
        return pd.DataFrame(rows, columns=cols)


@dataclass
class GraphReport(Plain):
    name: str
    graph_dir: str | None = None
    status: str = "compiled"        # compiled | refused | dry-run | error
    error: str | None = None        # LEAPP's message when refused / when the body raised
    verdict: str = "pass"           # pass | fail | error | skipped, over all nodes
    options: dict[str, Any] = field(default_factory=dict)   # start/compile options used
    leapp_result: dict[str, Any] = field(default_factory=dict)  # compile_graph's dict, stringified
    nodes: list[NodeReport] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    graph_inputs: list[str] = field(default_factory=list)
    graph_outputs: list[str] = field(default_factory=list)
    checks: list[SampleCheck] = field(default_factory=list)
    hazards: list[Hazard] = field(default_factory=list)
    state_changes: list[StateChange] = field(default_factory=list)
    log: list[LogRecord] = field(default_factory=list)
    pipeline_engines: list[PipelineEngine] = field(default_factory=list)   # with --engine
    yaml_file: str | None = None    # copy inside the run folder
    run_dir: str | None = None      # where this graph's run folder was committed
    run_id: str | None = None
    # deep-check sections (model/sections.py): saved as <name>.json beside report.json, read lazily
    sections: dict[str, Any] = field(default_factory=dict, repr=False, compare=False,
                                     metadata={"transient": True})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GraphReport":
        from .dc import fields_from_dict
        from .sections import SECTION_NAMES, section_from_dict
        g = fields_from_dict(cls, data)
        for name in SECTION_NAMES:      # a combined --json report carries them inline
            if isinstance(data.get(name), dict):
                g.sections[name] = section_from_dict(name, data[name])
        return g

    def section(self, name: str):
        """A deep-check section: the one attached, else the one saved in the run folder, else None."""
        if name not in self.sections:
            from .sections import load_section
            found = load_section(self.run_dir, name)
            if found is None:
                return None
            self.sections[name] = found
        return self.sections[name]

    replay = property(lambda self: self.section("replay"), doc="ReplayResult | None")
    parity = property(lambda self: self.section("parity"), doc="ParityResult | None")
    adapters = property(lambda self: self.section("adapters"), doc="AdapterResult | None")
    exporters = property(lambda self: self.section("exporters"), doc="ExporterMatrix | None")
    isolation = property(lambda self: self.section("isolation"), doc="IsolationResult | None")

    def port(self, key: str) -> PortInfo | None:
        """The port ``"node/port"`` (output ports first: a state port has both), or None."""
        node, _, name = key.partition("/")
        for n in self.nodes:
            if n.name == node:
                ps = sorted((p for p in n.ports if p.name == name), key=lambda p: p.direction != "out")
                return ps[0] if ps else None
        return None

    def semantics_of(self, key: str) -> PortSemantics | None:
        p = self.port(key)
        return p.semantics if p is not None else None

    def node(self, name: str) -> NodeReport:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"graph {self.name!r} has no node {name!r}; nodes: {[n.name for n in self.nodes]}")

    @property
    def validation(self) -> ValidationTable:
        return ValidationTable(self.checks)


def graph_labels(graphs: list[Any]) -> list[str]:
    """One distinct label per graph: a script that compiles the same graph name twice (a sweep, a
    second backend) gets ``name``, ``name#2``, ... so row and node ids stay unique."""
    seen: dict[str, int] = {}
    out = []
    for g in graphs:
        seen[g.name] = seen.get(g.name, 0) + 1
        out.append(g.name if seen[g.name] == 1 else f"{g.name}#{seen[g.name]}")
    return out


@register
@dataclass
class TraceReport(Viewable, Report, Plain):
    kind: ClassVar[str] = "trace"
    graphs: list[GraphReport] = field(default_factory=list)
    created: str | None = None
    leapp_version: str | None = None
    torch_version: str | None = None
    script: str | None = None       # leapp-lab run: the script and its exit status
    script_exit: int | None = None
    script_error: str | None = None  # the traceback text when the script raised

    path: Path | None = field(default=None, repr=False, compare=False, metadata={"transient": True})
    _arrays: dict | None = field(default=None, repr=False, compare=False, metadata={"transient": True})

    def _found_at(self, folder: Path) -> None:
        # a run folder holds one graph, and the deep checks (replay, parity, the engines' builds)
        # read and write beside its report.json: here, never where report.json says it was written
        if len(self.graphs) == 1:
            self.graphs[0].run_dir = os.path.abspath(folder)
            _graph_folder_of_run(self.graphs[0])

    def _found_in_summary(self) -> None:
        # each graph's run folder, as run --json recorded it: kept only when it is a trace run
        # folder of that graph (a crafted file's "run_dir" would take the deep checks' writes);
        # without one, nothing is written for the graph (sections stay in memory, no engine builds)
        from .safepaths.recognise import _small_json
        for g in self.graphs:
            g.from_summary = True
            d = _small_json(Path(g.run_dir) / "report.json") if g.run_dir else None
            names = [x.get("name") for x in d.get("graphs") or [] if isinstance(x, dict)] \
                if isinstance(d, dict) and d.get("kind") == "trace" and isinstance(d.get("graphs"), list) else []
            if names != [g.name]:
                g.run_dir = None
            _graph_folder_of_run(g)

    # -- model API -----------------------------------------------------------------------------
    @property
    def graph(self) -> GraphReport:
        if len(self.graphs) != 1:
            raise ValueError(f"this report holds {len(self.graphs)} graphs; use .graphs")
        return self.graphs[0]

    @property
    def validation(self) -> ValidationTable:
        return ValidationTable(c for g in self.graphs for c in g.checks)

    @property
    def hazards(self) -> list[Hazard]:
        return [h for g in self.graphs for h in g.hazards]

    def verdict(self):
        """The ``TraceVerdict`` (model/trace_verdict.py): one judgement of every result the run
        holds, which the finding, the views and ``leapp-lab run``'s exit status read."""
        from .trace_verdict import trace_verdict
        return trace_verdict(self)

    def body(self) -> dict[str, Any]:
        body = super().body()
        body["verdict"] = self.verdict().to_dict()
        return body

    @property
    def ok(self) -> bool:
        return all(g.verdict in ("pass", "skipped") and g.status != "refused" for g in self.graphs)

    def arrays(self) -> dict:
        """The stored arrays (lazy): keys ``<node>/<port>/<sample>/<recorded|exported|fx|input>``."""
        if self._arrays is None:
            p = self.path / "arrays.npz" if self.path else None
            self._arrays = load_npz(p) if p is not None and present(p) else {}
        return self._arrays

    def graph_arrays(self, graph: GraphReport) -> dict:
        """The arrays of one graph. A combined report (``leapp-lab run --json``, several graphs)
        keeps none of its own: each graph's arrays stay in that graph's run folder."""
        if len(self.graphs) == 1 and self.arrays():
            return self.arrays()
        cache = self.__dict__.setdefault("_graph_arrays", {})
        key = id(graph)
        if key not in cache:
            p = Path(graph.run_dir) / "arrays.npz" if graph.run_dir else None
            cache[key] = load_npz(p) if p is not None and present(p) else {}
        return cache[key]


def _graph_folder_of_run(g: GraphReport) -> None:
    """LEAPP's models (the YAML, .onnx, .pt, .pt2 that a replay loads) are read only from the graph
    folder the run sits in (<graph folder>/leapp_lab/runs/<id>), never from a folder report.json
    names: a crafted one named a folder of models someone else wrote."""
    run = Path(g.run_dir) if g.run_dir else None
    home = run.parents[2] if run is not None and len(run.parents) > 2 else None
    if g.graph_dir and (home is None or os.path.abspath(g.graph_dir) != str(home)):
        g.graph_dir = str(home) if home is not None and (home / f"{g.name}.yaml").is_file() else None

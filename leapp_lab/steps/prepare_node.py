"""``prepare --from-trace RUN --node NODE``: a node of a traced LEAPP pipeline becomes a tapped build.

From the trace's run folder alone (any process, any later day):

* ``model.npz``: every cached sample of the node, state ports included, under the node's input
  port names (``h_in``), as LEAPP recorded them (``arrays.npz``);
* ``model.reference.npz``: the node's outputs exactly as the Python produced them while tracing,
  and each exposed tap's value as the Python computed it on that sample (``taps.npz``); op / plugin
  taps from the node's traced graph run in torch (prepare's own FX references);
* ``model.onnx``: LEAPP's own artifact, byte for byte, when no tap is asked for and LEAPP exported
  the node to ONNX (and the file is still the one the trace saw); otherwise a re-export of the
  node's saved traced graph (trace/fx_store -> fxio/store.py) with its taps put back where they
  fired, through the same exporter call LEAPP makes (its port names, its ONNX fixes). The record
  (``from_trace``) says which, and for a re-export whether its graph without the taps is LEAPP's.

``compile``, ``verify`` (``--local``, ``--expected``), ``repair`` and ``diff`` then work on it as
on any prepared model. Every unusable input is a PrepareError (exit 2) naming it, raised before
anything is written.
"""
from __future__ import annotations

import difflib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from leapp_lab.fxio.node_model import (TRACED_HINT, NodeGraphRefused, NodeModelError, input_arrays,
                                       node_model, output_arrays)
from leapp_lab.fxio.store import FxStoreError, read_taps
from leapp_lab.model.errors import UnusableInput, UserError
from leapp_lab.model.prepare import PrepareReport, TraceOrigin
from leapp_lab.model.safepaths import check_input_file, is_file_name, present

ONNX_BACKENDS = ("onnx-dynamo", "onnx-torchscript")


class TraceInputError(UserError):
    """RUN / NODE cannot be prepared; the message says why and what to do (exit 2)."""


class TraceGraphRefused(TraceInputError, UnusableInput):
    """The node's saved graph is not one leapp_lab wrote (fxio/schema.py refused it): unusable
    input wherever it is read, never one failed build among others."""


@dataclass
class TracedNode:
    """One node of one traced graph, and where its run folder is."""
    report: Any          # TraceReport
    graph: Any           # GraphReport
    node: Any            # NodeReport
    run_dir: Path

    @property
    def samples(self) -> list[int]:
        """The samples LEAPP really recorded: samples it left as zero placeholders (the
        unfilled-cache hazard) are no evidence, so the build is neither fed nor scored on them."""
        from leapp_lab.model.trace_verdict import evidence_samples
        return evidence_samples(self.graph, self.node)

    @property
    def label(self) -> str:
        return f"node {self.node.name!r} of trace run {self.run_dir}"

    def artifact(self) -> tuple[Path | None, str | None]:
        """(LEAPP's artifact, None) when it is still the file the trace saw, else (path, why not)."""
        if not self.node.artifact or not self.graph.graph_dir:
            return None, "LEAPP wrote no artifact for this node"
        name = self.node.artifact
        if not is_file_name(name):      # LEAPP writes a file of graph_dir
            return None, f"the artifact {name!r} that report.json names is not a file name (the run was edited)"
        p = Path(self.graph.graph_dir) / name
        if not present(p):
            return p, f"LEAPP's artifact {p} is gone"
        try:
            check_input_file(p, f"LEAPP's artifact of node {self.node.name!r}")
        except UserError as exc:
            raise TraceInputError(str(exc)) from None
        if self.node.sha256 and _sha256(p) != self.node.sha256:
            return p, f"LEAPP's artifact {p} changed since the trace (a later run of the graph rewrote it)"
        return p, None

    def arrays(self) -> dict:
        from leapp_lab.model.jsonio import load_npz
        p = self.run_dir / "arrays.npz"
        if not present(p):
            raise TraceInputError(f"{self.run_dir}: the trace's samples are gone (arrays.npz is missing); "
                                  f"trace the pipeline again to record them")
        try:
            check_input_file(p, "the trace's samples (an .npz file)")
            return load_npz(p)
        except UserError as exc:
            raise TraceInputError(str(exc)) from None
        except (OSError, ValueError) as exc:
            raise TraceInputError(f"{p}: unreadable ({exc}); trace the pipeline again") from None

    def tap_values(self) -> dict:
        """The tap values the trace recorded. The trace writes taps.npz whenever a tap() fired, so
        with taps in the report a missing file is the file's loss, never a branch not taken."""
        from leapp_lab.model.jsonio import load_npz
        p = self.run_dir / "taps.npz"
        if not present(p):
            fired = [n.name for n in self.graph.nodes if n.taps]
            if fired:
                raise TraceInputError(f"{p}: missing: the trace's tap values (tap() fired in node "
                                      f"{fired[0]!r} while tracing, and the trace wrote them here); "
                                      f"trace the pipeline again to record them")
            return {}
        try:
            check_input_file(p, "the trace's tap values (an .npz file)")
            return load_npz(p)
        except UserError as exc:
            raise TraceInputError(str(exc)) from None


def port_semantics(node: Any) -> dict:
    """``{output port: PortSemantics}`` of the node's outputs that declare LEAPP semantics, recorded
    in the build's ``from_trace`` so that verify names their elements (steps/verify_elements.py)."""
    return {p.name: p.semantics for p in node.outputs() if p.semantics is not None}


def _sha256(p: Path) -> str:
    from leapp_lab.model.safepaths import open_input
    h = hashlib.sha256()
    with open_input(p, "LEAPP's artifact") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def traced_node(run: Any, node: str | None = None) -> TracedNode:
    """RUN (a trace run folder, a graph's LEAPP output folder, a TraceReport) and the node to
    prepare (None: the graph's one exportable node). TraceInputError naming what is wrong."""
    from leapp_lab.model import load
    from leapp_lab.model.trace import TraceReport

    if isinstance(run, TraceReport):
        report = run
        where = str(run.path) if run.path else "the trace report"
    else:
        if run is None or not os.fspath(run):
            raise TraceInputError("--from-trace: give a trace run folder or a graph's LEAPP output folder")
        where = os.fspath(run)
        if not Path(where).exists():
            raise TraceInputError(f"{where}: no such trace run folder")
        try:
            report = load(where)
        except UserError as exc:
            raise TraceInputError(f"{where}: not a trace run ({exc}); pass a trace run folder "
                                  f"(…/leapp_lab/runs/<run id>) or a graph's LEAPP output folder that "
                                  f"leapp_lab traced") from None
        if not isinstance(report, TraceReport):
            raise TraceInputError(f"{where}: is a {report.kind} report, not a trace; pass a trace run "
                                  f"folder (…/leapp_lab/runs/<run id>) or a graph's LEAPP output folder "
                                  f"that leapp_lab traced (leapp_lab.trace, %%leapp_trace, leapp-lab run)")
    if len(report.graphs) != 1:
        runs = "; ".join(f"{g.name}: {g.run_dir}" for g in report.graphs) or "none"
        raise TraceInputError(f"{where}: holds {len(report.graphs)} graphs; pass the run folder of one "
                              f"({runs})")
    g = report.graphs[0]
    if g.status != "compiled":
        raise TraceInputError(f"{where}: graph {g.name!r} did not compile (status {g.status}"
                              f"{': ' + g.error.splitlines()[0] if g.error else ''}); nothing was exported")
    exportable = [n.name for n in g.nodes if n.backend]
    if node is None:
        if len(exportable) != 1:
            raise TraceInputError(f"{where}: graph {g.name!r} has {len(exportable)} exported nodes "
                                  f"({', '.join(exportable) or 'none'}); pass --node NODE")
        node = exportable[0]
    names = [n.name for n in g.nodes]
    if node not in names:
        close = difflib.get_close_matches(node, names, n=2)
        raise TraceInputError(f"--node {node}: graph {g.name!r} has no such node; its nodes: "
                              f"{', '.join(names) or 'none'}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    nr = g.node(node)
    if nr.samples < 1:
        where = Path(report.path) / "report.json" if report.path else "the trace report"
        raise TraceInputError(f"{where}: node {node!r} records {nr.samples} samples; a node LEAPP exported "
                              f"holds at least sample 0, so the file was edited or is not a trace of this "
                              f"run: trace the pipeline again")
    if not nr.backend:
        raise TraceInputError(f"--node {node}: LEAPP did not export this node (export_with=None, a dry "
                              f"run or non_traced); exported nodes: {', '.join(exportable) or 'none'}")
    # the folder the report was read from (a run folder copied or moved keeps working), else the
    # run folder the graph recorded (a combined --json report)
    here = Path(report.path) if report.path else None
    run_dir = here if here is not None and (here / "report.json").is_file() else Path(g.run_dir or "")
    return TracedNode(report, g, nr, run_dir)


def _wanted_taps(tn: TracedNode, debug_taps: list[str]) -> list[str] | None:
    """The taps asked for by name (a typo raises, naming the node's taps), or None for 'all'."""
    from leapp_lab.taps.errors import TapError
    node = tn.node
    have = [t.name for t in node.taps]
    if "all" in debug_taps:
        return None
    out = []
    for name in dict.fromkeys(debug_taps):
        if name not in have:
            close = difflib.get_close_matches(name, have, n=2)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise TapError(f"debug tap {name!r}: no tap() of that name fired in node {node.name!r} while "
                           f"it was traced; its taps: {', '.join(have) or 'none'}{hint}")
        out.append(name)
    return out


def _check_taps(tn: TracedNode, recorded: list[dict], wanted: list[str] | None,
                values: dict) -> tuple[list[str], dict]:
    """Taps that cannot be exposed: an error when asked for by name, a warning under 'all'.
    Returns (warnings, {tap: stacked values})."""
    from leapp_lab.taps.errors import TapError
    node = tn.node
    warnings, refs = [], {}
    by_name = {t["name"]: t for t in recorded}
    names = wanted if wanted is not None else [t.name for t in node.taps]
    for name in names:
        site = next((t.site for t in node.taps if t.name == name), "?")
        rec = by_name.get(name) or {}
        why = None
        if not rec.get("fx_node"):
            why = (f"debug tap {name!r} (tap() at {site}): its value is not part of node {node.name!r}'s "
                   f"traced graph (LEAPP pruned it as unused, or it fired only after the first pass); "
                   f"tap a value the node's outputs depend on, and use the value tap() returns")
        else:
            missing = [k for k in tn.samples if f"{node.name}/{name}/{k}" not in values]
            if missing:
                why = (f"debug tap {name!r}: branch not taken on sample {missing[0]} (tap() at {site}): "
                       f"the Python did not reach it while tracing, so it has no value to compare")
        if why is None:
            refs[name] = np.stack([values[f"{node.name}/{name}/{k}"] for k in tn.samples])
        elif wanted is not None:
            raise TapError(why)
        else:
            warnings.append(why)
    return warnings, refs


def inputs_to_spare(tn: TracedNode) -> list[tuple[Path, str]]:
    """Files an output path must not be: everything the build is made from."""
    out = [(tn.run_dir, "the trace run folder")]
    for f, what in (("report.json", "the trace report"), ("arrays.npz", "the trace's samples"),
                    ("taps.npz", "the trace's tap values"), ("log.txt", "the trace's log")):
        out.append((tn.run_dir / f, what))
    if tn.node.saved_graph:
        for f in ("module.json", "weights.safetensors"):
            out.append((tn.run_dir / tn.node.saved_graph / f, f"node {tn.node.name!r}'s traced graph"))
    if tn.graph.graph_dir:
        gd = Path(tn.graph.graph_dir)
        out.append((gd / f"{tn.graph.name}.yaml", "LEAPP's graph YAML"))
        for n in tn.graph.nodes:
            if n.artifact:
                out.append((gd / n.artifact, f"LEAPP's artifact of node {n.name!r}"))
    return out


def prepare_from_trace(run: Any, onnx_out: str | os.PathLike, npz_out: str | os.PathLike,
                       reference_out: str | os.PathLike, node: str | None = None,
                       debug_taps: Iterable[str] | str = (), plugin_taps: bool = False,
                       op_taps: bool = False, *, progress: Any = None,
                       save_report: bool = True) -> PrepareReport:
    """The ``prepare`` of a traced node (module docstring). ``run``: a trace run folder, a graph's
    LEAPP output folder or a TraceReport; ``node``: None when the graph has one exported node."""
    requested = [debug_taps] if isinstance(debug_taps, str) else [str(t) for t in debug_taps]
    tn = traced_node(run, node)
    arrays = tn.arrays()
    try:
        inputs = input_arrays(tn.node, arrays, tn.run_dir, tn.samples)
        outputs = output_arrays(tn.node, arrays, tn.run_dir, tn.samples)
    except NodeModelError as exc:
        raise TraceInputError(str(exc)) from None
    artifact, stale = tn.artifact()
    onnx_ok = tn.node.backend in ONNX_BACKENDS and stale is None
    if "all" in requested and not tn.node.taps:
        requested = []      # 'all' of a node without taps (--engine E --taps all): LEAPP's artifact as is
    if not requested and not plugin_taps and not op_taps and onnx_ok:
        from .prepare_leapp import leapp_artifact_build
        return leapp_artifact_build(tn, artifact, inputs, outputs, onnx_out, npz_out, reference_out,
                               progress, save_report)
    if tn.node.backend not in ONNX_BACKENDS:
        note = (f"LEAPP exported this node with {tn.node.backend}: the ONNX is a re-export of its "
                f"traced graph")
    elif stale is not None:
        note = f"{stale}: the ONNX is a re-export of the node's traced graph"
    else:
        note = "taps asked for: the ONNX is a re-export of the node's traced graph with its taps"
    return _reexport(tn, arrays, inputs, outputs, requested, plugin_taps, op_taps, onnx_out, npz_out,
                     reference_out, progress, save_report, note, artifact if onnx_ok else None)


def _reexport(tn, arrays, inputs, outputs, requested, plugin_taps, op_taps, onnx_out, npz_out,
              reference_out, progress, save_report, note, leapp_onnx):
    from leapp_lab.taps.loader import ModelSource
    from leapp_lab.taps.marker import tap_at
    from leapp_lab.onnxio.graph_compare import same_as_leapp

    from .prepare import GivenModel, prepare

    wanted = _wanted_taps(tn, requested)
    warnings, tap_refs = [], {}
    if requested:
        try:
            recorded = read_taps(tn.run_dir / tn.node.saved_graph) if tn.node.saved_graph else []
        except FxStoreError as exc:
            raise TraceInputError(f"node {tn.node.name!r}: its traced graph cannot be read: {exc}") from None
        warnings, tap_refs = _check_taps(tn, recorded, wanted, tn.tap_values())
    put_back = list(tap_refs)
    try:
        nm = node_model(tn.run_dir, tn.node, arrays, tap_at, put_back, tn.samples)
    except NodeGraphRefused as exc:
        raise TraceGraphRefused(str(exc)) from None
    except NodeModelError as exc:
        raise TraceInputError(str(exc)) from None
    src = ModelSource(label=tn.label, base_dir=None, raised_hint=TRACED_HINT, make_model=lambda: nm.gm,
                      get_samples=lambda: list(nm.samples))

    def finish(proto, manifest):
        same, why = None, None
        if leapp_onnx is not None:
            same, why = same_as_leapp(proto, manifest, leapp_onnx)
        return TraceOrigin(run=str(tn.run_dir), graph=tn.graph.name, node=tn.node.name,
                           backend=tn.node.backend, onnx_source="re-export", same_as_leapp=same,
                           leapp_artifact=str(leapp_onnx) if leapp_onnx else None,
                           note=note + (f"; {why}" if why else ""), semantics=port_semantics(tn.node))

    given = GivenModel(source=src, input_names=nm.input_names, output_names=nm.output_names,
                       references={**outputs, **tap_refs}, inputs=inputs_to_spare(tn),
                       inside_ok=[tn.run_dir], finish=finish)
    report = prepare(None, onnx_out, npz_out, reference_out,
                     debug_taps=put_back if put_back else (), plugin_taps=plugin_taps, op_taps=op_taps,
                     progress=progress, save_report=save_report, given=given)
    report.warnings[:0] = warnings
    if save_report and report.path is not None and warnings:
        report.save(report.path)
    return report


def trace_of(obj: Any) -> Any:
    """A TraceSession (``with leapp_lab.trace(...) as t``) stands for its report."""
    rep = getattr(obj, "report", None)
    return rep if rep is not None and getattr(rep, "kind", None) == "trace" else obj

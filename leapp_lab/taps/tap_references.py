"""References for the taps the eager runs do not give (plugin ports, op values).

First torch: the exported program's FX graph run per sample, where an FX node has the ONNX value's
name and shape. What is left comes from onnxruntime fp32 on the untapped graph with graph
optimisations off; when onnxruntime cannot run it, the taps stay uncompared with the reason.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import torch

from .eager_capture import NO_NUMPY, flat_tensor_args, to_numpy
from .errors import first_line
from leapp_lab.onnxio.manifest import add_output
from .marker import TAP_DOMAIN
from .tap_builder import DEFAULT_DOMAINS, TapBuilder


def _fx_values(program: Any, samples: list[tuple], names: set[str], dtype: torch.dtype | None = None
               ) -> list[dict[str, torch.Tensor]]:
    """Per sample, the tensors of the FX nodes called ``names``. ``dtype``: run the graph in that
    floating dtype instead (every floating input, parameter, buffer and constant cast to it), as
    ``model.to(dtype)`` would run eagerly (``leapp_lab.taps.lowprec``)."""

    def cast(x: Any) -> Any:
        if dtype is not None and isinstance(x, torch.Tensor) and x.is_floating_point():
            return x.to(dtype)
        return x
    from torch.export.graph_signature import InputKind
    ep = program
    sig = ep.graph_signature
    consts = getattr(ep, "constants", {})
    values: list[dict[str, torch.Tensor]] = []

    marker_op = getattr(getattr(torch.ops, "onnx_symbolic", None), "_symbolic", None)
    marker_op = getattr(marker_op, "default", None)

    class _Recorder(torch.fx.Interpreter):
        def call_function(inner, target, args, kwargs):  # noqa: N805
            # a tap marker is an identity in torch (its eager kernel returns a dummy tensor)
            if target is marker_op and kwargs.get("domain") == TAP_DOMAIN:
                return args[0][0]
            return super().call_function(target, args, kwargs)

        def run_node(inner, n):  # noqa: N805
            r = super().run_node(n)
            if n.name in names and isinstance(r, torch.Tensor):
                # a graph that mutates nothing leaves every value as computed: kept as it is
                inner.seen[n.name] = r.detach() if functional else r.detach().clone()
            return r

    functional = not any(n.op == "call_function" and getattr(getattr(n.target, "_schema", None), "is_mutable", True)
                         for n in ep.graph_module.graph.nodes
                         if n.op == "call_function" and n.target is not marker_op
                         and isinstance(n.target, torch._ops.OpOverload))

    with torch.no_grad():
        for s in samples:
            user = iter(flat_tensor_args(s))
            args = []
            for spec in sig.input_specs:
                if spec.kind == InputKind.USER_INPUT:
                    args.append(cast(next(user, None)))
                elif spec.target in ep.state_dict:
                    args.append(cast(ep.state_dict[spec.target]))
                else:
                    args.append(cast(consts[spec.target]))
            rec = _Recorder(ep.graph_module)
            rec.seen = {}
            rec.run(*args)
            values.append(rec.seen)
    return values


def fx_references(taps: TapBuilder) -> None:
    """Torch values of the exported program's FX nodes whose names the ONNX values carry."""
    if taps.program is None:
        return
    values = _fx_values(taps.program, taps.samples, {t.tensor for t in taps.pending()})
    # graph inputs are torch values too
    inputs = taps.input_arrays()
    for t in taps.pending():
        if t.tensor in inputs:
            taps.refs[t.name] = list(inputs[t.tensor])
            t.reference_source = "torch"
            continue
        if all(t.tensor in v for v in values):
            arrs = [v[t.tensor] for v in values]
            if arrs[0].dtype in NO_NUMPY:
                t.uncompared_reason = f"{arrs[0].dtype}, which numpy cannot hold"
                continue
            np_arrs = [to_numpy(a, t.name, copy=False) for a in arrs]
            if t.shape is not None and list(np_arrs[0].shape) != list(t.shape):
                continue  # same name, different value: leave it to onnxruntime
            taps.refs[t.name] = np_arrs
            t.reference_source = "torch"
            if t.shape is None:
                t.shape = list(np_arrs[0].shape)
            if t.dtype is None:
                t.dtype = str(np_arrs[0].dtype)


def ort_references(taps: TapBuilder, untapped: onnx.ModelProto, session_options: Any) -> None:
    """Recompute the remaining values with onnxruntime fp32 on the untapped graph."""
    import onnxruntime as ort

    from leapp_lab.egress import quiet_sessions
    quiet_sessions(ort)
    pending = taps.pending()
    if not pending:
        return
    import tempfile
    from pathlib import Path

    from leapp_lab.onnxio.weights import needs_external_data, write_external
    big = needs_external_data(untapped)
    # the outputs are added to the graph for the session and removed again: a copy of the model
    # would hold its weights once more; above the size bound a copy is made, and its weights move
    # to a temporary file as they are written (onnxruntime then reads them by path)
    if big:
        m = onnx.ModelProto()
        m.CopyFrom(untapped)
    else:
        m = untapped
    n_out = len(m.graph.output)
    n_node = len(m.graph.node)
    have = {o.name for o in m.graph.output}
    for t in pending:
        if t.tensor not in have:
            add_output(m.graph, t.tensor, t.tensor, t.dtype, t.shape)
            have.add(t.tensor)
    opts = session_options if session_options is not None else ort.SessionOptions()
    # onnxruntime's fusions would change the very values being used as the reference
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    tmp = None
    try:
        if big:
            tmp = tempfile.TemporaryDirectory(prefix="leapp-lab-ref-")
            src = str(Path(tmp.name) / "m.onnx")
            write_external(m, Path(src), Path(tmp.name) / "m.onnx.data", "m.onnx.data")
        else:
            try:
                src = m.SerializeToString()
            finally:
                del m.graph.output[n_out:]
                del m.graph.node[n_node:]
        sess = ort.InferenceSession(src, opts, providers=["CPUExecutionProvider"])
        del src
    except Exception as exc:
        custom = sorted({f"{n.domain}::{n.op_type}" for n in m.graph.node
                         if n.domain not in DEFAULT_DOMAINS})
        why = (f"no torch value has this name, and onnxruntime cannot run the graph "
               f"({first_line(exc)[:200]})")
        if custom:
            why += (f"; custom ops {custom} need a kernel: define get_ort_session_options() in "
                    f"the model file or pass session_options=")
        for t in pending:
            t.uncompared_reason = why
        taps.warnings.append(f"{len(pending)} tap(s) left uncompared: {why}")
        if tmp is not None:
            tmp.cleanup()
        return
    if tmp is not None:     # onnxruntime has read the weights
        tmp.cleanup()
    inputs = taps.input_arrays()
    wanted = sorted({t.tensor for t in pending})
    results: list[dict[str, np.ndarray]] = []
    for i in range(len(taps.samples)):
        feed = {k: v[i] for k, v in inputs.items()}
        outs = sess.run(wanted, feed)
        results.append(dict(zip(wanted, outs)))
    for t in pending:
        taps.refs[t.name] = [r[t.tensor] for r in results]
        t.reference_source = "onnxruntime"
        if t.shape is None:
            t.shape = list(results[0][t.tensor].shape)
        if t.dtype is None:
            t.dtype = str(results[0][t.tensor].dtype)

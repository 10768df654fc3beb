"""Prove an int8 tap's binding before any row is scored with it.

An int8 tensor is found in the engine by its quantization scale (ort_taps.bind_taps), and a scale is
shared along data-movement chains (Reshape -> Split -> Reshape ...): the match alone can point a tap
at a neighbour of another shape or of other values. So every bound int8 tap is checked on sample 0
against the fp32 chain it was converted from: the QDQ graph run unfused, where the tapped value is
``DequantizeLinear(QuantizeLinear(value))`` -- what the int8 kernels compute, up to their rounding.
A binding passes when the shapes agree and the values agree within ``MAX_REL_ERR`` (relative L2);
otherwise the reason is returned and the caller binds the tap another way or refuses it.
"""
from __future__ import annotations

import numpy as np
import onnx

from leapp_lab.model.tap import TapEntry

#: relative L2 error (||engine - chain|| / ||chain||) a bound int8 tap may show against the QDQ chain
#: on sample 0. Fused int8 kernels differ from the QDQ graph by requantization rounding (measured on
#: GPT-2 tiny and the conv nets: at most a few %); the value of a neighbouring tensor of the same
#: shape is uncorrelated and lands near 141 %
MAX_REL_ERR = 0.25


def chain_names(converted: onnx.ModelProto, taps: list[TapEntry]) -> dict[str, str]:
    """tap name -> the tensor of the QDQ graph that holds what its engine binding should show."""
    q_out = {n.input[0]: n.output[0] for n in converted.graph.node if n.op_type == "QuantizeLinear"}
    dq_of = {n.input[0]: n.output[0] for n in converted.graph.node if n.op_type == "DequantizeLinear"}
    have = ({o for n in converted.graph.node for o in n.output if o} | {i.name for i in converted.graph.input})
    out = {}
    for t in taps:
        if t.binding != "bound" or t.via == "alias":
            continue
        v = t.value
        q = q_out.get(v)
        name = dq_of.get(q, v) if q is not None else v
        if name in have:
            out[t.name] = name
    return out


def chain_values(converted: onnx.ModelProto, names: list[str], feed: dict, make_session) -> dict[str, np.ndarray]:
    """The values of ``names`` in the QDQ graph run unfused on ``feed``. The outputs are added to
    ``converted`` for the session and removed again (no copy of the graph is made)."""
    g = converted.graph
    have = {o.name for o in g.output}
    added = [n for n in dict.fromkeys(names) if n not in have]
    n0 = len(g.output)
    g.output.extend(onnx.ValueInfoProto(name=n) for n in added)
    try:
        sess = make_session(converted, optimize=False, what="the QDQ graph (tap check)")
    finally:
        del g.output[n0:]
    want = list(dict.fromkeys(names))
    vals = sess.run(want, feed)
    del sess
    return dict(zip(want, vals))


def refusals(taps: list[TapEntry], engine_vals: dict[str, np.ndarray], chain: dict[str, str],
             chain_vals: dict[str, np.ndarray]) -> dict[str, str]:
    """tap name -> why its binding does not carry its value (taps that pass are absent)."""
    bad = {}
    for t in taps:
        c = chain.get(t.name)
        if c is None or t.name not in engine_vals:
            continue
        e = np.asarray(engine_vals[t.name])
        ref = np.asarray(chain_vals[c])
        want = tuple(t.shape) if t.shape is not None else ref.shape
        if e.shape != ref.shape or e.shape != want:
            bad[t.name] = (f"engine tensor {t.bound_to!r} has shape {list(e.shape)}, the tap's value "
                           f"{t.value!r} has shape {list(want)}: the int8 scale it was matched by is "
                           f"shared with another tensor")
            continue
        e64, r64 = e.astype(np.float64), ref.astype(np.float64)
        finite = np.isfinite(e64) & np.isfinite(r64)
        norm = float(np.linalg.norm(r64[finite]))
        err = float(np.linalg.norm((e64 - r64)[finite]))
        rel = err / norm if norm > 0 else (0.0 if err == 0 else float("inf"))
        if rel > MAX_REL_ERR:
            bad[t.name] = (f"engine tensor {t.bound_to!r} differs from the tap's value {t.value!r} in the "
                           f"fp32 (QDQ) chain by {rel:.1%} (relative L2, sample 0; at most "
                           f"{MAX_REL_ERR:.0%} for the same value): it carries another tensor")
    return bad

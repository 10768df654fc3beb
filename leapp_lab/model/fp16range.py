"""fp16 headroom of a row, judged before any fp16 engine is built: the largest |value| the reference
reaches over the samples (``range_max``) against float16's largest value, and the sentence that
names a row an fp16 engine would overflow, with the ``--keep-fp32`` line that keeps it float32.

An fp16 engine on this machine cannot show the overflow itself: onnxruntime's CPU provider computes
float16 nodes in float32 and rounds only at the graph's Casts (docs/verify.md), so the range is read
from the reference, which holds what the model computes in float32."""
from __future__ import annotations

import math
from typing import Iterable

#: the largest finite float16
FP16_MAX = 65504.0
#: ModelOpt AutoCast's default ``data_max`` (modelopt/onnx/autocast/convert.py, DEFAULT_DATA_MAX):
#: a node whose inputs or outputs reach beyond it is kept in float32 by AutoCast, leaving room for
#: the sums inside the next layers
AUTOCAST_DATA_MAX = 512.0


def headroom(range_max: float | None) -> float | None:
    """How many times larger the values could grow before float16 overflows (< 1: they overflow
    already; 0 for an infinite reference value); None without a range (no float values)."""
    if range_max is None or math.isnan(range_max):
        return None
    if range_max == 0:
        return None               # all zero: no range to lose (and JSON holds no inf)
    return FP16_MAX / range_max


def risk(range_max: float | None) -> str | None:
    """``overflow`` (beyond 65504: an fp16 engine makes it inf), ``beyond-autocast-limit`` (beyond
    AutoCast's default 512: AutoCast would keep it float32), or None."""
    if range_max is None or math.isnan(range_max):
        return None
    if range_max > FP16_MAX:
        return "overflow"
    if range_max > AUTOCAST_DATA_MAX:
        return "beyond-autocast-limit"
    return None


def keep_line(nodes: Iterable[str]) -> str:
    return " ".join(f"--keep-fp32 {n}" for n in dict.fromkeys(nodes) if n)


def overflow_sentence(kind: str, name: str, range_max: float, nodes: list[str]) -> str:
    """The warning of one row that overflows float16; ``nodes``: its producer, then the nodes that
    read it (a kept producer's float32 value is cast back to float16 for an fp16 reader)."""
    what = "output" if kind == "output" else f"{kind} tap" if kind in ("manual", "plugin", "op") else "row"
    keep = keep_line(nodes)
    return (f"fp16 overflow: {what} {name!r} reaches |value| {range_max:.6g} on the samples, beyond "
            f"float16's largest value {FP16_MAX:.0f} (fp16_headroom {headroom(range_max):.3g}): an fp16 "
            f"engine (ort-fp16, trt-fp16) makes it inf"
            + (f"; keep it in fp32: compile --engine ort-fp16 {keep}" if keep else
               "; keep the node that computes it in fp32 (--keep-fp32 NODE)"))


def fill(rows, arrays_max: dict[str, float | None], readers: dict[str, list[str]] | None = None
         ) -> list[str]:
    """Set ``range_max`` / ``fp16_headroom`` on each row whose name ``arrays_max`` holds; return the
    overflow sentences, in row order. ``readers``: value -> the nodes that read it (for the keep
    line; None: the producer alone)."""
    out = []
    for r in rows:
        if r.name not in arrays_max:
            continue
        r.range_max = arrays_max[r.name]
        r.fp16_headroom = headroom(r.range_max)
        if risk(r.range_max) == "overflow":
            nodes = [r.producer_node or ""] + list((readers or {}).get(r.value, []))
            out.append(overflow_sentence(r.kind, r.name, r.range_max, nodes))
    return out

"""Segments of a prepared model: the model-order stretch of ONNX nodes that produces each tap.

The manifest gives every tap and output its model order (the index of its producing node in the
prepared graph). Segment k holds the nodes after the previous entry's node up to and including its
own; entries that end at the same node share a segment; nodes after the last entry join the last
segment. The Identity nodes prepare added to expose taps belong to no segment.
"""
from __future__ import annotations

import collections
import os

from leapp_lab.model.repair import Segment
from leapp_lab.onnxio.manifest import IDENTITY_PREFIX, read_manifest

#: engines whose kept nodes must also cover the nodes reading their values: a QDQ tensor is
#: quantized when any node touching it is quantized
_READERS_TOO = ("ort-int8",)


def segments(onnx_model, engine: str = "ort-int8", path: str | os.PathLike | None = None
             ) -> tuple[list[Segment], list[str]]:
    """The segments of ``onnx_model`` (a path or ModelProto) in model order, and warnings (nodes
    without a name, which no engine can be told to keep in fp32)."""
    import onnx

    model = onnx_model if isinstance(onnx_model, onnx.ModelProto) else onnx.load(
        os.fspath(onnx_model), load_external_data=False)
    manifest = read_manifest(model, path if path is not None else (
        onnx_model if not isinstance(onnx_model, onnx.ModelProto) else None))
    nodes = list(model.graph.node)
    ends: dict[int, list] = collections.OrderedDict()
    for e in manifest.rows():
        if e.order is None or e.order < 0 or e.order >= len(nodes):
            continue            # a graph input (or an entry without a node): nothing computes it
        ends.setdefault(e.order, []).append(e)
    warnings = []
    out: list[Segment] = []
    unnamed = 0
    prev = -1
    bounds = sorted(ends)
    for k, end in enumerate(bounds):
        last = k == len(bounds) - 1
        stop = len(nodes) - 1 if last else end
        stretch = [n for n in nodes[prev + 1:stop + 1] if not n.name.startswith(IDENTITY_PREFIX)]
        unnamed += sum(1 for n in stretch if not n.name)
        named = [n for n in stretch if n.name]
        prev = end
        if not named:
            continue
        entries = ends[end]
        head = next((e for e in entries if e.is_tap), entries[0])
        out.append(Segment(name=head.name, kind=head.kind, order=end, taps=[e.name for e in entries],
                           nodes=[n.name for n in named], ops=dict(collections.Counter(n.op_type for n in named)),
                           source=head.source))
    if unnamed:
        warnings.append(f"{unnamed} ONNX nodes have no name: no engine can be told to keep them in fp32, "
                        "so they stay in reduced precision whatever is chosen")
    readers = collections.defaultdict(list)
    for n in nodes:
        if n.name and not n.name.startswith(IDENTITY_PREFIX):
            for v in n.input:
                readers[v].append(n.name)
    for s in out:
        keep = list(s.nodes)
        if engine in _READERS_TOO:
            mine = set(s.nodes)
            produced = [o for n in nodes if n.name in mine for o in n.output if o]
            keep += [r for v in produced for r in readers.get(v, []) if r not in mine]
        s.keep = list(dict.fromkeys(keep))
    return out, warnings


def keep_fp32(segs: list[Segment], names) -> list[str]:
    """The node names to keep in fp32 for the segments named ``names``."""
    want = set(names)
    return sorted({n for s in segs if s.name in want for n in s.keep})


def most_at_once(segments: int, budget: int | None, rank: str) -> int:
    """The most builds a repair has at once: ``output``, its first round (one build per segment, or
    what the budget leaves beside the baseline and the proof); ``excess``, one at a time."""
    if rank == "excess":
        return 1
    return max(1, segments if budget is None else min(segments, int(budget) - 2))

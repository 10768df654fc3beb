"""An ONNX file as its graph (parsed) and its weights (bytes, never parsed).

Parsing a 45 MB engine.onnx took 40-80 ms here, twice per verify (the accuracy graph, and the
prepared graph's scopes), and serializing an edited copy again 0.2-0.3 s (upb copies every
initializer); neither the graph view nor teacher forcing ever reads a weight. So the
initializers' serialized bytes are cut out of the file as they are, the small rest is parsed, and a
session that needs the weights is given ``model + graph{initializers}``: protobuf merges a repeated
embedded field (ModelProto.graph, field 7) by appending its repeated fields, so the result parses as
the (edited) graph with the original weights.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import onnx

_GRAPH, _INITIALIZER, _NAME = 7, 5, 8


@dataclass
class SplitModel:
    """``model``: the ModelProto without its initializers; ``weights``: the pieces of a serialized
    ``graph`` field holding them (views of the file's bytes; empty when ``model`` kept them);
    ``initializer_names``: their names."""
    model: onnx.ModelProto
    weights: list = field(default_factory=list)
    initializer_names: set = field(default_factory=set)

    def serialized(self) -> bytes:
        """The whole model as onnxruntime loads it."""
        return b"".join([self.model.SerializeToString(), *self.weights])


def load_split(path: str | Path) -> SplitModel:
    """``split_model`` of the file at ``path`` (raises OSError, or DecodeError for a foreign file).

    The file is memory-mapped, not read: walking the fields touches a few pages per weight, and the
    weights' pieces stay views of the map (copying 45 MB out of the page cache took ~25 ms)."""
    import mmap
    with open(path, "rb") as fh:
        try:
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):      # an empty file, or a file system without mmap
            return split_model(fh.read())
    return split_model(data)


def split_model(data) -> SplitModel:
    """The model in ``data`` (bytes, or an mmap: the pieces keep it alive) split into graph and
    weights. Falls back to parsing everything when
    the bytes are not laid out as expected (then ``weights`` is empty and ``model`` whole)."""
    try:
        view = memoryview(data)
        top, inits, names = [], [], set()
        size = 0
        graphs = 0
        for num, fs, vs, end in _fields(data, 0, len(data)):
            if num != _GRAPH:
                top.append(view[fs:end])
                continue
            graphs += 1
            rest = []
            for gnum, gfs, gvs, gend in _fields(data, vs, end):
                if gnum == _INITIALIZER:
                    inits.append(view[gfs:gend])
                    size += gend - gfs
                    names.update(bytes(view[nvs:nend]).decode() for nnum, _, nvs, nend
                                 in _fields(data, gvs, gend) if nnum == _NAME)
                else:
                    rest.append(view[gfs:gend])
            body = b"".join(rest)
            top.append(_key_len(_GRAPH, len(body)) + body)
        if graphs != 1:
            raise ValueError(f"{graphs} graph fields")
        m = onnx.ModelProto()
        m.ParseFromString(b"".join(top))
        return SplitModel(m, ([_key_len(_GRAPH, size), *inits] if inits else []), names)
    except (ValueError, IndexError, UnicodeDecodeError):
        m = onnx.load_from_string(bytes(data))
        return SplitModel(m, [], {i.name for i in m.graph.initializer})


def _varint(b: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7


def _fields(b: bytes, start: int, end: int):
    """(field number, start of the field, start of its value, end) of each field in b[start:end]."""
    i = start
    while i < end:
        fs = i
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            _, i = _varint(b, i)
            vs = i
        elif wt == 1:
            vs, i = i, i + 8
        elif wt == 2:
            n, vs = _varint(b, i)
            i = vs + n
        elif wt == 5:
            vs, i = i, i + 4
        else:
            raise ValueError(f"unexpected protobuf wire type {wt}")
        if i > end:
            raise ValueError("truncated protobuf field")
        yield num, fs, vs, i


def _key_len(num: int, n: int) -> bytes:
    out = bytearray()
    for v in ((num << 3) | 2, n):
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out)

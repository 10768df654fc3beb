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

from .wire import fields

_GRAPH, _INITIALIZER, _NAME, _RAW_DATA = 7, 5, 8, 9
#: a weight at least this large is referenced in place by ``external`` (smaller ones stay inline:
#: onnxruntime reads some, e.g. a ReduceMean's axes, while it infers shapes)
EXTERNAL_MIN_BYTES = 4096


@dataclass
class SplitModel:
    """``model``: the ModelProto without its initializers; ``weights``: the pieces of a serialized
    ``graph`` field holding them (views of the file's bytes; empty when ``model`` kept them);
    ``initializer_names``: their names."""
    model: onnx.ModelProto
    weights: list = field(default_factory=list)
    initializer_names: set = field(default_factory=set)
    #: ``weights`` again, the large ones as external data at their own offsets in ``file`` (in
    #: ``folder``): onnxruntime then reads them from the file instead of parsing them out of the
    #: serialized model (a 45 MB engine's session: ~60 -> ~10 ms here); empty when not split from a file
    external: list = field(default_factory=list)
    folder: Path | None = None

    def serialized(self) -> bytes:
        """The whole model as onnxruntime loads it."""
        return b"".join([self.model.SerializeToString(), *self.weights])


def load_split(path: str | Path) -> SplitModel:
    """``split_model`` of the file at ``path`` (raises OSError, or DecodeError for a foreign file).

    The file is memory-mapped, not read: walking the fields touches a few pages per weight, and the
    weights' pieces stay views of the map (copying 45 MB out of the page cache took ~25 ms)."""
    import mmap
    path = Path(path)
    from leapp_lab.model.safepaths import open_input
    with open_input(path, "an ONNX model") as fh:
        try:
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):      # an empty file, or a file system without mmap
            data = fh.read()
    return split_model(data, path)


def split_model(data, path: Path | None = None) -> SplitModel:
    """The model in ``data`` (bytes, or an mmap: the pieces keep it alive) split into graph and
    weights; ``path``: the file ``data`` was read from (then ``external`` is filled too). Falls
    back to parsing everything when the bytes are not laid out as expected (then ``weights`` is
    empty and ``model`` whole)."""
    try:
        view = memoryview(data)
        top, inits, names = [], [], set()
        ext: list = []
        size = ext_size = 0
        graphs = 0
        for num, _, fs, vs, end in fields(data, 0, len(data)):
            if num != _GRAPH:
                top.append(view[fs:end])
                continue
            graphs += 1
            rest = []
            for gnum, _, gfs, gvs, gend in fields(data, vs, end):
                if gnum == _INITIALIZER:
                    inits.append(view[gfs:gend])
                    size += gend - gfs
                    sub = [(n, fs_, vs_, e) for n, _, fs_, vs_, e in fields(data, gvs, gend)]
                    names.update(bytes(view[nvs:nend]).decode() for nnum, _, nvs, nend in sub if nnum == _NAME)
                    if path is not None:
                        piece = _external(view, sub, path.name) or view[gfs:gend]
                        ext.append(piece)
                        ext_size += len(piece)
                else:
                    rest.append(view[gfs:gend])
            body = b"".join(rest)
            top.append(_key_len(_GRAPH, len(body)) + body)
        if graphs != 1:
            raise ValueError(f"{graphs} graph fields")
        m = onnx.ModelProto()
        m.ParseFromString(b"".join(top))
        return SplitModel(m, ([_key_len(_GRAPH, size), *inits] if inits else []), names,
                          ([_key_len(_GRAPH, ext_size), *ext] if ext else []),
                          path.parent if path is not None else None)
    except (ValueError, IndexError, UnicodeDecodeError):
        m = onnx.load_from_string(bytes(data))
        return SplitModel(m, [], {i.name for i in m.graph.initializer})


def _external(view: memoryview, sub: list, location: str) -> bytes | None:
    """The serialized ``initializer`` field of a weight whose raw_data (``sub``: its fields) is at
    least EXTERNAL_MIN_BYTES, with that data referenced at its offset in the file ``location``
    instead; None to keep it as it is."""
    from onnx import TensorProto
    raw = [(vs, end) for num, _, vs, end in sub if num == _RAW_DATA]
    if len(raw) != 1 or raw[0][1] - raw[0][0] < EXTERNAL_MIN_BYTES:
        return None
    t = TensorProto()
    t.ParseFromString(b"".join(bytes(view[fs:end]) for num, fs, _, end in sub if num != _RAW_DATA))
    if t.data_location == TensorProto.EXTERNAL:
        return None
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(raw[0][0])), ("length", str(raw[0][1] - raw[0][0]))):
        e = t.external_data.add()
        e.key, e.value = k, v
    body = t.SerializeToString()
    return _key_len(_INITIALIZER, len(body)) + body


def _key_len(num: int, n: int) -> bytes:
    out = bytearray()
    for v in ((num << 3) | 2, n):
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out)

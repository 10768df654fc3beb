"""A prepared model's graph without its weights, the weights left in their files.

compile edits graphs (strips taps, exposes them, rewrites for int8) but never reads a weight: only
onnxruntime does, and it reads external data by path. So the prepared ONNX is split where it lies
(``split.load_split``: each large initializer becomes a reference to its own bytes in that file,
or stays a reference to the file of a model saved with external data), and the sessions that read
those weights are given the model's folder. Every graph of the build is then a few hundred kB,
whatever the model's size -- and a model above protobuf's 2 GB limit is never serialized whole.
(Linking the files into the build's folder instead fails across file systems: onnx refuses hard
links and onnxruntime a symbolic link that leaves the folder.)
"""
from __future__ import annotations

import os
from pathlib import Path

import onnx
from onnx import TensorProto

from .split import load_split

def load_weightless(path: str | os.PathLike) -> onnx.ModelProto:
    """The model at ``path`` with each large initializer as external data (its bytes stay in the
    file they are in). ``link_weights`` then makes the references valid in another folder."""
    sm = load_split(Path(path))
    model = sm.model
    if sm.external:
        model.MergeFromString(b"".join(bytes(p) for p in sm.external))
    elif sm.weights:
        model.MergeFromString(b"".join(bytes(p) for p in sm.weights))
    return model


def _tensors(model: onnx.ModelProto):
    yield from model.graph.initializer
    for n in model.graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                yield a.t


def check_weights(model: onnx.ModelProto, source: Path) -> None:
    """Every external data file of ``model`` (read from ``source``) is a file beside it;
    FileNotFoundError naming the first that is not."""
    seen = set()
    for t in _tensors(model):
        if t.data_location != TensorProto.EXTERNAL:
            continue
        loc = next((e.value for e in t.external_data if e.key == "location"), "")
        if loc in seen:
            continue
        seen.add(loc)
        if Path(loc).name != loc or not (Path(source).parent / loc).is_file():
            raise FileNotFoundError(f"{source}: its weights are external data in {loc!r}, which is not a "
                                    f"file beside it; keep the .onnx and its data file together")


def inline_weights(model: onnx.ModelProto, folder: Path) -> onnx.ModelProto:
    """A copy of ``model`` with its external data read back in from ``folder`` (for a converter
    that loads the model through onnx from another folder)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    handles: dict[str, object] = {}
    try:
        for t in _tensors(m):
            if t.data_location != TensorProto.EXTERNAL:
                continue
            info = {e.key: e.value for e in t.external_data}
            loc = info.get("location", "")
            if Path(loc).name != loc:
                raise ValueError(f"external data location {loc!r} of {t.name!r} is not a file name")
            fh = handles.get(loc) or handles.setdefault(loc, open(Path(folder) / loc, "rb"))
            fh.seek(int(info.get("offset", 0)))
            n = info.get("length")
            t.raw_data = fh.read(int(n)) if n is not None else fh.read()
            del t.external_data[:]
            t.data_location = TensorProto.DEFAULT
    finally:
        for fh in handles.values():
            fh.close()
    return m


#: a prepared model whose proto is larger than this is written with its weights in
#: ``<model>.onnx.data`` beside it: protobuf cannot serialize a message of 2 GiB or more, and the
#: graph and small tensors need room below that
EXTERNAL_DATA_ENV = "LEAPP_LAB_EXTERNAL_DATA_MIB"
EXTERNAL_DATA_DEFAULT = 1536 << 20
_ALIGN = 4096      # onnxruntime memory-maps external data at page-aligned offsets


def data_file_name(onnx_name: str) -> str:
    return onnx_name + ".data"


def needs_external_data(proto: onnx.ModelProto) -> bool:
    from leapp_lab.model.limits import mib_limit
    bound = mib_limit(EXTERNAL_DATA_ENV, EXTERNAL_DATA_DEFAULT, "the model size above which prepare "
                                                               "writes the weights as external data")
    try:
        return proto.ByteSize() > bound
    except Exception:  # noqa: BLE001 - protobuf cannot even size a message of 2 GiB or more
        return True


def write_external(proto: onnx.ModelProto, onnx_path: Path, data_path: Path, location: str) -> None:
    """Write ``proto`` to ``onnx_path`` with each weight of at least ``split.EXTERNAL_MIN_BYTES``
    moved to ``data_path``, referenced as ``location`` (the data file's final name, beside the
    model). The weights leave ``proto`` as they are written: nothing is held twice."""
    from .split import EXTERNAL_MIN_BYTES
    with open(data_path, "wb") as fh:
        for t in _tensors(proto):
            if t.data_location == TensorProto.EXTERNAL or not t.HasField("raw_data"):
                continue
            n = len(t.raw_data)
            if n < EXTERNAL_MIN_BYTES:
                continue
            pad = -fh.tell() % _ALIGN
            if pad:
                fh.write(b"\0" * pad)
            off = fh.tell()
            fh.write(t.raw_data)
            t.ClearField("raw_data")
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", location), ("offset", str(off)), ("length", str(n))):
                e = t.external_data.add()
                e.key, e.value = k, v
    with open(onnx_path, "wb") as fh:
        fh.write(proto.SerializeToString())

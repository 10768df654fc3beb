"""The top-level graph of an ONNX file read from its protobuf wire format, without ``import onnx``.

``import onnx`` costs 0.8-1.6 s of start-up here (most of it ``ml_dtypes``, which onnx.helper
loads), far more than scoring a small verify; the accuracy graph a verify report stores
(``compare.engine_graph``) needs only a few string fields of ``ModelProto.graph``. So this module
walks the wire format itself and returns plain objects with the attribute names of onnx's
messages (``graph.node[i].op_type``, ``.input``, ``.metadata_props[j].key`` ...), which
``engine_graph.graph_of`` reads exactly as it reads an ``onnx.GraphProto``. Weights are skipped by
their length (only an initializer's name is decoded), attributes and subgraphs are not read.

Field numbers are those of onnx.proto (stable since IR version 3; tests/unit/test_onnx_wire.py
compares this reader with onnx's own parse). Protobuf's merge rules are kept: a message field that
occurs twice is merged (its repeated fields appended, its last scalar wins).
"""
from __future__ import annotations

import mmap
import os
from contextlib import contextmanager
from typing import Iterator
from dataclasses import dataclass, field

# ModelProto.graph; GraphProto.node / initializer / input / output; NodeProto.input / output /
# name / op_type / domain / metadata_props; ValueInfoProto.name, TensorProto.name,
# StringStringEntryProto.key / value
_MODEL_GRAPH = 7
_G_NODE, _G_INITIALIZER, _G_INPUT, _G_OUTPUT = 1, 5, 11, 12
_N_INPUT, _N_OUTPUT, _N_NAME, _N_OP_TYPE, _N_DOMAIN, _N_METADATA = 1, 2, 3, 4, 7, 9
_VI_NAME, _T_NAME, _E_KEY, _E_VALUE = 1, 8, 1, 2
_T_EXTERNAL_DATA = 13     # TensorProto.external_data: StringStringEntryProto (location, offset, length)
_LEN = 2     # wire type of a length-delimited field (strings, messages, packed numbers)


@dataclass
class Entry:
    """A ``StringStringEntryProto`` (a node's ``metadata_props`` item)."""
    key: str = ""
    value: str = ""


@dataclass
class Named:
    """A ``ValueInfoProto`` or an initializer ``TensorProto``, as far as its ``name``."""
    name: str = ""


@dataclass
class Node:
    """A ``NodeProto`` without its attributes."""
    input: list = field(default_factory=list)
    output: list = field(default_factory=list)
    name: str = ""
    op_type: str = ""
    domain: str = ""
    metadata_props: list = field(default_factory=list)


@dataclass
class Graph:
    """A ``GraphProto``'s nodes, inputs, outputs and initializer names (in file order)."""
    node: list = field(default_factory=list)
    input: list = field(default_factory=list)
    output: list = field(default_factory=list)
    initializer: list = field(default_factory=list)


@contextmanager
def _mapped(path: str | os.PathLike) -> Iterator[bytes | mmap.mmap]:
    """The bytes of the file at ``path``, memory-mapped where the file system allows (the weights'
    pages are never touched), opened through the checked open (a FIFO or a device is refused)."""
    from leapp_lab.model.safepaths import open_input
    with open_input(path, "an ONNX model") as fh:
        try:
            data: bytes | mmap.mmap = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):      # an empty file, or a file system without mmap
            data = fh.read()
    try:
        yield data
    finally:
        if isinstance(data, mmap.mmap):
            data.close()


def read_graph(path: str | os.PathLike) -> Graph:
    """The top-level graph of the ONNX file at ``path``. Raises OSError, or ValueError for bytes
    that are not a protobuf message (a truncated or foreign file). The file is memory-mapped: the
    weights' pages are never touched."""
    with _mapped(path) as data:
        return parse_graph(data)


def check_external_data(path: str | os.PathLike) -> None:
    """Every external-data file the ONNX model at ``path`` names is checked before onnx or
    onnxruntime opens it (``safepaths.check_input_file``): a FIFO, a device or a dangling link
    there is refused naming it, never read. A file that is not protobuf is left to its reader."""
    from pathlib import Path

    from leapp_lab.model.safepaths import check_input_file
    try:
        names = external_data_locations(path)
    except (ValueError, IndexError):
        return
    for name in names:
        check_input_file(Path(path).parent / name, f"the external data of the ONNX model {path}")


def parse_graph(data) -> Graph:
    """``read_graph`` of serialized ModelProto bytes (bytes or an mmap)."""
    g = Graph()
    for num, wt, _, vs, end in fields(data, 0, len(data)):
        if num == _MODEL_GRAPH and wt == _LEN:
            _graph_into(g, data, vs, end)
    return g


def _graph_into(g: Graph, b, start: int, end: int) -> None:
    for num, wt, _, vs, ve in fields(b, start, end):
        if wt != _LEN:
            continue
        if num == _G_NODE:
            g.node.append(_node(b, vs, ve))
        elif num == _G_INITIALIZER:
            g.initializer.append(Named(_last_string(b, vs, ve, _T_NAME)))
        elif num == _G_INPUT:
            g.input.append(Named(_last_string(b, vs, ve, _VI_NAME)))
        elif num == _G_OUTPUT:
            g.output.append(Named(_last_string(b, vs, ve, _VI_NAME)))


def _node(b, start: int, end: int) -> Node:
    n = Node()
    for num, wt, _, vs, ve in fields(b, start, end):
        if wt != _LEN:
            continue
        if num == _N_INPUT:
            n.input.append(_str(b, vs, ve))
        elif num == _N_OUTPUT:
            n.output.append(_str(b, vs, ve))
        elif num == _N_NAME:
            n.name = _str(b, vs, ve)
        elif num == _N_OP_TYPE:
            n.op_type = _str(b, vs, ve)
        elif num == _N_DOMAIN:
            n.domain = _str(b, vs, ve)
        elif num == _N_METADATA:
            n.metadata_props.append(Entry(_last_string(b, vs, ve, _E_KEY), _last_string(b, vs, ve, _E_VALUE)))
    return n


def _last_string(b, start: int, end: int, number: int) -> str:
    """The string field ``number`` of the message in b[start:end] ("" when absent; the last wins)."""
    out = ""
    for num, wt, _, vs, ve in fields(b, start, end):
        if num == number and wt == _LEN:
            out = _str(b, vs, ve)
    return out


def _str(b, start: int, end: int) -> str:
    return str(b[start:end], "utf-8")


def varint(b, i: int) -> tuple[int, int]:
    """The varint at b[i] and the index after it."""
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7
        if shift > 63:
            raise ValueError("malformed protobuf varint")


def fields(b, start: int, end: int):
    """(field number, wire type, start of the field, start of its value, end) of each field in
    b[start:end]; raises ValueError for a wire type protobuf does not write here, or a field
    running past ``end``."""
    i = start
    while i < end:
        fs = i
        key = b[i]
        if key < 0x80:      # one-byte keys and lengths, the common case, without a call
            i += 1
        else:
            key, i = _checked_varint(b, i, end)
        num, wt = key >> 3, key & 7
        if wt == 0:
            _, i = _checked_varint(b, i, end)
            vs = i
        elif wt == 1:
            vs, i = i, i + 8
        elif wt == _LEN:
            n = b[i] if i < end else 0x80
            if n < 0x80:
                vs = i + 1
            else:
                n, vs = _checked_varint(b, i, end)
            i = vs + n
        elif wt == 5:
            vs, i = i, i + 4
        else:
            raise ValueError(f"unexpected protobuf wire type {wt}")
        if num == 0 or i > end:
            raise ValueError("truncated or malformed protobuf field")
        yield num, wt, fs, vs, i


def _checked_varint(b, i: int, end: int) -> tuple[int, int]:
    try:
        v, j = varint(b, i)
    except IndexError:
        raise ValueError("truncated protobuf varint") from None
    if j > end:
        raise ValueError("truncated protobuf varint")
    return v, j


# ModelProto.functions / training_info; FunctionProto.node; TrainingInfoProto.initialization /
# algorithm; GraphProto.sparse_initializer; NodeProto.attribute; AttributeProto.t / g / tensors /
# graphs / sparse_tensor / sparse_tensors; SparseTensorProto.values / indices; TensorProto.external_data
_MODEL_FUNCTIONS, _MODEL_TRAINING = 25, 20
_F_NODE, _TI_GRAPHS = 7, (1, 2)
_G_SPARSE, _N_ATTRIBUTE = 15, 5
_A_TENSORS, _A_GRAPHS, _A_SPARSE = (5, 10), (6, 11), (22, 23)
_S_TENSORS = (1, 2)


def external_data_locations(path: str | os.PathLike) -> list[str]:
    """The ``location`` of every tensor of the ONNX file at ``path`` whose data lies in another file
    (initializers, sparse initializers, node attributes, subgraphs and functions at any depth),
    sorted, each once. Raises OSError, or ValueError for bytes that are not a protobuf message."""
    with _mapped(path) as data:
        found: set[str] = set()
        for num, wt, _, vs, ve in fields(data, 0, len(data)):
            if wt != _LEN:
                continue
            if num == _MODEL_GRAPH:
                _graph_external(data, vs, ve, found)
            elif num == _MODEL_FUNCTIONS:
                _nodes_external(data, vs, ve, _F_NODE, found)
            elif num == _MODEL_TRAINING:
                for n2, w2, _, s2, e2 in fields(data, vs, ve):
                    if n2 in _TI_GRAPHS and w2 == _LEN:
                        _graph_external(data, s2, e2, found)
        return sorted(found)


def _graph_external(b, start: int, end: int, found: set[str]) -> None:
    for num, wt, _, vs, ve in fields(b, start, end):
        if wt != _LEN:
            continue
        if num == _G_INITIALIZER:
            _tensor_external(b, vs, ve, found)
        elif num == _G_SPARSE:
            _sparse_external(b, vs, ve, found)
    _nodes_external(b, start, end, _G_NODE, found)


def _nodes_external(b, start: int, end: int, node_field: int, found: set[str]) -> None:
    for num, wt, _, vs, ve in fields(b, start, end):
        if num != node_field or wt != _LEN:
            continue
        for n2, w2, _, s2, e2 in fields(b, vs, ve):
            if n2 != _N_ATTRIBUTE or w2 != _LEN:
                continue
            for n3, w3, _, s3, e3 in fields(b, s2, e2):
                if w3 != _LEN:
                    continue
                if n3 in _A_TENSORS:
                    _tensor_external(b, s3, e3, found)
                elif n3 in _A_GRAPHS:
                    _graph_external(b, s3, e3, found)
                elif n3 in _A_SPARSE:
                    _sparse_external(b, s3, e3, found)


def _sparse_external(b, start: int, end: int, found: set[str]) -> None:
    for num, wt, _, vs, ve in fields(b, start, end):
        if num in _S_TENSORS and wt == _LEN:
            _tensor_external(b, vs, ve, found)


def _tensor_external(b, start: int, end: int, found: set[str]) -> None:
    for num, wt, _, vs, ve in fields(b, start, end):
        if num == _T_EXTERNAL_DATA and wt == _LEN and _last_string(b, vs, ve, _E_KEY) == "location":
            found.add(_last_string(b, vs, ve, _E_VALUE))

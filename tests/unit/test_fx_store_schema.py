"""A stored node graph is data (leapp_lab/fxio/schema.py, ops.py): closed call targets, typed
arguments, and a malformed field named with its file and node.

The payloads (tests/fx_payloads.py) are the probe's chains: getattr walks from a tensor to the
builtins and calls exec through max(key=...), through operator.call, or takes __import__ with a
call_method 'get' on the builtins dict. On the store before the schema each of them wrote the
marker file when the rebuilt module was called."""
from __future__ import annotations

import json
import operator
import sys
from pathlib import Path

import pytest
import torch
import torch.fx as fx

from leapp_lab.fxio import ops, schema
from leapp_lab.fxio import store as fx_store
from leapp_lab.fxio.store import FxStoreError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fx_payloads  # noqa: E402


def _gm():
    """Shaped like LEAPP's graphs: chunk + getitem on its tuple with int indices, an LSTM cell's
    tuple output, a method __setitem__, operator.sub on two item() scalars, a dtype, a slice."""
    root = torch.nn.Module()
    torch.manual_seed(0)
    root.register_buffer("_tensor_constant0", torch.randn(4, 8))
    g = fx.Graph()
    x = g.placeholder("obs")
    w = g.get_attr("_tensor_constant0")
    m = g.call_function(torch.matmul, (x, w))
    ch = g.call_function(torch.chunk, (m, 2), {"dim": -1})
    a = g.call_function(operator.getitem, (ch, 0))
    b = g.call_function(operator.getitem, (ch, 1))
    s = g.call_function(torch.add, (a, b))
    g.call_method("__setitem__", (s, (slice(None), 0), 0.0))
    i0 = g.call_method("item", (g.call_function(operator.getitem, (s, (0, 1))),))
    i1 = g.call_method("item", (g.call_function(operator.getitem, (s, (0, 2))),))
    d = g.call_function(operator.sub, (i0, i1))
    t = g.call_method("to", (g.call_function(torch.mul, (s, d)), torch.float32))
    e = g.call_function(torch.functional.einsum, ("bi,bj->bij", t, t))
    g.output((t, e))
    return fx.GraphModule(root, g)


@pytest.fixture
def saved(tmp_path):
    d = tmp_path / "n"
    fx_store.save(d, _gm())
    return d


def _edit(d: Path, edit) -> Path:
    p = d / fx_store.MODULE_FILE
    doc = json.loads(p.read_text())
    edit(doc, {n["name"]: n for n in doc["nodes"]})
    p.write_text(json.dumps(doc))
    return d


def test_leapp_shaped_graph_round_trips(saved):
    back, doc = fx_store.load(saved)
    x = torch.randn(2, 4)
    for want, got in zip(_gm()(x), back(x)):
        assert torch.equal(want, got)
    kinds = {(n["op"], n["target"]) for n in doc["nodes"]}
    assert ("call_function", "_operator.getitem") in kinds and ("call_method", "__setitem__") in kinds


@pytest.mark.parametrize("payload", sorted(fx_payloads.PAYLOADS))
def test_the_probes_chains_are_refused_and_run_nothing(saved, tmp_path, payload):
    marker = tmp_path / "MARKER"
    fx_payloads.craft(saved, payload, marker)
    with pytest.raises(FxStoreError) as err:
        fx_store.load(saved)
    msg = str(err.value)
    assert str(saved / "module.json") in msg and "pw_cls" in msg and "'target'" in msg, msg
    assert "builtins.getattr" in msg and "trace the pipeline again" in msg
    assert not marker.exists()


@pytest.mark.parametrize("target", ["builtins.getattr", "builtins.max", "builtins.min", "_operator.call",
                                    "_operator.attrgetter", "_operator.methodcaller", "builtins.exec",
                                    "builtins.eval", "builtins.__import__", "torch.load", "torch.save",
                                    "torch.Tensor.register_hook", "torch.Tensor.apply_",
                                    "torch.Tensor.type", "torch.Tensor.numpy", "torch._C._nn.__dict__",
                                    "torch.ops.aten.add.Tensor", "posix.system", 42, None, ["torch.add"]])
def test_targets_outside_the_closed_list_are_refused(saved, target):
    def edit(doc, nodes):
        nodes["add"]["target"] = target
    with pytest.raises(FxStoreError, match=r"nodes\[\d+\] \('add'\): field 'target'"):
        fx_store.load(_edit(saved, edit))


@pytest.mark.parametrize("method", ["get", "__call__", "__getattribute__", "__reduce_ex__", "register_hook",
                                    "apply_", "map_", "numpy", "tolist", "storage", "type", "cuda", "__class__"])
def test_methods_outside_the_closed_list_are_refused(saved, method):
    def edit(doc, nodes):
        nodes["item"]["target"] = method
    with pytest.raises(FxStoreError, match=r"\('item'\): field 'target': .* not a tensor method"):
        fx_store.load(_edit(saved, edit))


def _arg(name, j, v):
    def edit(doc, nodes):
        nodes[name]["args"][j] = v
    return edit


def _nested(depth):
    v = [1]
    for _ in range(depth):
        v = [v]
    return v


def _field(name, key, v):
    def edit(doc, nodes):
        nodes[name][key] = v
    return edit


@pytest.mark.parametrize("edit, field, says", [
    (_arg("getitem", 1, "__builtins__"), "args[1]", "expected an index"),
    (_arg("getitem", 1, {"tuple": ["x", 0]}), "args[1].tuple[0]", "expected an index"),
    (_arg("getitem", 0, "obs"), "args[0]", "expected a node reference"),
    (_arg("sub", 0, "__import__"), "args[0]", "expected a node or a number"),
    (_arg("sub", 1, [1, 2]), "args[1]", "expected a node or a number"),
    (_arg("matmul", 1, {"node": "nowhere"}), "args[1]", "no earlier node"),
    (_arg("matmul", 1, {"node": "output"}), "args[1]", "no earlier node"),
    (_arg("add", 1, "__class__"), "args[1]", "not a plain mode"),
    (_arg("add", 1, "x; import os"), "args[1]", "not a plain mode"),
    (_arg("add", 1, {"dict": [["a", 1]]}), "args[1]", "tagged 'dict'"),
    (_arg("add", 1, {"size": "abc"}), "args[1]", "expected a list"),
    (_arg("add", 1, {"size": ["1"]}), "args[1].size[0]", "expected an integer"),
    (_arg("add", 1, {"slice": [0, 1]}), "args[1]", "[start, stop, step]"),
    (_arg("add", 1, {"slice": [0, "a", None]}), "args[1].slice[1]", "expected a node reference"),
    (_arg("add", 1, {"dtype": "__class__"}), "args[1]", "not one of torch's"),
    (_arg("add", 1, {"device": "cpu'); import os"}), "args[1]", "not a device name"),
    (_arg("add", 1, {"float": "1e400"}), "args[1]", "expected 'inf'"),
    (_arg("add", 1, {"ellipsis": "yes"}), "args[1]", "must be true"),
    (_arg("add", 1, 2 ** 70), "args[1]", "does not fit in 64 bits"),
    (_arg("add", 1, {"node": "obs", "x": 1}), "args[1]", "one-key tagged object"),
    (_arg("add", 1, _nested(20)), "args[1]", "nested deeper"),
    (_field("chunk", "kwargs", {"dim": -1}), "kwargs", "list of [name, value] pairs"),
    (_field("chunk", "kwargs", [["dim"]]), "kwargs", "list of [name, value] pairs"),
    (_field("chunk", "kwargs", [["dim", -1], ["dim", 1]]), "kwargs", "given twice"),
    (_field("chunk", "kwargs", [["__class__", 1]]), "kwargs[0]", "not a Python name"),
    (_field("chunk", "kwargs", [["dim", "__globals__"]]), "kwargs[0]", "not a plain mode"),
    (_field("chunk", "args", {"node": "matmul"}), "args", "expected a list"),
    (_field("sub", "kwargs", [["key", {"node": "item"}]]), "args", "no keywords"),
    (_field("sub", "args", [{"node": "item"}]), "args", "takes 2 positional"),
    (_field("item", "args", []), "args", "without the tensor"),
    (_field("item", "args", [1]), "args[0]", "expected a node reference"),
    (_field("obs", "args", [1]), "args", "takes no arguments"),
    (_field("_tensor_constant0", "target", "training"), "target", "not a tensor the file declares"),
    (_field("add", "op", "call_module"), "op", "not one of"),
    (_field("add", "name", "x y"), "name", "not a Python name"),
    (_field("add", "name", "matmul"), "name", "a second node"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_a_malformed_field_is_named_with_its_file_and_node(saved, tmp_path, edit, field, says):
    marker = tmp_path / "MARKER"
    with pytest.raises(FxStoreError) as err:
        fx_store.load(_edit(saved, edit))
    msg = str(err.value)
    assert msg.startswith(str(saved / "module.json") + ": nodes["), msg
    assert f"field '{field}" in msg and says in msg, msg
    assert not marker.exists()


@pytest.mark.parametrize("edit, says", [
    (lambda doc, nodes: doc.update(nodes="x"), "field 'nodes'"),
    (lambda doc, nodes: doc.update(nodes=[1] + doc["nodes"]), "nodes[0]: expected an object"),
    (lambda doc, nodes: doc.update(attrs=[]), "field 'attrs'"),
    (lambda doc, nodes: doc["attrs"].update({"_tensor_constant0": "module"}), "field 'attrs'"),
    (lambda doc, nodes: doc.update(taps=[{"name": 1}]), "field 'taps'"),
    (lambda doc, nodes: doc["nodes"].pop(), "one output node"),
    (lambda doc, nodes: doc.update(version=2), "not a version 1 node graph"),
])
def test_a_malformed_document_is_named(saved, edit, says):
    with pytest.raises(FxStoreError, match="module.json") as err:
        fx_store.load(_edit(saved, edit))
    assert says in str(err.value)


def test_every_listed_name_is_a_tensor_function_and_encodes_back():
    """The table resolves only names written in ops.py; a graph calling any of them saves under
    the name it loads from (what encode writes is what load resolves)."""
    from torch.fx.node import _get_qualified_name
    table = ops._table()
    assert len(table) > 600
    for name, fn in table.items():
        assert not isinstance(fn, type) and callable(fn)
        assert not any(bad in name for bad in ("load", "save", "hook", "storage", "numpy", "getattr"))
    for f in (torch.add, torch.nn.functional.gelu, torch.nn.functional.silu, torch.linalg.norm,
              torch.split, torch.einsum, torch.Tensor.add, operator.getitem):
        assert ops.function(_get_qualified_name(f)) is f


def test_a_graph_with_an_unlisted_target_is_not_saved():
    root = torch.nn.Module()
    g = fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(getattr, (x, "shape")))
    with pytest.raises(FxStoreError, match="call target 'getattr' is not a tensor operation"):
        fx_store.encode(fx.GraphModule(root, g))


def test_string_arguments_are_modes_not_names():
    assert schema.plain_string("bij,bjk->bik") and schema.plain_string("nearest-exact")
    assert not schema.plain_string("__import__") and not schema.plain_string("os.system('x')")


def test_taps_read_alone_are_typed_too(saved):
    """prepare reads the taps before the graph: a site that is not a string is named there."""
    _edit(saved, lambda doc, nodes: doc.update(taps=[{"name": "hidden", "site": 3, "fx_node": "add"}]))
    with pytest.raises(FxStoreError, match=r"module.json: field 'taps'"):
        fx_store.read_taps(saved)


def test_a_graph_that_cannot_be_saved_says_why_without_blaming_a_file():
    """LEAPP names a node after a dunder method it traced (floor_div_export.py): not saved, and the
    reason is the graph's, not an edited module.json's."""
    root = torch.nn.Module()
    g = fx.Graph()
    x = g.placeholder("x")
    g.output(g.create_node("call_method", "__floordiv__", (x, 2), name="__floordiv__"))
    with pytest.raises(FxStoreError) as err:
        fx_store.encode(fx.GraphModule(root, g))
    assert str(err.value) == "nodes[1] ('__floordiv__'): field 'name': '__floordiv__' is not a Python name"


def test_a_rebuilt_graph_that_fails_in_torch_prints_nothing(tmp_path, capfd):
    """torch.fx prints the generated source and a traceback to stderr before re-raising; the CLI's
    one line would come after it. The rebuilt module (also copied, also recompiled) raises quietly."""
    import copy
    root = torch.nn.Module()
    g = fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(torch.matmul, (x, x)))
    fx_store.save(tmp_path / "m", fx.GraphModule(root, g))
    gm, _ = fx_store.load(tmp_path / "m")
    gm.recompile()
    for m in (gm, copy.deepcopy(gm)):
        with pytest.raises(RuntimeError):
            m(torch.randn(2, 3))
    assert capfd.readouterr().err == ""

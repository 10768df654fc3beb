"""A node's traced FX graph saved as plain data and rebuilt (leapp_lab/fxio/store.py).

Reading a run folder must never execute what it names outside torch's tensor functions: a crafted
module.json that names a loader, a library or a builtin is refused before anything runs."""
from __future__ import annotations

import json
import operator

import pytest
import torch
import torch.fx as fx

from leapp_lab.fxio import store as fx_store
from leapp_lab.fxio.store import FxStoreError


def _graph_module():
    """A graph shaped like LEAPP's node.m: placeholders, get_attr constants, call_function only."""
    root = torch.nn.Module()
    torch.manual_seed(0)
    root.register_buffer("_tensor_constant0", torch.randn(3, 4))
    root.register_buffer("_tensor_constant1", torch.randn(3))
    g = fx.Graph()
    x = g.placeholder("obs")
    h = g.placeholder("h")
    w, b = g.get_attr("_tensor_constant0"), g.get_attr("_tensor_constant1")
    lin = g.call_function(torch._C._nn.linear, (x, w, b))
    r = g.call_function(torch.relu, (lin,))
    s = g.call_function(operator.getitem, (r, (slice(None), slice(0, 2))))
    c = g.call_function(torch.clamp, (r,), {"min": -1.5, "max": float("inf")})
    t = g.call_method("to", (c, torch.float32))
    z = g.call_function(torch.zeros, ((1, 3),), {"dtype": torch.float32})
    a = g.call_function(torch.add, (t, z))
    g.output((a, s, h))
    return fx.GraphModule(root, g)


def test_round_trip_computes_the_same(tmp_path):
    gm = _graph_module()
    fx_store.save(tmp_path / "n", gm, taps=[{"name": "r", "site": "x.py:3", "fx_node": "relu"}])
    back, doc = fx_store.load(tmp_path / "n")
    assert doc["taps"] == [{"name": "r", "site": "x.py:3", "fx_node": "relu"}]
    assert [n.name for n in back.graph.nodes] == [n.name for n in gm.graph.nodes]
    assert dict(back.named_buffers()).keys() == dict(gm.named_buffers()).keys()
    x, h = torch.randn(1, 4), torch.randn(1, 2)
    for a, b in zip(gm(x, h), back(x, h)):
        assert torch.equal(a, b)


def _crafted(tmp_path, target, op="call_function"):
    gm = _graph_module()
    fx_store.save(tmp_path / "n", gm)
    p = tmp_path / "n" / fx_store.MODULE_FILE
    doc = json.loads(p.read_text())
    node = next(n for n in doc["nodes"] if n["name"] == "relu")
    node["op"], node["target"] = op, target
    p.write_text(json.dumps(doc))
    return tmp_path / "n"


@pytest.mark.parametrize("target", ["torch.load", "torch.ops.load_library", "builtins.exec",
                                    "builtins.__import__", "os.system", "torch.hub.load",
                                    "torch.jit.load", "_operator.methodcaller", "torch.save",
                                    "torch.__class__.__subclasses__", "subprocess.run"])
def test_crafted_targets_are_refused(tmp_path, target):
    with pytest.raises(FxStoreError):
        fx_store.load(_crafted(tmp_path, target))


@pytest.mark.parametrize("method", ["__reduce__", "_save", "storage", "cuda"])
def test_crafted_methods_are_refused(tmp_path, method):
    with pytest.raises(FxStoreError):
        fx_store.load(_crafted(tmp_path, method, op="call_method"))


def test_unsupported_graphs_say_why():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)

        def forward(self, x):
            return self.lin(x)
    with pytest.raises(FxStoreError, match="call_module"):
        fx_store.encode(fx.symbolic_trace(M()))


_CODE = "__import__('os').system('touch PWNED') or 1"


def _edited(tmp_path, edit):
    gm = _graph_module()
    fx_store.save(tmp_path / "n", gm)
    p = tmp_path / "n" / fx_store.MODULE_FILE
    doc = json.loads(p.read_text())
    edit(doc, {n["name"]: n for n in doc["nodes"]})
    p.write_text(json.dumps(doc))
    return tmp_path / "n"


def _set(name, key, value):
    def edit(doc, nodes):
        nodes[name][key] = value
    return edit


@pytest.mark.parametrize("edit", [
    _set("h", "target", f"h={_CODE}"),                          # a placeholder's default argument
    _set("clamp", "kwargs", [[f"min={_CODE}, max", 1.0]]),       # a keyword name
    _set("relu", "name", f"relu = {_CODE}\n    r"),               # a node name
    _set("_tensor_constant0", "target", f'_tensor_constant0"+{_CODE}+"'),   # a get_attr target
    _set("output", "target", f"output;{_CODE}"),
    lambda doc, nodes: doc["attrs"].update({"__class__": "constant"}),
    lambda doc, nodes: nodes["relu"].pop("op"),                   # a record without its op
], ids=["placeholder", "kwarg", "name", "get_attr", "output", "attr", "no-op"])
def test_names_written_into_the_module_source_are_names(tmp_path, monkeypatch, edit):
    """FX writes node names, placeholder / get_attr targets and keyword names into the Python
    source it execs: a crafted module.json must be refused before that source exists."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FxStoreError, match="module.json"):
        fx_store.load(_edited(tmp_path, edit))
    assert not (tmp_path / "PWNED").exists()


def test_a_corrupt_weights_file_is_named(tmp_path):
    # before: safetensors' own SafetensorError escaped: "internal error (a bug in leapp_lab)"
    gm = _graph_module()
    fx_store.save(tmp_path / "n", gm)
    (tmp_path / "n" / fx_store.WEIGHTS_FILE).write_bytes(b"garbage!garbage!garbage")
    with pytest.raises(FxStoreError, match="weights.safetensors: not a safetensors file"):
        fx_store.load(tmp_path / "n")

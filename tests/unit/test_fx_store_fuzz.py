"""Fuzzed node graphs: whatever a module.json holds, loading it either rebuilds a GraphModule that
computes tensor operations only, or refuses it with an FxStoreError (leapp_lab/fxio/schema.py).

The cases are the probe's chains (tests/fx_payloads.py) and seeded random mutations of a
LEAPP-shaped graph: call targets and methods from a pool of dangerous and allowed names, arguments
and keywords replaced by random values (strings where nodes are expected, dunder names, nested
lists, tagged objects, unknown nodes), ops and names changed, new nodes added. A rebuilt module is
called. Nothing outside torch may run: the marker file the payloads write never appears, and an
audit hook sees no process start, no ``os.system``, no code compiled or run that names the marker's
folder (what the payloads exec), and no file opened there.
"""
from __future__ import annotations

import json
import operator
import random
import sys
from pathlib import Path

import torch
import torch.fx as fx

from leapp_lab.fxio import store as fx_store
from leapp_lab.fxio.store import FxStoreError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fx_payloads  # noqa: E402

SEED = 20261207
CASES = 400

_TARGETS = ["builtins.getattr", "builtins.max", "builtins.min", "_operator.call", "_operator.getitem",
            "_operator.attrgetter", "_operator.methodcaller", "builtins.exec", "builtins.eval",
            "builtins.__import__", "builtins.open", "os.system", "posix.system", "torch.load",
            "torch.hub.load", "torch.ops.load_library", "torch._C._nn.__dict__", "torch.Tensor.__reduce_ex__",
            "torch.Tensor.register_hook", "torch.Tensor.apply_", "torch.Tensor.map_", "torch.Tensor.type",
            "torch.Tensor.numpy", "torch.add", "torch.relu", "torch.matmul", "torch.cat", "torch.tanh",
            "torch.nn.functional.interpolate", "torch.functional.einsum", "torch.Tensor.to", "_operator.add",
            "_operator.setitem", "_operator.sub", "math.sqrt", "torch.tensor", "torch.full", "torch.zeros",
            "torch.chunk", "torch.nn.functional.pad", "torch.where", "torch.Tensor.__getitem__"]
_METHODS = ["get", "__call__", "__getattribute__", "__class__", "register_hook", "apply_", "type", "numpy",
            "tolist", "item", "to", "add", "__setitem__", "__getitem__", "view", "reshape", "size",
            "__init__", "__reduce_ex__", "storage", "cuda", "format", "join", "__globals__"]
_OPS = ["call_function", "call_method", "get_attr", "placeholder", "output", "call_module", "root", None, 3]
_KEYS = ["key", "default", "dim", "__class__", "x=1", "alpha", "mode", "dtype", ""]


def _base() -> fx.GraphModule:
    root = torch.nn.Module()
    torch.manual_seed(0)
    root.register_buffer("_tensor_constant0", torch.randn(4, 4))
    g = fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("_tensor_constant0")
    m = g.call_function(torch.matmul, (x, w))
    ch = g.call_function(torch.chunk, (m, 2), {"dim": -1})
    a = g.call_function(torch.tanh, (g.call_function(operator.getitem, (ch, 0)),))
    b = g.call_method("to", (g.call_function(operator.getitem, (ch, 1)), torch.float32))
    g.output((g.call_function(torch.cat, ([a, b],), {"dim": -1}),))
    return fx.GraphModule(root, g)


class _Fuzzer:
    def __init__(self, rng: random.Random, marker: Path):
        self.rng, self.marker = rng, marker
        self.strings = ["__class__", "__globals__", "__builtins__", "exec", "__import__", "os", "system",
                        f"open({str(marker)!r}, 'w').write('ran')", f"touch {marker}", "nearest",
                        "bij,bjk->bik", "cpu", "__init__", "mro", "__subclasses__", "", "x", "float32"]

    def value(self, names: list[str], depth: int = 0):
        r = self.rng
        pick = r.randrange(16 if depth < 3 else 8)
        if pick == 0:
            return {"node": r.choice(names + ["nowhere", "pw_exec", "output"])}
        if pick == 1:
            return r.choice([0, 1, -1, 2 ** 70, 3])
        if pick == 2:
            return r.choice([0.5, -2.0, 1e300])
        if pick == 3:
            return r.choice([True, False, None])
        if pick in (4, 5, 6, 7):
            return r.choice(self.strings)
        if pick == 8:
            return [self.value(names, depth + 1) for _ in range(r.randrange(3))]
        if pick == 9:
            return {"tuple": [self.value(names, depth + 1) for _ in range(r.randrange(3))]}
        if pick == 10:
            return {"dict": [[r.choice(self.strings), self.value(names, depth + 1)]]}
        if pick == 11:
            return {"slice": [self.value(names, depth + 1) for _ in range(r.choice([2, 3]))]}
        if pick == 12:
            return {r.choice(["size", "dtype", "device", "float", "memory_format", "layout", "ellipsis"]):
                    self.value(names, depth + 1)}
        if pick == 13:
            return {"node": self.value(names, depth + 1)}
        if pick == 14:
            return {"node": r.choice(names), "tuple": []}
        return {r.choice(self.strings): self.value(names, depth + 1)}

    def mutate(self, doc: dict) -> dict:
        r = self.rng
        if r.random() < 0.3:
            chain = fx_payloads.PAYLOADS[r.choice(sorted(fx_payloads.PAYLOADS))](
                fx_payloads.first_placeholder(doc), self.marker)
            doc = fx_payloads.splice(doc, chain)
            if r.random() < 0.5:
                out = doc["nodes"][-1]
                out["args"] = [{"tuple": [{"node": "pw_run"}]}]
        nodes = doc["nodes"]
        for _ in range(r.randrange(0, 3)):
            names = [n["name"] for n in nodes if isinstance(n, dict) and isinstance(n.get("name"), str)]
            n = r.choice(nodes)
            what = r.randrange(10)
            if what == 0:
                n["target"] = r.choice(_TARGETS)
            elif what == 1:
                n["op"], n["target"] = "call_method", r.choice(_METHODS)
            elif what == 2:
                n["op"] = r.choice(_OPS)
            elif what == 3 and n.get("args"):
                n["args"][r.randrange(len(n["args"]))] = self.value(names)
            elif what == 4:
                n["kwargs"] = (n.get("kwargs") or []) + [[r.choice(_KEYS), self.value(names)]]
            elif what == 5:
                n["name"] = r.choice(["__class__", "x y", "relu", "matmul", "a" * 3, "x = 1"])
            elif what == 6:
                n[r.choice(["args", "kwargs"])] = r.choice([self.value(names), {"dim": 1}, "args", None])
            elif what == 7:
                op = r.choice(["call_function", "call_method"])
                new = {"op": op, "name": f"fz{r.randrange(1000)}",
                       "target": r.choice(_TARGETS if op == "call_function" else _METHODS),
                       "args": [self.value(names) for _ in range(r.randrange(4))],
                       "kwargs": [[r.choice(_KEYS), self.value(names)] for _ in range(r.randrange(2))]}
                nodes.insert(r.randrange(1, len(nodes)), new)
            elif what == 8:
                n["args"] = [{"node": r.choice(names)}] + [self.value(names) for _ in range(r.randrange(3))]
            else:
                self.benign(nodes, names)
        return doc

    def benign(self, nodes: list, names: list[str]) -> None:
        """A change that keeps the graph typed: another listed op, another number, a mode string."""
        r = self.rng
        n = r.choice([n for n in nodes if isinstance(n, dict) and n.get("op") == "call_function"] or nodes)
        pick = r.randrange(3)
        if pick == 0 and n.get("target") in ("torch.tanh", "torch.relu", "torch.sigmoid"):
            n["target"] = r.choice(["torch.tanh", "torch.relu", "torch.sigmoid", "torch.abs"])
        elif pick == 1:
            n.setdefault("kwargs", []).append([r.choice(["alpha", "dim"]), r.choice([1, -1, 0.5])])
        else:
            nodes.insert(len(nodes) - 1, {"op": "call_function", "name": f"ok{r.randrange(1000)}",
                                          "target": r.choice(["torch.add", "torch.mul", "torch.sub"]),
                                          "args": [{"node": r.choice(names)}, r.choice([1, 2.5, -1])],
                                          "kwargs": []})


def test_fuzzed_graphs_are_rebuilt_or_refused_and_run_nothing(tmp_path):
    folder = tmp_path / "n"
    fx_store.save(folder, _base())
    pristine = json.loads((folder / fx_store.MODULE_FILE).read_text())
    marker = tmp_path / "sentinel" / "MARKER"
    marker.parent.mkdir()
    seen: list[tuple] = []
    armed = [False]

    def hook(event, args):
        if not armed[0]:
            return
        if event in ("os.system", "subprocess.Popen", "os.posix_spawn", "os.exec", "os.spawn", "os.fork",
                     "ctypes.dlopen", "socket.connect", "shutil.rmtree", "os.remove"):
            seen.append((event, args))
        elif event in ("compile", "exec") and str(marker.parent) in str(args[0]):
            seen.append((event, str(args[0])[:200]))
        elif event == "open" and str(marker.parent) in str(args[0]):
            seen.append((event, args[0]))

    sys.addaudithook(hook)
    rng = random.Random(SEED)
    fuzz = _Fuzzer(rng, marker)
    rebuilt = refused = payloads = 0
    for case in range(CASES):
        doc = fuzz.mutate(json.loads(json.dumps(pristine)))
        payloads += any(isinstance(n, dict) and n.get("name") == "pw_cls" for n in doc["nodes"])
        (folder / fx_store.MODULE_FILE).write_text(json.dumps(doc))
        armed[0] = True
        try:
            try:
                gm, _ = fx_store.load(folder)
            except FxStoreError:
                refused += 1
                continue
            assert isinstance(gm, fx.GraphModule), case
            rebuilt += 1
            n_in = sum(1 for n in gm.graph.nodes if n.op == "placeholder")
            try:
                gm(*[torch.randn(2, 4) for _ in range(n_in)])
            except Exception:      # a typed graph may still be wrong tensor math: torch says so
                pass
        finally:
            armed[0] = False
        assert not seen, (case, seen, doc)
        assert not marker.exists(), (case, doc)
    assert payloads > 100 and refused > 100 and rebuilt > 20, (payloads, refused, rebuilt)

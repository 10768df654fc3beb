"""Small tapped models for the compile/verify tests, exported with torch.onnx.export.

``write_prepared(model, samples, tap_names, out_dir)`` writes what prepare writes (CONTRACTS.md):
``model.onnx`` with the taps as graph outputs and the ``leapp_lab.manifest`` metadata,
``model.npz`` (inputs, leading sample axis) and ``model.reference.npz`` (torch-eager outputs and
taps, plus ``benchmark_timings_ms``). The forward returns ``(output, tap_0, tap_1, ...)`` so the
exporter names each tap's value after the tap (tensor == name), like a real exposed tap.
"""
from __future__ import annotations

import inspect
import json
import time
from pathlib import Path

import numpy as np
import onnx
import torch
from torch import nn

from leapp_lab.model.jsonio import save_npz


class TappedNet(nn.Module):
    """6 conv layers then 5 linear layers, a tap after each (11 tapped layers) and two outputs."""

    CONV = 6
    FC = 5

    def __init__(self):
        super().__init__()
        ch = [3, 8, 8, 12, 12, 16, 16]
        self.convs = nn.ModuleList(nn.Conv2d(ch[i], ch[i + 1], 3, padding=1) for i in range(self.CONV))
        dims = [16, 32, 32, 24, 24, 10]
        self.fcs = nn.ModuleList(nn.Linear(dims[i], dims[i + 1]) for i in range(self.FC))
        self.aux = nn.Linear(16, 3)

    def tap_names(self):
        return [f"conv{i}" for i in range(self.CONV)] + [f"fc{i}" for i in range(self.FC)]

    def layer_weights(self):
        """tap name -> initializer name of that layer's weight (TorchScript export naming)."""
        return {**{f"conv{i}": f"convs.{i}.weight" for i in range(self.CONV)},
                **{f"fc{i}": f"fcs.{i}.weight" for i in range(self.FC)}}

    def forward(self, x):
        taps = []
        for c in self.convs:
            x = torch.relu(c(x))
            taps.append(x)
        p = x.mean(dim=(2, 3))
        aux = self.aux(p)
        h = p
        for i, f in enumerate(self.fcs):
            h = f(h)
            if i < self.FC - 1:
                h = torch.relu(h)
            taps.append(h)
        return (h, aux, *taps)


class MLP(nn.Module):
    """64 -> 256 -> 256 -> 10 with GELU and LayerNorm (the JUPYTER_STACK §7 model); taps per layer."""

    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(64, 256), nn.Linear(256, 256), nn.Linear(256, 10)
        self.ln = nn.LayerNorm(256)

    def tap_names(self):
        return ["l1", "l2", "ln"]

    def forward(self, x):
        a = torch.relu(self.l1(x))
        b = torch.nn.functional.gelu(self.l2(a))
        c = self.ln(b)
        return (self.l3(c), a, b, c)


def _source_line(model: nn.Module) -> str:
    lines, start = inspect.getsourcelines(type(model).forward)
    return f"{Path(inspect.getsourcefile(type(model))).name}:{start}"


def write_prepared(model: nn.Module, samples: list[torch.Tensor], out_dir: Path, *,
                   n_outputs: int = 1, with_taps: bool = True, extra_meta: dict | None = None
                   ) -> dict[str, Path]:
    """Export ``model`` (forward returns outputs then taps) and write model.onnx/npz/reference.npz."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.eval()
    tap_names = model.tap_names()
    out_names = [f"output_{i}" for i in range(n_outputs)]
    names = out_names + tap_names
    onnx_path = out_dir / "model.onnx"
    torch.onnx.export(model, (samples[0],), str(onnx_path), input_names=["x"], output_names=names,
                      dynamo=False, opset_version=17)
    m = onnx.load(str(onnx_path))
    producer = {o: i for i, n in enumerate(m.graph.node) for o in n.output}
    node_of = {o: n for n in m.graph.node for o in n.output}
    src = _source_line(model)

    def resolve(t):  # a tap on the same value as an output: the exporter adds an Identity
        while t in node_of and node_of[t].op_type == "Identity":
            t = node_of[t].input[0]
        return t
    manifest = {"version": 1, "inputs": ["x"],
                "outputs": [{"name": n, "order": producer[n]} for n in out_names],
                "taps": [{"name": t, "kind": "manual", "order": producer[resolve(t)], "tensor": resolve(t),
                          "producer_op": node_of[resolve(t)].op_type,
                          "producer_node": node_of[resolve(t)].name,
                          "reference_source": "torch", "uncompared_reason": None, "source": src}
                         for t in tap_names]}
    if extra_meta:
        manifest.update(extra_meta)
    if with_taps:
        p = m.metadata_props.add()
        p.key, p.value = "leapp_lab.manifest", json.dumps(manifest)
    else:
        keep = [o for o in m.graph.output if o.name in out_names]
        del m.graph.output[:]
        m.graph.output.extend(keep)
    onnx.save(m, str(onnx_path))
    refs: dict[str, list[np.ndarray]] = {}
    timings = []
    with torch.no_grad():
        for x in samples:
            t0 = time.perf_counter()
            vals = model(x)
            timings.append((time.perf_counter() - t0) * 1e3)
            for n, v in zip(names, vals):
                refs.setdefault(n, []).append(v.numpy())
    if not with_taps:
        refs = {k: v for k, v in refs.items() if k in out_names}
    save_npz(out_dir / "model.npz", {"x": np.stack([x.numpy() for x in samples])})
    ref = {k: np.stack(v) for k, v in refs.items()}
    ref["benchmark_timings_ms"] = np.asarray(timings)
    save_npz(out_dir / "model.reference.npz", ref)
    return {"onnx": onnx_path, "npz": out_dir / "model.npz", "reference": out_dir / "model.reference.npz"}


def tapped_net(out_dir: Path, n_samples: int = 3, seed: int = 0):
    torch.manual_seed(seed)
    net = TappedNet()
    g = torch.Generator().manual_seed(seed + 1)
    samples = [torch.randn(1, 3, 16, 16, generator=g) for _ in range(n_samples)]
    return net, write_prepared(net, samples, out_dir, n_outputs=2)


def mlp(out_dir: Path, n_samples: int = 4, seed: int = 0):
    torch.manual_seed(seed)
    net = MLP()
    g = torch.Generator().manual_seed(seed + 1)
    samples = [torch.randn(64, 64, generator=g) for _ in range(n_samples)]
    return net, samples, write_prepared(net, samples, out_dir, n_outputs=1)


# -- session-wide shared artifacts (the module is imported once, so test files share the cache) --
_CACHE: dict = {}


def shared_net(tmp_path_factory):
    """The prepared TappedNet (3 samples), built once per test session."""
    if "net" not in _CACHE:
        d = tmp_path_factory.mktemp("tapped_net")
        _CACHE["net"] = tapped_net(d)
    return _CACHE["net"]


def shared_build(tmp_path_factory, engine: str):
    """``compile(TappedNet, engine)``, once per session per engine."""
    key = ("build", engine)
    if key not in _CACHE:
        from leapp_lab.steps.compile import compile
        net, paths = shared_net(tmp_path_factory)
        _CACHE[key] = compile(paths["onnx"], engine=engine)
    return _CACHE[key]


def shared_mlp(tmp_path_factory):
    if "mlp" not in _CACHE:
        d = tmp_path_factory.mktemp("mlp")
        _CACHE["mlp"] = mlp(d)
    return _CACHE["mlp"]

"""prepare with manual taps: real torch export, real onnxruntime, values recomputed independently."""
from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import torch

import leapp_lab
from leapp_lab.cli import main as cli_main
from leapp_lab.model.jsonio import load_npz
from leapp_lab.taps.loader import load_module
from leapp_lab.engines.ort_taps import bind_taps
from leapp_lab.onnxio.manifest import MANIFEST_KEY, read_manifest, strip_taps
from tests.models import model_path
from tests.models.builds import prepared

MLP_TAPS = ["obs_norm", "hidden_1", "hidden_2", "hidden_3", "action_mean_pre"]


def _manifest_json(path):
    m = onnx.load(str(path))
    vals = [p.value for p in m.metadata_props if p.key == MANIFEST_KEY]
    assert len(vals) == 1
    return json.loads(vals[0])


def _eager_mlp(obs: torch.Tensor) -> dict[str, np.ndarray]:
    """Recompute the MLP's outputs and taps by hand from its weights (no tap machinery)."""
    torch.manual_seed(0)
    net = load_module(model_path("mlp_policy")).Model().eval()
    with torch.no_grad():
        x = (obs - net.obs_mean) / net.obs_std
        h1 = torch.tanh(net.fc1(x))
        h2 = torch.nn.functional.elu(net.fc2(h1))
        h3 = torch.relu(net.fc3(h2))
        pre = net.mu(h3)
        vals = {"obs_norm": x, "hidden_1": h1, "hidden_2": h2, "hidden_3": h3,
                "action_mean_pre": pre, "action_mean": torch.tanh(pre), "value": net.value(h3)}
    return {k: v.numpy() for k, v in vals.items()}


def test_mlp_all_taps_manifest_in_model_order():
    b = prepared("mlp_policy", taps=("all",))
    man = _manifest_json(b.onnx)
    assert man["version"] == 1
    assert man["inputs"] == ["obs"]
    assert [t["name"] for t in man["taps"]] == MLP_TAPS           # the forward's order
    orders = [t["order"] for t in man["taps"]]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)
    assert [o["name"] for o in man["outputs"]] == ["action_mean", "value"]
    assert min(o["order"] for o in man["outputs"]) > max(orders)
    onnx.checker.check_model(onnx.load(str(b.onnx)), full_check=True)
    g = onnx.load(str(b.onnx)).graph
    for t in man["taps"]:
        assert t["kind"] == "manual" and t["reference_source"] == "torch"
        assert t["uncompared_reason"] is None
        # order is the index of the node that produces the tapped tensor
        assert t["tensor"] in g.node[t["order"]].output
        assert g.node[t["order"]].op_type == t["producer_op"]
        assert t["source"].startswith("mlp_policy.py:")
    by = {t["name"]: t for t in man["taps"]}
    src = model_path("mlp_policy").read_text().splitlines()
    for name in MLP_TAPS:
        line = int(by[name]["source"].rsplit(":", 1)[1])
        assert f'"{name}"' in src[line - 1]                      # the tap() call's own line
    assert [by[n]["producer_op"] for n in MLP_TAPS] == ["Div", "Tanh", "Elu", "Relu", "Gemm"]
    assert by["action_mean_pre"]["scope"] == "mu" and by["hidden_1"]["scope"] is None
    assert "fc1" in src[int(by["hidden_1"]["producer_source"].rsplit(":", 1)[1]) - 1]
    # the markers are gone and the taps are graph outputs
    assert not any(n.domain == "leapp_lab" for n in g.node)
    assert [o.name for o in g.output] == ["action_mean", "value", *MLP_TAPS]


def test_mlp_npz_equal_independent_torch_and_onnxruntime():
    b = prepared("mlp_policy", taps=("all",))
    inputs = load_npz(b.npz)
    ref = load_npz(b.reference)
    assert list(inputs) == ["obs"] and inputs["obs"].shape == (3, 2, 12)
    mod = load_module(model_path("mlp_policy"))
    torch.manual_seed(0)
    samples = mod.get_samples()
    for i, (obs,) in enumerate(samples):
        np.testing.assert_array_equal(inputs["obs"][i], obs.numpy())
    assert set(ref) == {"action_mean", "value", *MLP_TAPS, "benchmark_timings_ms"}
    assert ref["benchmark_timings_ms"].shape == (3,) and (ref["benchmark_timings_ms"] > 0).all()
    sess = ort.InferenceSession(str(b.onnx), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    for i in range(3):
        expect = _eager_mlp(torch.from_numpy(inputs["obs"][i]))
        got = dict(zip(names, sess.run(None, {"obs": inputs["obs"][i]})))
        for k, v in expect.items():
            np.testing.assert_array_equal(ref[k][i], v)                  # reference == torch eager
            np.testing.assert_allclose(got[k], v, rtol=1e-5, atol=1e-6)  # engine agrees
    with np.load(b.reference, allow_pickle=False) as z:                  # uncompressed npz
        assert all(info.compress_type == 0 for info in z.zip.filelist)


def test_subset_of_taps_and_all_wins():
    sub = prepared("mlp_policy", taps=("hidden_2", "obs_norm"))
    man = _manifest_json(sub.onnx)
    assert [t["name"] for t in man["taps"]] == ["obs_norm", "hidden_2"]   # model order, not CLI order
    assert set(load_npz(sub.reference)) == {"action_mean", "value", "obs_norm", "hidden_2",
                                            "benchmark_timings_ms"}
    both = prepared("mlp_policy", taps=("hidden_2", "all"))
    assert [t["name"] for t in _manifest_json(both.onnx)["taps"]] == MLP_TAPS


def test_conv_net_and_sequential_taps():
    b = prepared("conv_net", taps=("all",))
    man = _manifest_json(b.onnx)
    assert [t["name"] for t in man["taps"]] == ["stem", "block1", "block2", "pooled"]
    assert [t["scope"] for t in man["taps"]] == ["stem.2", None, "block2.1", None]
    assert [o["name"] for o in man["outputs"]] == ["output_0"]
    ref, inp = load_npz(b.reference), load_npz(b.npz)
    sess = ort.InferenceSession(str(b.onnx), providers=["CPUExecutionProvider"])
    got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {"x": inp["x"][1]})))
    for k in ("stem", "block1", "block2", "pooled", "output_0"):
        np.testing.assert_allclose(got[k], ref[k][1], rtol=1e-4, atol=1e-5)
    assert ref["block2"].shape == (2, 1, 16, 8, 8)

    s = prepared("sequential_taps", taps=("all",))
    man = _manifest_json(s.onnx)
    assert [t["name"] for t in man["taps"]] == ["test_1", "test_2"]
    # a Tap module's source line is where it was built, inside nn.Sequential(...)
    src = model_path("sequential_taps").read_text().splitlines()
    for t in man["taps"]:
        assert f'Tap("{t["name"]}")' in src[int(t["source"].rsplit(":", 1)[1]) - 1]
    ref, inp = load_npz(s.reference), load_npz(s.npz)
    torch.manual_seed(0)
    net = load_module(model_path("sequential_taps")).Model().eval()
    with torch.no_grad():
        x = torch.from_numpy(inp["input"][0])
        t1 = net[1](net[0](x))
        np.testing.assert_array_equal(ref["test_1"][0], t1.numpy())
        np.testing.assert_array_equal(ref["test_2"][0], net[4](net[3](t1)).numpy())


def test_taps_off_graph_is_byte_identical_to_tap_free_twin(tmp_path):
    """Taps off: the whole model equals the export of the same source with tap bound to identity."""
    for name in ("mlp_policy", "conv_net"):
        off = prepared(name)
        twin = load_module(model_path(name))
        twin.tap = lambda x, name: x       # the tap-free twin: same file, same lines
        d = tmp_path / name
        leapp_lab.prepare(twin, d / "m.onnx", d / "m.npz", d / "r.npz")
        a, b = off.onnx.read_bytes(), (d / "m.onnx").read_bytes()
        assert a == b, f"{name}: taps-off ONNX differs from the tap-free twin"
        assert not off.report.manifest_stamped
        assert read_manifest(off.onnx).synthesized
        # the markers really were there with taps on, so the identity is not vacuous
        on = onnx.load(str(prepared(name, taps=("all",)).onnx))
        assert onnx.load(str(off.onnx)).graph.SerializeToString() != on.graph.SerializeToString()
    # Tap modules: the twin replaces Tap by nn.Identity
    seq = prepared("sequential_taps")
    twin = load_module(model_path("sequential_taps"))
    twin.Tap = lambda name: torch.nn.Identity()
    d = tmp_path / "seq"
    leapp_lab.prepare(twin, d / "m.onnx", d / "m.npz", d / "r.npz")
    assert seq.onnx.read_bytes() == (d / "m.onnx").read_bytes()


def test_strip_and_expose_round_trip():
    b = prepared("mlp_policy", taps=("all",))
    m = onnx.load(str(b.onnx))
    man = read_manifest(m)
    bare = strip_taps(m, man)
    assert [o.name for o in bare.graph.output] == ["action_mean", "value"]
    off = onnx.load(str(prepared("mlp_policy").onnx))
    assert len(bare.graph.node) == len(off.graph.node)
    again, bound = bind_taps(bare, bare, man.taps)
    assert all(t.binding == "bound" for t in bound)
    assert [o.name for o in again.graph.output] == [o.name for o in m.graph.output]


def test_cli_prepare_writes_files_and_report(tmp_path, capsys):
    out = tmp_path / "build"
    rc = cli_main(["prepare", str(model_path("sequential_taps")), "--onnx-out", str(out / "model.onnx"),
                   "--npz-out", str(out / "model.npz"), "--reference-out", str(out / "model.reference.npz"),
                   "--debug-taps", "test_2"])
    assert rc == 0
    cap = capsys.readouterr()
    assert "test_2" in cap.out and "manual" in cap.out
    assert "exporting to ONNX" in cap.err                      # progress on stderr
    rep = leapp_lab.load(out / "model.prepare")
    assert rep.kind == "prepare" and [r.name for r in rep.taps] == ["test_2"]
    df = rep.to_dataframe()
    assert list(df["name"]) == ["test_2", "output_0"] and list(df["kind"]) == ["manual", "output"]
    # the plugin / op flags reach the API
    out2 = tmp_path / "custom"
    rc = cli_main(["prepare", str(model_path("custom_op_model")), "--onnx-out", str(out2 / "c.onnx"),
                   "--npz-out", str(out2 / "c.npz"), "--reference-out", str(out2 / "c.ref.npz"),
                   "--debug-plugin-taps", "--debug-op-taps", "--quiet"])
    assert rc == 0 and capsys.readouterr().err == ""
    rep = leapp_lab.load(out2 / "c.prepare")
    assert rep.plugin_taps and rep.op_taps and {r.kind for r in rep.taps} == {"plugin", "op"}
    rc = cli_main(["prepare", str(model_path("custom_op_model")), "--onnx-out", str(out2 / "c.onnx"),
                   "--npz-out", str(out2 / "c.npz"), "--reference-out", str(out2 / "c.npz")])
    assert rc == 2 and "three different files" in capsys.readouterr().err

"""leapp_lab.trace() on real LEAPP (CPU): a passing two-node graph and the frozen .item() pipeline.

What is captured (ports, edges, verdicts, FX structure, log records, per-sample rows, arrays) is
checked against LEAPP's own artifacts (YAML, log lines) and against numpy formulas on the arrays.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import yaml

import leapp_lab
from leapp_lab.model.trace import PERCENTILE_KEYS, TraceReport

RTOL, ATOL = 1e-3, 1e-5


def _two_node(save_path, name="twonode", samples=3):
    from leapp import annotate
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)).eval()
    with leapp_lab.trace(name, save_path=str(save_path), max_cached_io=samples) as t:
        for k in range(samples):
            obs = torch.randn(1, 4) * (k + 1)
            x = annotate.input_tensors("pre", {"obs": obs})
            feat = annotate.output_tensors("pre", {"feat": torch.tanh(x * 0.5 - 0.25)}, export_with="jit")
            z = annotate.input_tensors("policy", {"feat": feat})
            with torch.no_grad():
                annotate.output_tensors("policy", {"action": mlp(z)}, export_with="onnx")
    return t


def _item_pipeline(save_path, name="itemgraph", samples=4):
    from leapp import annotate
    torch.manual_seed(1)
    head = torch.nn.Linear(4, 3).eval()
    with leapp_lab.trace(name, save_path=str(save_path), max_cached_io=samples) as t:
        for k in range(samples):
            x = annotate.input_tensors("norm", {"obs": torch.randn(2, 4) * (k + 1)})
            scale = x.abs().max().item()                       # frozen at trace time
            y = annotate.output_tensors("norm", {"y": (x - 0.5) / scale}, export_with="jit")
            z = annotate.input_tensors("head", {"y": y})
            with torch.no_grad():
                annotate.output_tensors("head", {"out": torch.relu(head(z)) * 2.0}, export_with="jit")
    return t


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    return _two_node(tmp_path_factory.mktemp("two"))


@pytest.fixture(scope="module")
def item(tmp_path_factory):
    return _item_pipeline(tmp_path_factory.mktemp("item"))


def test_two_node_ports_edges_verdicts(two):
    r = two.report
    assert isinstance(r, TraceReport) and r.ok
    g = r.graph
    assert (g.status, g.verdict) == ("compiled", "pass")
    assert [n.name for n in g.nodes] == ["pre", "policy"] and [n.index for n in g.nodes] == [0, 1]
    pre, pol = g.nodes
    assert (pre.backend, pol.backend) == ("jit-script", "onnx-dynamo")
    assert (pre.artifact, pol.artifact) == ("pre.pt", "policy.onnx")
    assert pre.verdict == pol.verdict == "pass" and pre.samples == pol.samples == 3
    assert g.leapp_result == {"pre": True, "policy": True}
    assert two.result == {"pre": True, "policy": True}      # what compile_graph returned

    ys = yaml.safe_load(open(f"{g.graph_dir}/twonode.yaml"))
    for n in g.nodes:
        assert n.sha256 == ys["models"][n.name]["parameters"]["sha256sum"]
        yin = [(p["name"], p["dtype"], p["shape"]) for p in ys["models"][n.name]["inputs"]]
        assert [(p.name, p.dtype, p.shape) for p in n.inputs()] == yin
    assert [(e.src, e.dst, e.kind) for e in g.edges] == [("pre/feat", "policy/feat", "data")]
    assert g.graph_inputs == ["pre/obs"] and g.graph_outputs == ["policy/action"]
    assert pol.inputs()[0].source == "pre/feat" and not pol.inputs()[0].feedback
    assert pre.inputs()[0].source is None


def test_two_node_fx_structure(two):
    pre, pol = two.report.graph.nodes
    ops = [(f.op, f.name) for f in pre.fx.nodes]
    assert ops[0] == ("placeholder", "obs") and ops[-1][0] == "output"
    by = {f.name: f for f in pre.fx.nodes}
    assert by["obs"].users and all(u in by for u in by["obs"].users)
    assert "def forward(self, obs)" in pre.fx.code
    # the linear layers' weights are get_attr weights, never suspects; typed constants are not suspect
    assert len(pol.fx.weights) == 4 and all(w.startswith("_tensor_constant") for w in pol.fx.weights)
    assert not any(f.suspect for n in (pre, pol) for f in n.fx.nodes)
    assert {f.target for f in pol.fx.nodes if f.op == "call_function"} >= {"torch.tanh"}


def test_two_node_log_records(two):
    g = two.report.graph
    levels = {r.level for r in g.log}
    assert {"DEBUG", "INFO", "SECTION", "SYSTEM"} <= levels
    assert not any("\x1b" in r.message or "\x1b" in r.level for r in g.log)
    comp = [r for r in g.log if r.message.startswith("Compiled graph module for pre")]
    assert comp and comp[0].level == "DEBUG"
    passed = [r for r in g.log if re.search(r"\[PASS\] policy passed validation \(3 examples\)", r.message)]
    assert passed and passed[0].section == "Validating 2 models"
    # the run folder holds LEAPP's log.txt as it was at the end of this run
    log_copy = open(f"{g.run_dir}/log.txt").read()
    assert "[PASS] pre passed validation" in log_copy


def test_two_node_rows_and_arrays_roundtrip(two):
    r = two.report
    df = r.validation.to_dataframe()
    assert len(df) == 6 and set(df["node"]) == {"pre", "policy"} and list(df["sample"][:3]) == [0, 1, 2]
    assert df["passed"].all()
    back = leapp_lab.load(r.graph.graph_dir)                    # graph dir -> latest run
    assert back.path == r.path and back.graph.checks == r.graph.checks
    arr = back.arrays()
    for k in range(3):
        for key in (f"pre/obs/{k}/input", f"pre/feat/{k}/recorded", f"pre/feat/{k}/exported",
                    f"pre/feat/{k}/fx", f"policy/action/{k}/exported"):
            assert key in arr, key
        np.testing.assert_array_equal(arr[f"pre/feat/{k}/recorded"], arr[f"policy/feat/{k}/input"])
        # the recorded output is tanh(obs*0.5-0.25) of the recorded input: the arrays are the real samples
        np.testing.assert_allclose(arr[f"pre/feat/{k}/recorded"],
                                   np.tanh(arr[f"pre/obs/{k}/input"] * 0.5 - 0.25), rtol=1e-6)
    for c in back.graph.checks:
        e = arr[f"{c.node}/{c.port}/{c.sample}/exported"].astype(np.float64)
        rec = arr[f"{c.node}/{c.port}/{c.sample}/recorded"].astype(np.float64)
        d = np.abs(e - rec).ravel()
        assert set(c.stats) == set(PERCENTILE_KEYS)
        assert c.stats["max"] == pytest.approx(d.max(), abs=0) and c.stats["mean"] == pytest.approx(d.mean())
        assert c.stats["p995"] == pytest.approx(np.percentile(d, 99.5))
        assert c.min_atol == pytest.approx(max(0.0, float((d - RTOL * np.abs(rec).ravel()).max())), abs=1e-12)
        assert c.shape == list(rec.shape) and c.dtype == "float32"
        assert c.hist.zero + sum(c.hist.counts) == d.size


def test_item_pipeline_flags_exactly_the_literal(item):
    g = item.report.graph
    norm, head = g.nodes
    flagged = [(n.name, f.name) for n in g.nodes for f in n.fx.nodes if f.suspect]
    assert flagged == [("norm", "div")]
    div = next(f for f in norm.fx.nodes if f.name == "div")
    lit = [v for v in div.literals if isinstance(v, float)]
    # the literal is the .item() value of sample 0: max|obs_0|
    obs0 = item.report.arrays()["norm/obs/0/input"]
    assert lit == [pytest.approx(float(np.abs(obs0).max()), rel=1e-7)]
    sub = next(f for f in norm.fx.nodes if f.name == "sub")
    assert sub.literals == [0.5] and not sub.suspect                # a typed constant
    assert head.fx.weights and not any(f.suspect for f in head.fx.nodes)
    assert all(f.weight and not f.suspect for f in head.fx.nodes if f.op == "get_attr")
    mul = next(f for f in head.fx.nodes if f.target == "torch.mul")
    assert mul.literals == [2.0] and not mul.suspect


def test_item_pipeline_three_way_and_leapp_numbers(item):
    g = item.report.graph
    assert g.verdict == "fail" and g.leapp_result == {"norm": False, "head": True}
    rows = {(c.node, c.port, c.sample): c for c in g.checks}
    assert [rows[("norm", "y", k)].passed for k in range(4)] == [True, False, False, False]
    assert all(rows[("head", "out", k)].passed for k in range(4))   # fed its own recorded inputs
    for k in (1, 2, 3):
        c = rows[("norm", "y", k)]
        assert c.export_vs_fx_max == 0.0 and c.fx_stats["max"] == pytest.approx(c.stats["max"])
        # LEAPP's own mismatch log carries max/mean/percentiles of the same |exported - source|
        i = next(i for i, r in enumerate(g.log) if r.message.startswith(f"norm/y sample {k}: Mismatch"))
        st = next(r.message for r in g.log[i:] if "Diff stats:" in r.message)
        pc = next(r.message for r in g.log[i:] if "Diff percentiles:" in r.message)
        mx, mean = map(float, re.search(r"max=(\S+), mean=(\S+)", st).groups())
        assert c.stats["max"] == pytest.approx(mx, rel=1e-5) and c.stats["mean"] == pytest.approx(mean, rel=1e-5)
        for key in ("p50", "p75", "p90", "p99", "p995"):
            v = float(re.search(rf"{key}=([^,\s]+)", pc).group(1))
            assert c.stats[key] == pytest.approx(v, rel=1e-4, abs=1e-7)
    # a DEBUG record holds LEAPP's only hint that .item() left the graph
    assert any(r.level == "DEBUG" and "detected method_descriptor" in r.message and " item " in r.message
               for r in g.log)
    text = str(item.report)
    assert "norm/y" in text and "FAIL 3/4 samples (1,2,3)" in text and "div = torch.div(" in text


@pytest.mark.parametrize("value,suspect", [
    (1.8042484521865845, True),      # float32 .item() value
    (0.716347561908722, True),
    (2.3e-05 + 1.234567891e-3, True),
    (0.5, False), (2.0, False), (1e-6, False), (0.1, False), (0.001, False), (1.0, False),
    (3.141592653589793, False), (3.1415927410125732, False),   # pi, and pi rounded to float32
    (7, False), (True, False), (-0.0, False), (float("nan"), False),
])
def test_suspect_literal_rule(value, suspect):
    from leapp_lab.trace.fxinfo import is_suspect_literal
    assert is_suspect_literal(value) is suspect

"""tap() / Tap() inside LEAPP nodes, on real LEAPP (issue 19, Deliver 1).

Taps reached while ``leapp_lab.trace`` runs are listed per node with their sites, in firing order;
their values are kept per cached sample; the node's artifact is the one LEAPP writes for the same
code with ``tap`` bound to ``lambda x, name: x``; misuse gets messages that name the tap and site.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import leapp_lab
from leapp_lab.trace.node_taps import NodeTapWarning

HERE = Path(__file__).resolve().parent
PIPES = HERE.parent / "node_pipelines"
sys.path.insert(0, str(HERE.parent))
from node_pipelines import tapped_policy, tapped_recurrent  # noqa: E402


def _line_of(module, text: str) -> int:
    """The 1-based line of ``module``'s source holding ``text`` (exactly once)."""
    lines = inspect.getsource(module).splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if text in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def _sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _trace(tmp, name, fn, **opts):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with leapp_lab.trace(name, save_path=str(tmp), **{**tapped_policy.OPTIONS, **opts}) as t:
            out = fn()
    return t.report, out, [w for w in caught if issubclass(w.category, NodeTapWarning)]


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nodetaps")
    tapped, (actor, _), said = _trace(tmp, "tapped", tapped_policy.body)
    plain, _, said_plain = _trace(tmp, "plain", lambda: tapped_policy.body(
        tap=lambda x, name: x, tap_module=lambda name: nn.Identity()))
    return {"tapped": tapped, "plain": plain, "actor": actor, "said": said + said_plain}


def test_taps_listed_per_node_with_sites(traced):
    g = traced["tapped"].graph
    src = tapped_policy.__file__
    hidden = _line_of(tapped_policy, '"hidden")')
    body_act = _line_of(tapped_policy, 'tap_module("body_act")')
    taps = [(t.name, t.site) for t in g.node("policy").taps]
    assert [n for n, _ in taps] == ["hidden", "body_act"]          # the order they fired
    for (name, site), line in zip(taps, (hidden, body_act)):
        file, _, ln = site.rpartition(":")
        assert int(ln) == line and os.path.samefile(file, src), (name, site)
    assert g.node("normalizer").taps == []
    assert not traced["said"]                                       # nothing misused here
    # the JSON carries them as the contract spells it: {"name", "site"} in firing order
    d = json.loads((Path(g.run_dir) / "report.json").read_text())
    node = next(n for n in d["graphs"][0]["nodes"] if n["name"] == "policy")
    assert node["taps"] == [{"name": n, "site": s} for n, s in taps]
    text = str(traced["tapped"])
    assert f"taps: hidden ({taps[0][1]}), body_act ({taps[1][1]})" in text
    assert leapp_lab.load(g.run_dir).graph.node("policy").taps == g.node("policy").taps


def test_tap_values_are_the_python_values_of_each_sample(traced):
    """taps.npz holds each tap's value as the Python computed it, for every cached sample: checked
    against the actor's layers recomputed in float64 from the recorded node input."""
    g = traced["tapped"].graph
    actor = traced["actor"]
    arrays = traced["tapped"].arrays()
    vals = np.load(Path(g.run_dir) / "taps.npz", allow_pickle=False)
    n = g.node("policy").samples
    assert n == 3 and sorted(vals.files) == sorted(f"policy/{t}/{k}" for t in ("hidden", "body_act")
                                                   for k in range(n))
    w = {k: v.detach().double().numpy() for k, v in actor.state_dict().items()}
    for k in range(n):
        x = arrays[f"policy/obs_n/{k}/input"].astype(np.float64)
        hidden = np.maximum(x @ w["l1.weight"].T + w["l1.bias"], 0.0)
        pre = hidden @ w["body.0.weight"].T + w["body.0.bias"]
        body_act = np.where(pre > 0, pre, np.expm1(pre))            # ELU, alpha 1
        np.testing.assert_allclose(vals[f"policy/hidden/{k}"], hidden, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(vals[f"policy/body_act/{k}"], body_act, rtol=1e-5, atol=1e-6)
        assert vals[f"policy/hidden/{k}"].dtype == np.float32
    # the samples differ, so each value is its own step's
    assert not np.array_equal(vals["policy/hidden/0"], vals["policy/hidden/1"])


def test_artifact_identical_with_and_without_taps(traced):
    """LEAPP's artifact of the tapped code is byte for byte the one of the same code with tap bound
    to an identity (the onnx-dynamo exporter is deterministic here)."""
    a, b = traced["tapped"].graph, traced["plain"].graph
    for node in ("normalizer", "policy"):
        assert a.node(node).artifact.endswith(".onnx")
        assert _sha(Path(a.graph_dir) / a.node(node).artifact) == _sha(Path(b.graph_dir) / b.node(node).artifact)
        assert a.node(node).sha256 == b.node(node).sha256
    assert a.verdict == b.verdict == "pass"
    assert [c.stats.get("max") for c in a.checks] == [c.stats.get("max") for c in b.checks]


@pytest.mark.parametrize("backend", ["pt2", "jit"])
def test_artifact_identical_other_backends(tmp_path, backend):
    """pt2 is deterministic: sha256-equal. TorchScript (.pt) is not, even for identical code: its
    archive holds a per-process class counter (``___torch_mangle_N``), a random serialization id
    and debug tables naming the generated FX source (``<eval_with_key>.N``); with those left out
    the archives (code, constants, weights) are equal."""
    bk = {"normalizer": backend, "policy": backend}
    a, _, _ = _trace(tmp_path, "t", lambda: tapped_policy.body(backends=bk, steps=2))
    b, _, _ = _trace(tmp_path, "p", lambda: tapped_policy.body(
        tap=lambda x, name: x, tap_module=lambda name: nn.Identity(), backends=bk, steps=2))
    assert [t.name for t in a.graph.node("policy").taps] == ["hidden", "body_act"]
    pa = Path(a.graph.graph_dir) / a.graph.node("policy").artifact
    pb = Path(b.graph.graph_dir) / b.graph.node("policy").artifact
    if backend == "pt2":
        assert _sha(pa) == _sha(pb)
        return

    def members(p):
        z = zipfile.ZipFile(p)
        out = {}
        for n in z.namelist():
            if n.endswith(("serialization_id", ".debug_pkl")):
                continue
            out[re.sub(r"___torch_mangle_\d+", "M", n)] = re.sub(rb"___torch_mangle_\d+", b"M", z.read(n))
        return out
    assert members(pa) == members(pb)


def test_misused_taps_are_named_with_their_sites(tmp_path):
    """A duplicate name in one node, a tap outside any node and a tap on a value that is not a
    traced tensor: one warning each, naming the tap and its site; the trace and export go on."""
    from leapp import annotate
    from leapp_lab import tap

    def body():
        lin = nn.Linear(3, 3)
        for _ in range(3):
            tap(torch.ones(1), "outside")                                      # LINE outside
            x = annotate.input_tensors("n", {"x": torch.randn(1, 3)})
            y = tap(lin(x), "dup")                                             # LINE dup1
            y = tap(y * 2, "dup")                                              # LINE dup2
            tap(torch.zeros(2), "untraced")                                    # LINE untraced
            annotate.output_tensors("n", {"y": y}, export_with="onnx")

    src = Path(__file__).read_text().splitlines()
    line = {k: next(i + 1 for i, s in enumerate(src) if s.rstrip().endswith(f"# LINE {k}"))
            for k in ("outside", "dup1", "dup2", "untraced")}
    here = os.path.relpath(__file__) if not os.path.relpath(__file__).startswith("..") else __file__
    rep, _, said = _trace(tmp_path, "misuse", body)
    g = rep.graph
    msgs = [str(w.message) for w in said]
    assert len(msgs) == 3, msgs
    outside, dup, untraced = msgs
    assert outside.startswith(f"tap('outside') at {here}:{line['outside']}: reached outside any LEAPP node")
    assert dup.startswith(f"duplicate tap name 'dup' in node 'n': first at {here}:{line['dup1']}, "
                          f"again at {here}:{line['dup2']}")
    assert untraced.startswith(f"tap('untraced') at {here}:{line['untraced']}: the value is not a "
                               f"traced tensor of node 'n'")
    # shown at the user's line, not at leapp_lab's
    assert [(Path(w.filename).name, w.lineno) for w in said] == [
        (Path(__file__).name, line[k]) for k in ("outside", "dup2", "untraced")]
    # the report keeps them; the node keeps the first 'dup' only; LEAPP exported as usual
    assert [r.message for r in g.log if r.section == "leapp_lab taps"] == msgs
    assert [(t.name, t.site) for t in g.node("n").taps] == [("dup", f"{here}:{line['dup1']}")]
    assert g.verdict == "pass" and g.node("n").artifact == "n.onnx"
    vals = np.load(Path(g.run_dir) / "taps.npz", allow_pickle=False)
    assert sorted(vals.files) == ["n/dup/0", "n/dup/1", "n/dup/2"]


def test_stateful_node_taps(tmp_path):
    with leapp_lab.trace("rec", save_path=str(tmp_path), **tapped_recurrent.OPTIONS) as t:
        cell = tapped_recurrent.body()
    g = t.report.graph
    node = g.node("actor")
    line = _line_of(tapped_recurrent, '"pre")')
    assert [(x.name, int(x.site.rpartition(":")[2])) for x in node.taps] == [("pre", line)]
    arrays = t.report.arrays()
    vals = np.load(Path(g.run_dir) / "taps.npz", allow_pickle=False)
    w = {k: v.detach().double().numpy() for k, v in cell.state_dict().items()}
    assert node.samples == 4
    for k in range(node.samples):
        x = arrays[f"actor/obs/{k}/input"].astype(np.float64)
        h = arrays[f"actor/h_in/{k}/input"].astype(np.float64)
        pre = x @ w["inp.weight"].T + w["inp.bias"] + h @ w["rec.weight"].T
        np.testing.assert_allclose(vals[f"actor/pre/{k}"], pre, rtol=1e-5, atol=1e-6)


def test_run_json_lists_taps(tmp_path):
    """``leapp-lab run SCRIPT --json F``: each node carries ``taps`` [{name, site}]."""
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "leapp_lab.cli", "run", str(PIPES / "tapped_policy.py"),
                        "--json", str(out), "--", str(tmp_path / "o")], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    nodes = {n["name"]: n for n in d["graphs"][0]["nodes"]}
    assert [t["name"] for t in nodes["policy"]["taps"]] == ["hidden", "body_act"]
    hidden = _line_of(tapped_policy, '"hidden")')
    assert nodes["policy"]["taps"][0]["site"].endswith(f"tapped_policy.py:{hidden}")
    assert nodes["normalizer"]["taps"] == []
    assert "taps: hidden (" in r.stdout

"""A stateful graph: state_tensors/update_state (ONNX renames h -> h_in/h_out) and cross-node
feedback (policy/action -> encoder/prev_action), captured by leapp_lab.trace on real LEAPP."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import yaml

import leapp_lab


@pytest.fixture(scope="module")
def stateful(tmp_path_factory):
    from leapp import annotate
    torch.manual_seed(0)
    W, P = torch.randn(4, 4) * 0.5, torch.randn(4, 2)
    with leapp_lab.trace("stateful", save_path=str(tmp_path_factory.mktemp("st")), max_cached_io=3) as t:
        h, prev = torch.zeros(1, 4), torch.zeros(1, 2)
        for _ in range(4):                     # one pass more than the cache holds
            o, pa = annotate.input_tensors("encoder", {"obs": torch.randn(1, 4), "prev_action": prev})
            h_in = annotate.state_tensors("encoder", {"h": h})
            h_new = torch.tanh(o @ W + h_in + pa.sum())
            annotate.update_state("encoder", {"h": h_new})
            latent = annotate.output_tensors("encoder", {"latent": h_new * 1.0}, export_with="onnx")
            lat = annotate.input_tensors("policy", {"latent": latent})
            action = annotate.output_tensors("policy", {"action": torch.tanh(lat @ P)}, export_with="jit")
            h, prev = h_new, action
    return t.report


def test_state_ports_renamed_and_kept(stateful):
    g = stateful.graph
    enc, pol = g.nodes
    assert [(p.name, p.role, p.traced_name) for p in enc.inputs()] == [
        ("obs", "data", None), ("prev_action", "data", None), ("h_in", "state", "h")]
    assert [(p.name, p.role, p.traced_name) for p in enc.outputs()] == [
        ("latent", "data", None), ("h_out", "state", "h")]
    ys = yaml.safe_load(open(f"{g.graph_dir}/stateful.yaml"))
    assert [p["name"] for p in ys["models"]["encoder"]["inputs"]] == ["obs", "prev_action", "h_in"]
    assert enc.samples == pol.samples == 3 and g.verdict == "pass"


def test_feedback_edges(stateful):
    g = stateful.graph
    assert sorted((e.src, e.dst, e.kind) for e in g.edges) == [
        ("encoder/h_out", "encoder/h_in", "feedback"),
        ("encoder/latent", "policy/latent", "data"),
        ("policy/action", "encoder/prev_action", "feedback")]
    ports = {p.name: p for p in g.node("encoder").inputs()}
    assert ports["prev_action"].feedback and ports["prev_action"].source == "policy/action"
    assert ports["h_in"].feedback and ports["h_in"].source == "encoder/h_out"
    assert not ports["obs"].feedback and g.graph_inputs == ["encoder/obs"] and g.graph_outputs == []


def test_state_samples_chain(stateful):
    a = stateful.arrays()
    # sample k's state input is sample k-1's state output; prev_action is the policy's previous action
    for k in (1, 2):
        np.testing.assert_array_equal(a[f"encoder/h_in/{k}/input"], a[f"encoder/h_out/{k - 1}/recorded"])
        np.testing.assert_array_equal(a[f"encoder/prev_action/{k}/input"], a[f"policy/action/{k - 1}/recorded"])
    assert not a["encoder/h_in/0/input"].any()            # zero-initialised state, really recorded
    rows = stateful.validation.to_dataframe()
    assert len(rows) == 3 * 3 and rows["passed"].all()    # latent, h_out, action x 3 samples
    assert set(rows["port"]) == {"latent", "h_out", "action"}

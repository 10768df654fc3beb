"""The state hazards on constructed GraphReports, and the state watch on real torch modules:
undeclared recurrent state, module state updated during export (one hazard per node, every port),
TorchScript left out of the graph, a warm start's reset shapes."""
from __future__ import annotations

import numpy as np
import torch

from leapp_lab.model.trace import FxGraph, FxNode, StateChange
from leapp_lab.trace.hazard_samples import _reset_like
from leapp_lab.trace.hazard_state import StateWatch, frozen_recurrent

from test_hazard_rules import G, kinds, varying


def _frozen_two_ports(g, node="n"):
    """Sample 0 right, samples 1, 2 of both ports recorded with a state the graph does not have."""
    for port in ("y", "z"):
        g.out(node, port, 0, [1.0, 2.0])
        for k in (1, 2):
            g.out(node, port, k, [1.0 + k, 2.0], exp=[1.0, 2.0], fx=[1.0, 2.0])
    return g


def _recurrent_fx(hx_from_input: bool) -> FxGraph:
    hx = "%h" if hx_from_input else "%_tensor_constant0"
    nodes = [FxNode("placeholder", "obs", "obs")]
    if hx_from_input:
        nodes.append(FxNode("placeholder", "h", "h"))
    nodes += [FxNode("get_attr", "_tensor_constant0", "_tensor_constant0", weight=True),
              FxNode("get_attr", "_tensor_constant1", "_tensor_constant1", weight=True),
              FxNode("call_function", "gru_cell", "torch.gru_cell", args=["%obs", hx, "%_tensor_constant1"]),
              FxNode("output", "output", "output", args=["(%gru_cell,)"])]
    return FxGraph(nodes=nodes)


def test_undeclared_state_is_one_hazard_naming_the_frozen_tensor_over_every_port():
    g = _frozen_two_ports(varying(G().node("n", outputs=("y", "z"))))
    g.graph.nodes[0].fx = _recurrent_fx(hx_from_input=False)
    hz = g.run()
    assert kinds(hz) == [("undeclared-state", "n", "y", (1, 2))]
    assert hz[0].ports == ["y", "z"]
    assert "_tensor_constant0" in hz[0].message and "torch.gru_cell" in hz[0].message
    assert "annotate.state_tensors('n'" in hz[0].message and "update_state" in hz[0].message


def test_a_declared_state_reaching_the_recurrent_op_is_no_undeclared_state():
    g = _frozen_two_ports(varying(G().node("n", outputs=("y", "z"))))
    g.graph.nodes[0].fx = _recurrent_fx(hx_from_input=True)
    assert frozen_recurrent(g.graph.nodes[0]) == []
    assert kinds(g.run()) == [("frozen-constant", "n", "y", (1, 2)), ("frozen-constant", "n", "z", (1, 2))]


def test_lstm_hidden_state_tuple_of_constants_is_found():
    node = G().node("n").graph.nodes[0]
    node.fx = FxGraph(nodes=[FxNode("placeholder", "x", "x"),
                             FxNode("get_attr", "c4", "c4"), FxNode("get_attr", "c5", "c5"),
                             FxNode("call_function", "lstm", "torch.lstm", args=["%x", "(%c4, %c5)", "[]"])])
    assert frozen_recurrent(node) == [("torch.lstm", ["c4", "c5"])]


def test_watched_state_change_is_one_mutated_after_trace_naming_module_and_buffer():
    g = _frozen_two_ports(varying(G().node("n", outputs=("y", "z"))))
    g.graph.state_changes = [StateChange("MLPModel.obs_normalizer", "_mean", "in place", 5, ["n"]),
                             StateChange("Other", "w", "reassigned", None, ["elsewhere"])]
    hz = g.run()
    assert kinds(hz) == [("mutated-after-trace", "n", "y", (1, 2))]
    assert hz[0].ports == ["y", "z"]
    assert "MLPModel.obs_normalizer._mean (in place, 5 updates)" in hz[0].message
    assert "Other.w" not in hz[0].message        # not read by this node


def test_a_state_change_the_node_does_not_read_leaves_the_frozen_constant():
    g = _frozen_two_ports(varying(G().node("n", outputs=("y", "z"))))
    g.graph.state_changes = [StateChange("Other", "w", "reassigned", None, ["elsewhere"])]
    assert {h.kind for h in g.run()} == {"frozen-constant"}


def test_sample0_mutation_on_several_ports_is_one_hazard():
    g = varying(G().node("n", outputs=("y", "z")))
    for port in ("y", "z"):
        for k in range(3):
            g.out("n", port, k, [1.0 + k, 2.0], exp=[0.5 + k, 2.0], fx=[0.5 + k, 2.0])
    hz = g.run()
    assert kinds(hz) == [("mutated-after-trace", "n", "y", (0, 1, 2))]
    assert hz[0].ports == ["y", "z"] and "'z'" in hz[0].message


def test_torchscript_left_out_of_the_graph_is_trace_loss_not_mutation():
    g = varying(G().node("n"))
    g.log("INFO", "Node context initialized: n")
    g.log("WARNING", "Failed to decompose TorchScript ScriptMethod via TS2EPConverter: INTERNAL ASSERT")
    g.log("DEBUG", "Compiled graph module for n:\ngraph():\n    return x")
    for k in range(3):
        g.out("n", "y", k, [1.0 + k, 2.0], exp=[0.5 + k, 2.0], fx=[0.5 + k, 2.0])
    hz = g.run()
    assert kinds(hz) == [("trace-loss", "n", None, ())]
    assert "torch.jit._state.disable()" in hz[0].message


def test_reset_shapes():
    assert _reset_like(np.zeros((1, 4)))
    assert _reset_like(np.full((2, 3), 0.7))
    assert _reset_like(np.tile(np.array([[0.1, -0.4, 2.0]]), (5, 1)))     # a history backfill
    assert not _reset_like(np.array([[0.3, -0.2, 0.9]]))
    assert not _reset_like(np.array([[0.1, 0.2], [0.3, 0.4]]))


class _Norm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(3))
        self.register_buffer("var", torch.ones(3))
        self.lin = torch.nn.Linear(3, 1)


class _Policy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = _Norm()


def test_state_watch_sees_in_place_and_reassigned_buffers_of_live_modules():
    policy = _Policy()
    watch = StateWatch.begin()
    with torch.no_grad():
        policy.norm.mean.add_(1.0)
        policy.norm.mean.mul_(0.5)
        policy.norm.var = policy.norm.var * 2.0
    found = {(c.module, c.name): c for c in watch.changes() if c.module.startswith("_Policy")}
    assert set(found) == {("_Policy.norm", "mean"), ("_Policy.norm", "var")}
    assert (found["_Policy.norm", "mean"].how, found["_Policy.norm", "mean"].updates) == ("in place", 2)
    assert found["_Policy.norm", "var"].how == "reassigned"
    assert policy is not None

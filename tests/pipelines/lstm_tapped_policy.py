"""Clean, with taps: an LSTM joint policy written gate by gate, with ``tap()`` inside the node
(docs/deep-checks.md, "Taps over time").

Like ``lstm_joint_policy.py`` (declared ``h`` / ``c`` state, six named joints, exported to ONNX, a
long memory), but the cell is spelled out so that its intermediate values are tapped: ``gates``
(the four gate pre-activations), ``c_next`` (the new cell state) and ``h_next`` (the new hidden
state). Replayed on an engine, the node's tapped build gives the tap values at every step: the
steps × taps heatmap. ``Original`` is the same policy as a step_fn.
"""
import torch
from leapp import OutputKindEnum, TensorSemantics, annotate

from leapp_lab import tap

NAME = "lstm_tapped_policy"
OPTIONS = {"max_cached_io": 12}
EXPECTED = []
JOINTS = ["left_hip", "left_knee", "left_ankle", "right_hip", "right_knee", "right_ankle"]
HIDDEN = 16
TAPS = ["gates", "c_next", "h_next"]


class Policy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.ih = torch.nn.Linear(12, 4 * HIDDEN)
        self.hh = torch.nn.Linear(HIDDEN, 4 * HIDDEN, bias=False)
        self.head = torch.nn.Linear(HIDDEN, 6)
        with torch.no_grad():
            self.ih.bias[HIDDEN:2 * HIDDEN] += 2.5          # the forget gate: a long memory
            self.hh.weight.mul_(1.5)

    def forward(self, obs, h, c):
        gates = tap(self.ih(obs) + self.hh(h), "gates")
        i, f, g, o = gates.chunk(4, dim=1)
        c = tap(torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g), "c_next")
        h = tap(torch.sigmoid(o) * torch.tanh(c), "h_next")
        return torch.tanh(self.head(h)), h, c


def observations(n, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, 12, generator=g) for _ in range(n)]


def body():
    policy = Policy().eval()
    h, c = torch.zeros(1, HIDDEN), torch.zeros(1, HIDDEN)
    with torch.no_grad():
        for o in observations(OPTIONS["max_cached_io"]):
            obs = annotate.input_tensors("policy", {"obs": o})
            hs, cs = annotate.state_tensors("policy", {"h": h, "c": c})
            action, h_new, c_new = policy(obs, hs, cs)
            annotate.update_state("policy", {"h": h_new, "c": c_new})
            action = annotate.output_tensors("policy", TensorSemantics(
                name="action", ref=action, kind=OutputKindEnum.JOINT_POSITION, element_names=JOINTS,
                extra={"unit": "rad"}), export_with="onnx")
            h, c = h_new, c_new


class Original:
    """The policy, one step at a time (the step_fn of leapp_lab.replay / parity)."""

    def __init__(self):
        self.policy = Policy().eval()
        self.h, self.c = torch.zeros(1, HIDDEN), torch.zeros(1, HIDDEN)

    def __call__(self, inputs, reset):
        if reset:
            self.h, self.c = torch.zeros(1, HIDDEN), torch.zeros(1, HIDDEN)
        action, self.h, self.c = self.policy(inputs["policy/obs"], self.h, self.c)
        return {"policy/action": action, "policy/h": self.h, "policy/c": self.c}


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=OPTIONS["max_cached_io"])
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

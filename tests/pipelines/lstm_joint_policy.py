"""Clean: a recurrent (LSTM) joint policy with declared state and joint semantics, the shape robot
policies ship in (docs/deep-checks.md, "Replay on an engine"; notebooks/06_drift_over_time.ipynb).

``policy`` reads joint positions and velocities (``obs``, 12 named elements), carries its LSTM state
``h`` / ``c`` with ``state_tensors`` / ``update_state`` and returns joint position targets
(``action``, 6 named joints, rad). Exported to ONNX; the trace starts at an episode start (zero
state), so every replay on fp32 matches. The LSTM keeps its memory long (forget-gate bias +2.5):
an error one step adds stays in ``c`` for many steps, so an int8 engine drifts through the state.
``Original`` is the same policy as a step_fn.
"""
import torch
from leapp import InputKindEnum, OutputKindEnum, TensorSemantics, annotate

NAME = "lstm_joint_policy"
OPTIONS = {"max_cached_io": 20}
EXPECTED = []
JOINTS = ["left_hip", "left_knee", "left_ankle", "right_hip", "right_knee", "right_ankle"]
OBS = [f"{j}.pos" for j in JOINTS] + [f"{j}.vel" for j in JOINTS]
HIDDEN = 32


class Policy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.cell = torch.nn.LSTMCell(12, HIDDEN)
        self.head = torch.nn.Linear(HIDDEN, 6)
        with torch.no_grad():
            self.cell.bias_ih[HIDDEN:2 * HIDDEN] += 2.5          # the forget gate: a long memory
            self.cell.weight_hh.mul_(1.5)

    def forward(self, obs, h, c):
        h, c = self.cell(obs, (h, c))
        return torch.tanh(self.head(h)), h, c


def observations(n, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, 12, generator=g) for _ in range(n)]


def body():
    policy = Policy().eval()
    h, c = torch.zeros(1, HIDDEN), torch.zeros(1, HIDDEN)
    with torch.no_grad():
        for o in observations(OPTIONS["max_cached_io"]):
            obs = annotate.input_tensors("policy", TensorSemantics(
                name="obs", ref=o, kind=InputKindEnum.JOINT_POSITION, element_names=OBS))
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

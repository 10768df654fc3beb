"""The undeclared-GRU-state bug: the GRU's hidden state is not declared as a state port.

The same GRU policy as ``gru_module_state.py``, but the loop forgets ``annotate.module()``: the
registered buffer ``h_state`` is read while tracing as a plain tensor, so the export bakes in the
state of the first pass (zeros) as a constant and never carries it. Every later step of the exported
pipeline starts from that constant state: the closed-loop replay must diverge from step 1 on
``policy/action`` (docs/deep-checks.md), and the hazard is ``undeclared-state`` naming the frozen
tensor fed to ``torch.gru_cell`` as its hidden state (docs/hazards.md).
"""
import torch
from leapp import annotate

NAME = "gru_undeclared_state"
OPTIONS = {"max_cached_io": 5}
EXPECTED = [
    ("undeclared-state", "policy", "action", [1, 2, 3, 4]),
]


class GRUPolicy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRUCell(4, 8)
        self.head = torch.nn.Linear(8, 2)
        self.register_buffer("h_state", torch.zeros(1, 8))

    def forward(self, obs):
        h_out = self.gru(obs, self.h_state)
        self.h_state = h_out
        return torch.tanh(self.head(h_out))


def body():
    torch.manual_seed(0)
    model = GRUPolicy().eval()
    with torch.no_grad():
        for _ in range(5):
            obs = annotate.input_tensors("policy", {"obs": torch.randn(1, 4)})
            action = model(obs)                # no annotate.module("policy", model)
            annotate.output_tensors("policy", {"action": action}, export_with="onnx-torchscript")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=5)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

"""LEAPP's own stateful GRU example: module buffers tracked with ``annotate.module()``.

A GRU policy keeps its hidden state in a registered buffer and reassigns it in ``forward``
(``self.h_state = h_out``), exactly as LEAPP's ``BufferTracker`` documents; ``annotate.module``
turns the buffer into a state port with feedback. The export is right (an independent sequential
``InferenceManager`` run matches eager), but LEAPP 0.7.2 never fills the state-port cache on
re-entry: samples 1-4 of ``h_state`` (input and next state) are all-zero placeholders
(``unfilled-cache``). The replay must compare ``policy/action`` only where a real recorded value
exists and carry its own state (docs/deep-checks.md): replay ok.
"""
import torch
from leapp import annotate

NAME = "gru_module_state"
OPTIONS = {"max_cached_io": 5}
EXPECTED = [
    ("unfilled-cache", "policy", "h_state_out", [1, 2, 3, 4]),   # ONNX renames the state
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
            annotate.module("policy", model)
            action = model(obs)
            annotate.output_tensors("policy", {"action": action}, export_with="onnx-torchscript")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=5)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

"""unfilled-cache: recurrent state tracked with ``annotate.module()``.

LEAPP 0.7.2 does not record a module buffer on re-entries (BufferTracker.inject returns early), so
samples 1 and 2 of the state input ``h`` and the next state ``h`` stay at their zero placeholders
while the export itself is right. Every verdict of the node on those samples (``act`` fails there
too: it was recorded with the real state) is not evidence.
"""
import torch
from leapp import annotate

NAME = "module_state"
OPTIONS = {"max_cached_io": 3}
EXPECTED = [
    ("unfilled-cache", "rnn", "h", [1, 2]),
]


class Recurrent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("h", torch.zeros(1, 4))

    def forward(self, x):
        self.h = torch.tanh(self.lin(x) + self.h)
        return self.h * 2


def body():
    torch.manual_seed(0)
    model = Recurrent().eval()
    with torch.no_grad():
        for _ in range(3):
            x = annotate.input_tensors("rnn", {"obs": torch.randn(1, 4)})
            annotate.module("rnn", model)
            annotate.output_tensors("rnn", {"act": model(x)}, export_with="jit")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

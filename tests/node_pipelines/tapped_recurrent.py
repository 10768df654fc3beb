"""A recurrent actor: state declared with annotate.state_tensors / update_state, taps inside.

ONNX renames the state port ``h`` to ``h_in`` / ``h_out`` (notes §2). Sample k's ``h_in`` is
sample k-1's ``h_out``.
"""
import torch
from torch import nn
from leapp import annotate

from leapp_lab import tap

NAME = "tapped_recurrent"
OPTIONS = {"max_cached_io": 4}
STEPS = 5


class Cell(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(4, 8)
        self.rec = nn.Linear(8, 8, bias=False)
        self.head = nn.Linear(8, 2)

    def forward(self, x, h):
        pre = tap(self.inp(x) + self.rec(h), "pre")
        h_new = torch.tanh(pre)
        return self.head(h_new), h_new


def body(steps=STEPS, export_with="onnx"):
    torch.manual_seed(1)
    cell = Cell().eval()
    h = torch.zeros(1, 8)
    with torch.no_grad():
        for _ in range(steps):
            x = annotate.input_tensors("actor", {"obs": torch.randn(1, 4)})
            h_in = annotate.state_tensors("actor", {"h": h})
            action, h_new = cell(x, h_in)
            annotate.update_state("actor", {"h": h_new})
            annotate.output_tensors("actor", {"action": action}, export_with=export_with)
            h = h_new
    return cell


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", **OPTIONS)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

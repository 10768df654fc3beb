"""An observation encoder + an MLP actor whose int8 engine breaks at one layer (issue 19, D3/D4).

``encoder`` (Linear + tanh) feeds ``policy``; both export to ONNX. In the actor, ``l2`` has one
output channel ~1000x larger than the others (``l3`` reads it with a tiny weight, so the action
stays normal): per-tensor int8 of that activation rounds every other channel to zero, so the int8
engine's largest local error is where that activation is consumed. The encoder's own int8 error
reaches the policy through the data edge (inherited error).
Taps in ``policy``, in model order: l0, l1, l2, l3.
"""
import torch
from torch import nn
from leapp import annotate

from leapp_lab import tap

NAME = "encoded_policy"
OPTIONS = {"max_cached_io": 4}
STEPS = 4
OUTLIER = 1000.0


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(7)
        self.fcs = nn.ModuleList([nn.Linear(16, 32)] + [nn.Linear(32, 32) for _ in range(3)])
        self.head = nn.Linear(32, 4)
        with torch.no_grad():
            for f in [*self.fcs, self.head]:
                f.weight.copy_(torch.randn(f.weight.shape, generator=g) / f.weight.shape[1] ** 0.5)
                f.bias.copy_(0.1 * torch.randn(f.bias.shape, generator=g))
            self.fcs[2].weight[0] *= OUTLIER
            self.fcs[2].bias[0] = OUTLIER
            self.fcs[3].weight[:, 0] /= OUTLIER

    def forward(self, x):
        h = x
        for i, f in enumerate(self.fcs):
            h = tap(torch.relu(f(h)), f"l{i}")
        return self.head(h)


def body(steps=STEPS):
    torch.manual_seed(0)
    enc = nn.Linear(8, 16).eval()
    actor = Actor().eval()
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for _ in range(steps):
            obs = annotate.input_tensors("encoder", {"obs": torch.randn(8, 8, generator=g)})
            latent = annotate.output_tensors("encoder", {"latent": torch.tanh(enc(obs))}, export_with="onnx")
            x = annotate.input_tensors("policy", {"latent": latent})
            annotate.output_tensors("policy", {"action": actor(x)}, export_with="onnx")
    return enc, actor


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", **OPTIONS)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

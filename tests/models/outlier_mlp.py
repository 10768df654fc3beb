"""An MLP whose int8 engine fails because of one layer: ``l2`` has one output channel about 1000x
larger than the others, so per-tensor int8 of that activation rounds every other channel to zero.
Keeping that stretch of the graph in fp32 repairs the engine; the other layers quantize well.

Taps, in model order: l0, l1, l2, l3, l4 (then the head: output ``y``).
"""
import torch
from torch import nn

from leapp_lab import tap

IN, H, OUT = 16, 32, 4
OUTLIER = 1000.0


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(7)
        self.fcs = nn.ModuleList([nn.Linear(IN, H)] + [nn.Linear(H, H) for _ in range(4)])
        self.head = nn.Linear(H, OUT)
        with torch.no_grad():
            for f in [*self.fcs, self.head]:
                f.weight.copy_(torch.randn(f.weight.shape, generator=g) / f.weight.shape[1] ** 0.5)
                f.bias.copy_(0.1 * torch.randn(f.bias.shape, generator=g))
            # channel 0 of l2 is huge; l3 reads it with a tiny weight, so the output stays normal
            self.fcs[2].weight[0] *= OUTLIER
            self.fcs[2].bias[0] = OUTLIER
            self.fcs[3].weight[:, 0] /= OUTLIER

    def forward(self, x):
        h = x
        for i, f in enumerate(self.fcs):
            h = tap(torch.relu(f(h)), f"l{i}")
        return self.head(h)


def get_fwd_args():
    return (torch.randn(8, IN),)


def get_samples():
    g = torch.Generator().manual_seed(3)
    return [(torch.randn(8, IN, generator=g),) for _ in range(4)]

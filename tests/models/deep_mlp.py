"""A deep MLP for a long repair sweep (tests/integration/test_safety_egress.py): 16 tapped blocks
(Linear to a wide hidden layer, ReLU, Linear back, ReLU), so 17 segments and over a hundred possible
builds, each calibrated and verified on 16 samples. The wide hidden layers make a build cost about a
second of compute while the tapped values stay small (the reference is 8 MB). Its int8 engine misses
a tiny target; every segment kept in fp32 lowers the error a little, so the greedy rounds go on
until the budget ends them.

Taps, in model order: l0 ... l15 (then the head: the model output).
"""
import torch
from torch import nn

from leapp_lab import tap

IN, H, WIDE, OUT, LAYERS, BATCH, SAMPLES = 128, 128, 1024, 8, 16, 64, 16


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(11)
        self.ups = nn.ModuleList([nn.Linear(IN if i == 0 else H, WIDE) for i in range(LAYERS)])
        self.downs = nn.ModuleList([nn.Linear(WIDE, H) for _ in range(LAYERS)])
        self.head = nn.Linear(H, OUT)
        with torch.no_grad():
            for f in [*self.ups, *self.downs, self.head]:
                # He-scaled weights keep the activations of every layer at a similar range
                f.weight.copy_(torch.randn(f.weight.shape, generator=g) * (2.0 / f.weight.shape[1]) ** 0.5)
                f.bias.copy_(0.1 * torch.randn(f.bias.shape, generator=g))

    def forward(self, x):
        h = x
        for i, (up, down) in enumerate(zip(self.ups, self.downs)):
            h = tap(torch.relu(down(torch.relu(up(h)))), f"l{i}")
        return self.head(h)


def get_fwd_args():
    return (torch.randn(BATCH, IN),)


def get_samples():
    g = torch.Generator().manual_seed(5)
    return [(torch.randn(BATCH, IN, generator=g),) for _ in range(SAMPLES)]

"""An MLP whose middle activation leaves float16's range: ``big`` reaches about 2e5 (> 65504) on
every sample, and ``fc3`` scales it back down, so the float32 output stays ordinary. An fp16
engine would make ``big`` inf; prepare and verify name it from the reference before any build.

Taps, in model order: small, big (then the output)."""
import torch
from torch import nn

from leapp_lab import tap

IN, H, OUT = 8, 16, 3
SCALE = 4.0e4


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(11)
        self.fc1 = nn.Linear(IN, H)
        self.fc2 = nn.Linear(H, H)
        self.fc3 = nn.Linear(H, OUT)
        with torch.no_grad():
            for f in (self.fc1, self.fc2, self.fc3):
                f.weight.copy_(torch.randn(f.weight.shape, generator=g) / f.weight.shape[1] ** 0.5)
                f.bias.zero_()
            self.fc2.weight *= SCALE       # big: |value| about 2e5
            self.fc3.weight /= SCALE

    def forward(self, x):
        small = tap(torch.relu(self.fc1(x)), "small")
        big = tap(torch.relu(self.fc2(small)) + SCALE, "big")
        return self.fc3(big)


def get_fwd_args():
    return (torch.randn(4, IN),)


def get_samples():
    g = torch.Generator().manual_seed(5)
    return [(torch.randn(4, IN, generator=g) * 3,) for _ in range(3)]

"""A small conv net with tap() markers: image -> class logits.

Taps, in model order: stem, block1, block2, pooled.
"""
import torch
from torch import nn

from leapp_lab import tap


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.block1 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.block2 = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU())
        self.head = nn.Linear(16, 10)
        with torch.no_grad():  # non-trivial batch-norm statistics
            self.stem[1].running_mean.uniform_(-0.2, 0.2)
            self.stem[1].running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        x = tap(self.stem(x), "stem")
        x = x + self.block1(x)
        x = tap(x, "block1")
        x = tap(self.block2(x), "block2")
        pooled = tap(x.mean(dim=(2, 3)), "pooled")
        return self.head(pooled)


def get_fwd_args():
    return (torch.randn(1, 3, 16, 16),)


def get_samples():
    return [(torch.randn(1, 3, 16, 16),) for _ in range(2)]

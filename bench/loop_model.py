"""A MobileNetV2-class net for the loop benchmark (bench/bench_loop.py): a MODEL.py for leapp-lab prepare.

MobileNetV2's 17 inverted-residual blocks (expand 1x1, depthwise 3x3, project 1x1, batch norms, ReLU6,
residual adds) at 96 px, with the block count set by ``LEAPP_BENCH_BLOCKS`` (default 17): fewer
blocks keep MobileNetV2's first ones, more repeat its 96-channel stage (stride 1). Two samples.
"""
import os

import torch
from torch import nn

# MobileNetV2's (expansion, channels, repeats, stride)
SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
            (6, 320, 1, 1)]
SIZE = 96


def block_plan(blocks: int) -> list[tuple[int, int, int]]:
    """(expansion, channels, stride) of each block."""
    plan = [(t, c, s if i == 0 else 1) for t, c, n, s in SETTINGS for i in range(n)]
    if blocks <= len(plan):
        return plan[:blocks]
    extra = [(6, 96, 1)] * (blocks - len(plan))
    at = 13                                    # after the 96-channel stage
    return plan[:at] + extra + plan[at:]


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
        layers += [nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
                   nn.ReLU6(), nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.conv(x)
        return x + y if self.residual else y


class MobileNetLike(nn.Module):
    def __init__(self, blocks: int = 17, classes: int = 1000):
        super().__init__()
        layers = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
        cin = 32
        for t, c, s in block_plan(blocks):
            layers.append(InvertedResidual(cin, c, s, t))
            cin = c
        layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(1280, classes)
        with torch.no_grad():          # batch-norm statistics a trained net would have
            for m in self.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.1, 0.1)
                    m.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        x = self.features(x)
        return self.classifier(x.mean(dim=(2, 3)))


def Model():
    return MobileNetLike(int(os.environ.get("LEAPP_BENCH_BLOCKS", "17")))


def get_samples():
    return [(torch.randn(1, 3, SIZE, SIZE),) for _ in range(2)]


def get_fwd_args():
    return get_samples()[0]

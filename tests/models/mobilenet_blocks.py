"""A MobileNetV2-class conv net nobody tuned for int8 (verify --expected int8, issue 22): a stem
conv, then inverted-residual blocks (1x1 expand, 3x3 depthwise, 1x1 project; ReLU6; a residual
where stride 1 keeps the width), a tap after each, then global average pooling and a linear head.
Random (seeded) weights with non-trivial batch-norm statistics folded by the exporter.

``BLOCKS`` sets the depth (default 14; the environment variable ``LEAPP_LAB_MBV2_BLOCKS`` overrides
it); ``Model(blocks=N)`` and ``get_samples(size, n)`` make a smaller one (the fast test,
tests/integration/test_expected_int8.py; the full study is bench/bench_expected_int8.py).

Taps, in model order: stem, b0 ... b{BLOCKS-1}, pooled.
"""
import os

import torch
from torch import nn

from leapp_lab import tap

BLOCKS = int(os.environ.get("LEAPP_LAB_MBV2_BLOCKS", "14"))
SIZE = int(os.environ.get("LEAPP_LAB_MBV2_SIZE", "64"))
SAMPLES = int(os.environ.get("LEAPP_LAB_MBV2_SAMPLES", "4"))
#: (expansion, output width, stride) of each block, cycled
PLAN = [(1, 16, 1), (4, 24, 2), (4, 24, 1), (4, 32, 2), (4, 32, 1), (4, 32, 1), (4, 48, 2), (4, 48, 1),
        (4, 48, 1), (4, 64, 1), (4, 64, 1), (4, 80, 2), (4, 80, 1), (4, 80, 1), (4, 96, 1), (4, 96, 1)]


def _bn(c: int, g: torch.Generator) -> nn.BatchNorm2d:
    bn = nn.BatchNorm2d(c)
    with torch.no_grad():
        bn.running_mean.copy_(0.1 * torch.randn(c, generator=g))
        bn.running_var.copy_(0.5 + torch.rand(c, generator=g))
        bn.weight.copy_(0.8 + 0.4 * torch.rand(c, generator=g))
        bn.bias.copy_(0.1 * torch.randn(c, generator=g))
    return bn


class Block(nn.Module):
    def __init__(self, cin: int, expand: int, cout: int, stride: int, g: torch.Generator):
        super().__init__()
        mid = cin * expand
        layers = []
        if expand != 1:
            layers += [nn.Conv2d(cin, mid, 1, bias=False), _bn(mid, g), nn.ReLU6()]
        layers += [nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), _bn(mid, g), nn.ReLU6(),
                   nn.Conv2d(mid, cout, 1, bias=False), _bn(cout, g)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class Model(nn.Module):
    def __init__(self, blocks: int = BLOCKS):
        super().__init__()
        g = torch.Generator().manual_seed(22)
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), _bn(16, g), nn.ReLU6())
        made, cin = [], 16
        for i in range(blocks):
            e, c, s = PLAN[i % len(PLAN)]
            made.append(Block(cin, e, c, s, g))
            cin = c
        self.blocks = nn.ModuleList(made)
        self.head = nn.Linear(cin, 10)
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    fan_in = m.weight[0].numel()
                    m.weight.copy_(torch.randn(m.weight.shape, generator=g) * (2.0 / fan_in) ** 0.5)
        self.eval()

    def forward(self, x):
        x = tap(self.stem(x), "stem")
        for i, b in enumerate(self.blocks):
            x = tap(b(x), f"b{i}")
        pooled = tap(x.mean(dim=(2, 3)), "pooled")
        return self.head(pooled)


def get_fwd_args():
    return (torch.randn(1, 3, SIZE, SIZE),)


def get_samples(size: int = SIZE, n: int = SAMPLES):
    g = torch.Generator().manual_seed(7)
    return [(torch.randn(1, 3, size, size, generator=g),) for _ in range(n)]

"""A small ViT nobody tuned for int8 (verify --expected int8's fault study): a patch-embedding
convolution, a class token and position embedding, pre-norm encoder layers (LayerNorm, multi-head
softmax attention, residual Add, GELU MLP), a final LayerNorm and a linear head on the class token.
Random (seeded) weights, a tap after the embedding and after each encoder layer.

``LAYERS`` (default 8; ``LEAPP_LAB_VIT_LAYERS``), ``HIDDEN`` (default 192; ``LEAPP_LAB_VIT_HIDDEN``),
``SIZE`` (the image side, default 32; ``LEAPP_LAB_VIT_SIZE``) and ``SAMPLES`` (default 4) set its size.

Taps, in model order: embed, l0 ... l{LAYERS-1}, norm.
"""
import os

import torch
from torch import nn

from leapp_lab import tap

LAYERS = int(os.environ.get("LEAPP_LAB_VIT_LAYERS", "8"))
HIDDEN = int(os.environ.get("LEAPP_LAB_VIT_HIDDEN", "192"))
SIZE = int(os.environ.get("LEAPP_LAB_VIT_SIZE", "32"))
SAMPLES = int(os.environ.get("LEAPP_LAB_VIT_SAMPLES", "4"))
PATCH = 8
HEADS = 3


class Layer(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(self.n1(x)).reshape(b, t, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-1, -2) * hd ** -0.5, dim=-1) @ v
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.n2(x))))


class Model(nn.Module):
    def __init__(self, layers: int = LAYERS, d: int = HIDDEN, size: int = SIZE):
        super().__init__()
        g = torch.Generator().manual_seed(34)
        self.embed = nn.Conv2d(3, d, PATCH, PATCH)
        n = (size // PATCH) ** 2
        self.cls = nn.Parameter(0.02 * torch.randn(1, 1, d, generator=g))
        self.pos = nn.Parameter(0.02 * torch.randn(1, n + 1, d, generator=g))
        self.layers = nn.ModuleList(Layer(d, HEADS) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 10)
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Conv2d)):
                    fan_in = m.weight[0].numel()
                    m.weight.copy_(torch.randn(m.weight.shape, generator=g) * fan_in ** -0.5)
                    m.bias.copy_(0.02 * torch.randn(m.bias.shape, generator=g))
                elif isinstance(m, nn.LayerNorm):
                    m.weight.copy_(0.8 + 0.4 * torch.rand(m.weight.shape, generator=g))
                    m.bias.copy_(0.05 * torch.randn(m.bias.shape, generator=g))
        self.eval()

    def forward(self, x):
        p = self.embed(x).flatten(2).transpose(1, 2)
        x = tap(torch.cat([self.cls.expand(p.shape[0], -1, -1), p], dim=1) + self.pos, "embed")
        for i, layer in enumerate(self.layers):
            x = tap(layer(x), f"l{i}")
        x = tap(self.norm(x), "norm")
        return self.head(x[:, 0])


def get_fwd_args():
    return (torch.randn(1, 3, SIZE, SIZE),)


def get_samples(size: int = SIZE, n: int = SAMPLES):
    g = torch.Generator().manual_seed(7)
    return [(torch.randn(1, 3, size, size, generator=g),) for _ in range(n)]

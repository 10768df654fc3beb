"""A GPT-2 for the scale benchmark (bench/bench_scale.py): a MODEL.py for ``leapp-lab prepare``.

The layout of Hugging Face's ``GPT2LMHeadModel`` written out in torch (no ``transformers``, no hub,
random init): token and position embeddings, pre-norm blocks whose attention projects q, k and v in
one ``c_attn`` and splits them (``split`` -> ``view`` -> ``transpose``: the Reshape -> Split -> Reshape
chain an int8 engine shares one scale along), a GELU(tanh) MLP, and the logits through the tied
embedding (``lm_head.weight`` is ``wte.weight``: its transpose is a weights-only value).

``LEAPP_GPT2`` picks the configuration (``tiny``, ``mini``: 38 M parameters, ``small``: 124 M parameters, ``medium``: 355 M,
``large``: 774 M); ``LEAPP_GPT2_SEQ`` the sequence length (64), ``LEAPP_GPT2_SAMPLES`` the number
of input samples (2) and ``LEAPP_GPT2_TAPS=blocks`` a tap() after each block.
"""
import os

import torch
from torch import nn

from leapp_lab import tap

#: ``LEAPP_GPT2_TAPS=blocks``: a tap() after every block (prepare --debug-taps all exposes them)
BLOCK_TAPS = os.environ.get("LEAPP_GPT2_TAPS") == "blocks"

CONFIGS = {  # (layers, width, heads, vocabulary)
    "tiny": (2, 64, 2, 50257),
    "mini": (4, 512, 8, 50257),
    "small": (12, 768, 12, 50257),
    "medium": (24, 1024, 16, 50257),
    "large": (36, 1280, 20, 50257),
}
POSITIONS = 1024


class Conv1D(nn.Module):
    """GPT-2's projection: ``addmm`` over the flattened tokens, viewed back (Reshape -> Gemm -> Reshape)."""

    def __init__(self, nin: int, nout: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(nin, nout))
        self.bias = nn.Parameter(torch.zeros(nout))

    def forward(self, x):
        out = x.shape[:-1] + (self.weight.shape[1],)
        return torch.addmm(self.bias, x.view(-1, x.shape[-1]), self.weight).view(out)


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.c_attn = Conv1D(width, 3 * width)
        self.c_proj = Conv1D(width, width)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(x.shape[-1], dim=2)
        shape = (*x.shape[:-1], self.heads, -1)
        k = k.view(shape).transpose(1, 2)
        v = v.view(shape).transpose(1, 2)
        q = q.view(shape).transpose(1, 2)
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).reshape(*x.shape[:-1], -1)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(Conv1D(width, 4 * width), nn.GELU(approximate="tanh"),
                                 Conv1D(4 * width, width))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, layers: int, width: int, heads: int, vocab: int):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(POSITIONS, width)
        self.h = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.wte.weight          # tied, as GPT-2's
        with torch.no_grad():
            for p in self.parameters():
                if p.dim() > 1:
                    p.normal_(0.0, 0.02)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        for i, block in enumerate(self.h):
            x = block(x)
            if BLOCK_TAPS:
                x = tap(x, f"h{i}")
        return self.lm_head(self.ln_f(x))


def config() -> tuple[int, int, int, int]:
    return CONFIGS[os.environ.get("LEAPP_GPT2", "tiny")]


def Model():
    torch.manual_seed(0)
    return GPT2(*config()).eval()


def get_samples():
    seq = int(os.environ.get("LEAPP_GPT2_SEQ", "64"))
    n = int(os.environ.get("LEAPP_GPT2_SAMPLES", "2"))
    g = torch.Generator().manual_seed(1)
    return [(torch.randint(0, config()[3], (1, seq), generator=g),) for _ in range(n)]


def get_fwd_args():
    return get_samples()[0]

"""A model above protobuf's 2 GiB bound for the scale benchmark (``bench_scale.py --big``): a
2.1 GiB embedding table (550,000 x 1,024 fp32) read by token ids, a LayerNorm and a small head.
The weights are what make it large; the compute is tiny, so prepare, compile and verify show
the cost of the size alone. Random init, two samples of 64 tokens."""
import torch
from torch import nn

ROWS, WIDTH = 550_000, 1024


class Big(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(ROWS, WIDTH)
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, 64)

    def forward(self, ids):
        return self.head(self.norm(self.emb(ids)))


def Model():
    torch.manual_seed(0)
    return Big().eval()


def get_samples():
    g = torch.Generator().manual_seed(1)
    return [(torch.randint(0, ROWS, (1, 64), generator=g),) for _ in range(2)]


def get_fwd_args():
    return get_samples()[0]

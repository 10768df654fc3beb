"""Two nodes that use many kinds of torch operation (tests/integration/test_safety_fx_graphs.py):
every one must save to a run folder's module.json and rebuild from it, computing what the trace
recorded. ``net`` spans layer norm, convolution, embedding, chunk / split with getitem on their
tuples, einsum, in-place index assignment, where, gather, dtype casts; ``np_ops`` is NumPy code
LEAPP maps to torch.
"""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from leapp import annotate

NAME = "many_ops"
OPTIONS = {"max_cached_io": 2}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(8)
        self.conv = nn.Conv1d(1, 2, 3, padding=1)
        self.emb = nn.Embedding(5, 8)
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 8))

    def forward(self, x, idx):
        b = x.shape[0]
        y = self.ln(x) * self.scale
        z = self.conv(y.unsqueeze(1)).flatten(1)
        y = y + z[:, :8] - z[..., 8:]
        e = self.emb(idx).sum(1)
        a, c = torch.cat([y, e], dim=-1).split(8, dim=1)
        p, q = torch.chunk(a, 2, dim=-1)
        s = F.softmax(torch.cat([q, p], -1), dim=-1) + c.transpose(0, 1).T
        s = torch.einsum("bi,bj->bij", s, F.gelu(c)).mean(-1)
        s = torch.where(s > 0, s, s * 0.1).clamp(min=-1.0, max=1.0) ** 2
        m = s[:, 0:1].expand(-1, 8)
        t = torch.stack([s, m], 0).mean(0).to(torch.float32) + torch.zeros(b, 8, dtype=torch.float32)
        t = t + torch.arange(8, dtype=torch.float32) * F.silu(s)
        g = torch.gather(t, 1, t.argmax(dim=-1, keepdim=True))
        t = t - g
        t[:, 0] = 0.0
        return torch.tanh(t.abs().sqrt().reshape(b, 8)), g.squeeze(-1)


def body(steps: int = 3):
    torch.manual_seed(0)
    net = Net().eval()
    with torch.no_grad():
        for k in range(steps):
            x, idx = annotate.input_tensors("net", {"x": torch.randn(2, 8),
                                                    "idx": torch.tensor([[1, 2], [3, (k % 4) + 1]])})
            out, g = net(x, idx)
            annotate.output_tensors("net", {"out": out, "g": g}, export_with="onnx")
            y = annotate.input_tensors("np_ops", {"y": torch.randn(2, 4)})
            yn = y.numpy()
            r = np.clip(yn, -0.5, 0.5) * 2 + np.sqrt(np.abs(yn))
            r = np.concatenate([r, r[:, :1]], axis=1).astype(np.float32)
            annotate.output_tensors("np_ops", {"r": torch.from_numpy(r)}, export_with="onnx")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", **OPTIONS)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

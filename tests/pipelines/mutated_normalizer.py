"""mutated-after-trace: an observation normaliser whose running mean keeps updating.

The running-mean buffer is updated (in place, outside the traced computation) after every step,
as RL observation normalisers do. The FX graph holds the buffer by reference, so replaying the
trace on sample 0 already uses the updated mean and differs from what was recorded; the export,
made at compile time, uses the final mean.
"""
import torch
from leapp import annotate

NAME = "mutated_normalizer"
OPTIONS = {"max_cached_io": 3}
EXPECTED = [
    ("mutated-after-trace", "policy", "action", [0, 1, 2]),
]


class RunningNorm(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n))
        self.head = torch.nn.Linear(n, 2)

    def forward(self, x):
        return self.head(x - self.mean)

    @torch.no_grad()
    def update(self, x):
        self.mean.mul_(0.5).add_(0.5 * x.mean(0))


def body():
    torch.manual_seed(0)
    model = RunningNorm(4)
    for k in range(3):
        obs = torch.randn(3, 4) + k
        x = annotate.input_tensors("policy", {"obs": obs})
        annotate.output_tensors("policy", {"action": model(x)}, export_with="jit")
        model.update(obs)


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

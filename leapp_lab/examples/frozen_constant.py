"""A two-node robot-policy pipeline with a deliberate frozen-constant bug.

``normalizer`` scales each observation by its own spread, read with a live ``.item()``. During
tracing that call turns a traced value into a Python float, so the exported normaliser divides by
the spread of the *first* observation forever: sample 0 validates, every later sample (whose
observations have a different spread) does not. ``policy`` is a small MLP and exports correctly.

Run it three ways:

- ``leapp-lab demo --out DIR`` traces it with :func:`leapp_lab.trace` and writes a report;
- ``leapp-lab run path/to/frozen_constant.py -- OUT_DIR`` (plain LEAPP calls, see ``main``);
- ``python -m leapp_lab.examples.frozen_constant OUT_DIR`` (plain LEAPP, no leapp_lab at all).
"""
from __future__ import annotations

import sys

import torch
from torch import nn

OBS_DIM, HIDDEN, ACT_DIM = 8, 32, 4
SAMPLES = 5
SEED = 0


class ObsNormalizer(nn.Module):
    """Centres the observation and divides by its spread (the bug: the spread leaves the graph)."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        spread = obs.std().item()              # BUG: a live value read out as a Python float
        return (obs - obs.mean()) / (spread + 1e-6)


class Policy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS_DIM, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, ACT_DIM))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.net(x))


def build(seed: int = SEED) -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(seed)
    return ObsNormalizer().eval(), Policy().eval()


def observations(n: int = SAMPLES, seed: int = SEED) -> list[torch.Tensor]:
    """Observations whose scale and offset change from step to step, as a robot's would."""
    g = torch.Generator().manual_seed(seed + 1)
    return [torch.randn(1, OBS_DIM, generator=g) * (1.0 + 0.75 * k) + 0.2 * k for k in range(n)]


def step(normalizer: nn.Module, policy: nn.Module, obs: torch.Tensor) -> torch.Tensor:
    """One control step, annotated for LEAPP: two nodes, ``normalizer`` -> ``policy``."""
    from leapp import annotate

    with torch.no_grad():
        x = annotate.input_tensors("normalizer", {"obs": obs})
        feat = annotate.output_tensors("normalizer", {"features": normalizer(x)}, export_with="jit")
        z = annotate.input_tensors("policy", {"features": feat})
        return annotate.output_tensors("policy", {"action": policy(z)}, export_with="onnx")


DEFAULT_OUT = "demo-out"


def trace_demo(out_dir: str = DEFAULT_OUT, samples: int = SAMPLES):
    """Trace the pipeline with leapp_lab; returns the TraceReport (already saved)."""
    import leapp_lab

    normalizer, policy = build()
    obs = observations(samples)
    with leapp_lab.trace("frozen_constant", save_path=out_dir, max_cached_io=samples) as t:
        for o in obs:
            step(normalizer, policy, o)
    return t.report


def main(argv: list[str] | None = None) -> None:
    """Plain LEAPP, the way an export script is usually written."""
    import leapp

    argv = sys.argv[1:] if argv is None else argv
    out = argv[0] if argv else "out"
    normalizer, policy = build()
    leapp.start("frozen_constant", save_path=out, max_cached_io=SAMPLES)
    for o in observations():
        step(normalizer, policy, o)
    leapp.stop()
    print(leapp.compile_graph(visualize=False, strict=False))


if __name__ == "__main__":
    main()

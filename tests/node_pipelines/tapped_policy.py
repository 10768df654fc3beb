"""Observation normalizer + MLP actor, debug taps inside the actor (docs/taps.md, in LEAPP nodes).

``body(tap, tap_module)`` runs the pipeline for ``STEPS`` steps inside an already started LEAPP
session; pass ``tap=lambda x, name: x`` and ``tap_module=lambda name: nn.Identity()`` to trace the
same code without taps.
"""
import torch
from torch import nn
from leapp import annotate

from leapp_lab import Tap, tap as _tap

NAME = "tapped_policy"
OPTIONS = {"max_cached_io": 3}
STEPS = 4
BACKENDS = {"normalizer": "onnx", "policy": "onnx"}


class Actor(nn.Module):
    def __init__(self, tap_module=Tap):
        super().__init__()
        self.l1 = nn.Linear(6, 16)
        self.body = nn.Sequential(nn.Linear(16, 16), nn.ELU(), tap_module("body_act"))
        self.head = nn.Linear(16, 3)

    def forward(self, x, tap=_tap):
        h = tap(torch.relu(self.l1(x)), "hidden")
        h = self.body(h)
        return torch.tanh(self.head(h))


def body(tap=_tap, tap_module=Tap, steps=STEPS, backends=None):
    backends = {**BACKENDS, **(backends or {})}
    torch.manual_seed(0)
    actor = Actor(tap_module).eval()
    mean, std = torch.randn(1, 6) * 0.1, torch.rand(1, 6) + 0.5
    actions = []
    with torch.no_grad():
        for _ in range(steps):
            obs = annotate.input_tensors("normalizer", {"obs": torch.randn(1, 6)})
            obs_n = annotate.output_tensors("normalizer", {"obs_n": (obs - mean) / std},
                                            export_with=backends["normalizer"])
            x = annotate.input_tensors("policy", {"obs_n": obs_n})
            action = annotate.output_tensors("policy", {"action": actor(x, tap)},
                                             export_with=backends["policy"])
            actions.append(action)
    return actor, actions


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", **OPTIONS)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

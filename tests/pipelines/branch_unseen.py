"""Validation passes, fresh inputs fail: a Python branch the captured samples never took.

``if obs.abs().max() > 1.5`` halves large observations. Every traced observation is small, so the
trace records the branch *not taken* (LEAPP logs the boolean use: trace-loss) and every cached
sample validates. Fresh inputs drawn like the captured ones but scaled ×1.5 and ×3 cross the
threshold: the original halves them, the export does not (docs/deep-checks.md, parity).
"""
import torch
from leapp import annotate

NAME = "branch_unseen"
OPTIONS = {"max_cached_io": 4}
EXPECTED = [
    ("trace-loss", "clip", None, []),
]


def clip(obs):
    if obs.abs().max() > 1.5:          # never true while tracing
        obs = obs / 2
    return torch.tanh(obs) * 2.0


def body():
    torch.manual_seed(0)
    for _ in range(4):
        x = annotate.input_tensors("clip", {"obs": torch.randn(2, 4) * 0.5})
        annotate.output_tensors("clip", {"action": clip(x)}, export_with="jit")


def step_fn(inputs, reset):
    """The original pipeline, one step (stateless: reset changes nothing)."""
    return {"clip/action": clip(inputs["clip/obs"])}


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=4)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

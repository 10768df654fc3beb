"""trace-loss (boolean context) + frozen-constant: ``if x.sum() > 0:`` inside a node.

Only the branch taken on the traced pass is recorded. Sample 1 takes the other branch in Python,
so it fails; samples 0 and 2 take the traced branch and pass.
"""
import torch
from leapp import annotate

NAME = "bool_branch"
OPTIONS = {"max_cached_io": 3}
EXPECTED = [
    ("trace-loss", "gate", None, []),
    ("frozen-constant", "gate", "y", [1]),
]


def body():
    torch.manual_seed(0)
    for sign in (1.0, -1.0, 1.0):
        obs = torch.rand(2, 3) * sign + 0.1 * sign
        x = annotate.input_tensors("gate", {"obs": obs})
        if x.sum() > 0:
            y = x * 2
        else:
            y = x * 3
        annotate.output_tensors("gate", {"y": y}, export_with="jit")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

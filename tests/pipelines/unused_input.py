"""dropped-input: a policy annotated with a ``goal`` input it never uses.

LEAPP trims unused inputs from the exported model (with only a WARNING); the deployment then has
no ``goal`` port at all.
"""
import torch
from leapp import annotate

NAME = "unused_input"
OPTIONS = {"max_cached_io": 3}
EXPECTED = [
    ("dropped-input", "policy", "goal", []),
]


def body():
    torch.manual_seed(0)
    w = torch.randn(6, 2)
    for _ in range(3):
        obs, goal = annotate.input_tensors("policy", {"obs": torch.randn(1, 6), "goal": torch.randn(1, 2)})
        annotate.output_tensors("policy", {"action": torch.tanh(obs @ w)}, export_with="jit")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

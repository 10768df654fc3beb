"""constant-output: a gripper command clamped with a lower bound above every value it can take.

``torch.clamp(z, min=0.5)`` on values in (-0.5, 0.5) is 0.5 whatever the observation: the output
ignores its (varying) input. The arm action next to it varies normally.
"""
import torch
from leapp import annotate

NAME = "constant_gripper"
OPTIONS = {"max_cached_io": 3}
EXPECTED = [
    ("constant-output", "policy", "gripper", [0, 1, 2]),
]


def body():
    torch.manual_seed(0)
    w = torch.randn(4, 3)
    for _ in range(3):
        x = annotate.input_tensors("policy", {"obs": torch.randn(1, 4)})
        z = torch.tanh(x @ w)
        arm = z[:, :2]
        gripper = torch.clamp(z[:, 2:] * 0.49, min=0.5)
        annotate.output_tensors("policy", {"arm": arm, "gripper": gripper}, export_with="jit")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

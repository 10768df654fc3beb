"""Clean: an actor that also returns PD gains declared as ``static_outputs``, as Isaac Lab's export
annotator does (``annotate.output_tensors(..., static_outputs={"joint_pos_kp_gains": ...})``).

A declared static output is constant by definition: it must raise no hazard (no constant-output).
"""
import torch
from leapp import annotate

NAME = "static_gains"
OPTIONS = {"max_cached_io": 3}
EXPECTED: list = []


def body():
    torch.manual_seed(0)
    w = torch.randn(4, 2)
    kp = torch.tensor([[40.0, 40.0]])
    for _ in range(3):
        x = annotate.input_tensors("policy", {"obs": torch.randn(1, 4)})
        action = torch.tanh(x @ w)
        annotate.output_tensors("policy", {"action": action},
                                static_outputs={"joint_pos_kp_gains": kp}, export_with="onnx")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

"""Clean: a policy head whose tanh saturates (most actions are exactly +-1.0), ONNX export.

Saturated elements repeat across samples and ONNX's tanh differs from torch's in the last bits;
neither is a hazard: the outputs still vary with the inputs and every sample passes.
"""
import torch
from leapp import annotate

NAME = "clean_tanh"
OPTIONS = {"max_cached_io": 3}
EXPECTED = []


def body():
    torch.manual_seed(0)
    head = torch.nn.Linear(8, 4).eval()
    with torch.no_grad():
        for k in range(3):
            x = annotate.input_tensors("policy", {"obs": torch.randn(1, 8) * 20})
            annotate.output_tensors("policy", {"action": torch.tanh(head(x) * 10)}, export_with="onnx")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

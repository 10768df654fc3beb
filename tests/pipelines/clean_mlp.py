"""Clean: a two-node pipeline (preprocess jit -> MLP policy onnx), four different samples."""
import torch
from leapp import annotate

NAME = "clean_mlp"
OPTIONS = {"max_cached_io": 4}
EXPECTED = []


def body():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ELU(), torch.nn.Linear(16, 3)).eval()
    with torch.no_grad():
        for k in range(4):
            x = annotate.input_tensors("preprocess", {"obs": torch.randn(2, 6) * (k + 1)})
            feats = annotate.output_tensors(
                "preprocess", {"features": (x - x.mean()) / (x.std() + 1e-6)}, export_with="jit")
            f = annotate.input_tensors("policy", {"features": feats})
            annotate.output_tensors("policy", {"action": mlp(f)}, export_with="onnx")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=4)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

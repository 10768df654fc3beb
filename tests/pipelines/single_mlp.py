"""single-sample (and nothing else): a clean MLP traced on one observation only."""
import torch
from leapp import annotate

NAME = "single_mlp"
OPTIONS = {"max_cached_io": 1}
EXPECTED = [
    ("single-sample", "policy", None, [0]),
]


def body():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ELU(), torch.nn.Linear(8, 2))
    x = annotate.input_tensors("policy", {"obs": torch.randn(1, 4)})
    annotate.output_tensors("policy", {"action": mlp(x)}, export_with="jit")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=1)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

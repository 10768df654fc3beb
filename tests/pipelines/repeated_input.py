"""identical-samples: the same observation fed on every pass.

Three samples are cached, but they are one sample three times: nothing a later pass could reveal
(a frozen value, an error on another input) is tested.
"""
import torch
from leapp import annotate

NAME = "repeated_input"
OPTIONS = {"max_cached_io": 3}
EXPECTED = [
    ("identical-samples", "policy", None, [0, 1, 2]),
]


def body():
    torch.manual_seed(0)
    w = torch.randn(4, 2)
    obs = torch.randn(1, 4)
    for _ in range(3):
        x = annotate.input_tensors("policy", {"obs": obs.clone()})
        annotate.output_tensors("policy", {"action": torch.tanh(x @ w)}, export_with="jit")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

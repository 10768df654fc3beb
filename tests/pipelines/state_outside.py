"""Per-sample validation passes, the closed-loop replay diverges: the state is changed outside the
traced node between steps.

The encoder declares ``h_new`` as its next state (``update_state``), but the loop then carries
``0.5 * h_new`` (a leak applied by the environment wrapper). LEAPP records the state each pass
really received, so every cached transition validates; the exported pipeline feeds ``h_new`` back
unchanged, and from step 1 on its closed loop leaves the recorded trajectory. Only a replay that
feeds the exported state back can see it (docs/deep-checks.md).
"""
import torch
from leapp import annotate

NAME = "state_outside"
OPTIONS = {"max_cached_io": 5}
EXPECTED = []


def body():
    torch.manual_seed(0)
    w = torch.randn(4, 4) * 0.5
    h = torch.zeros(1, 4)
    for _ in range(5):
        o = annotate.input_tensors("encoder", {"obs": torch.randn(1, 4)})
        h_in = annotate.state_tensors("encoder", {"h": h})
        h_new = torch.tanh(o @ w + h_in)
        annotate.update_state("encoder", {"h": h_new})
        annotate.output_tensors("encoder", {"action": h_new * 2.0}, export_with="jit")
        h = 0.5 * h_new            # the leak, outside the traced node


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=5)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

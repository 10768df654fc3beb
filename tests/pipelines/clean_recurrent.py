"""Clean: a zero-initialised recurrent state (state_tensors / update_state) with cross-node feedback.

``h`` starts at exactly zero, which is a legitimate zero, not an unfilled cache slot: every sample
is recorded, FX replay and export agree. ``policy/action`` feeds back into ``encoder/prev_action``.
"""
import torch
from leapp import annotate

NAME = "clean_recurrent"
OPTIONS = {"max_cached_io": 4}
EXPECTED = []


def body():
    torch.manual_seed(0)
    w = torch.randn(4, 4) * 0.5
    p = torch.randn(4, 2)
    h = torch.zeros(1, 4)
    prev_action = torch.zeros(1, 2)
    for _ in range(4):
        o, pa = annotate.input_tensors("encoder", {"obs": torch.randn(1, 4), "prev_action": prev_action})
        h_in = annotate.state_tensors("encoder", {"h": h})
        h_new = torch.tanh(o @ w + h_in + pa.sum())
        annotate.update_state("encoder", {"h": h_new})
        latent = annotate.output_tensors("encoder", {"latent": h_new * 1.0}, export_with="jit")
        lat = annotate.input_tensors("policy", {"latent": latent})
        action = annotate.output_tensors("policy", {"action": torch.tanh(lat @ p)}, export_with="jit")
        h, prev_action = h_new, action


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=4)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

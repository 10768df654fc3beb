"""A warm start with no reset in the recording: the policy ran three steps before ``leapp.start()``
and the traced loop never resets it.

LEAPP saves sample 0 of ``encoder/h`` and ``encoder/prev_action`` (mid-episode values, neither
zeros nor a constant) as the initial values a deployed runtime starts every episode from. Every
cached transition validates and no reset was recorded, so the evidence is the saved initial value
alone (docs/hazards.md, warm-start).
"""
import torch
from leapp import annotate

NAME = "warm_start_no_reset"
OPTIONS = {"max_cached_io": 4}
EXPECTED = [
    ("warm-start", "encoder", "h", [0]),
    ("warm-start", "encoder", "prev_action", [0]),
]


def body(warm_steps=3):
    torch.manual_seed(0)
    w, p = torch.randn(4, 4) * 0.5, torch.randn(4, 2)
    h, prev = torch.zeros(1, 4), torch.zeros(1, 2)
    for _ in range(warm_steps):            # the episode is already running: not traced
        h = torch.tanh(torch.randn(1, 4) @ w + h + prev.sum())
        prev = torch.tanh(h @ p)
    for _ in range(4):
        o, pa = annotate.input_tensors("encoder", {"obs": torch.randn(1, 4), "prev_action": prev})
        h_in = annotate.state_tensors("encoder", {"h": h})
        h_new = torch.tanh(o @ w + h_in + pa.sum())
        annotate.update_state("encoder", {"h": h_new})
        latent = annotate.output_tensors("encoder", {"latent": h_new * 1.0}, export_with="jit")
        lat = annotate.input_tensors("policy", {"latent": latent})
        action = annotate.output_tensors("policy", {"action": torch.tanh(lat @ p)}, export_with="jit")
        h, prev = h_new, action


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=4)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

"""A warm start: the trace began mid-episode, so LEAPP saved a mid-episode state as the initial
value, and the exported pipeline diverges after an episode reset.

Three steps of the episode run before the traced loop (the policy was already running), so sample
0 of ``encoder/h`` and ``encoder/prev_action`` is not the reset state: LEAPP saves exactly that as
the feedback initial values. At step 3 the episode ends and the Python policy resets its state to
zeros; a deployed runtime resets to the saved initial values instead. Every cached transition
validates; the closed-loop replay matches steps 0-2 and diverges from the reset at step 3. The
recorded reset itself is the evidence of the ``warm-start`` hazard (no step_fn needed).
"""
import torch
from leapp import annotate

NAME = "warm_start"
OPTIONS = {"max_cached_io": 6}
# the recording holds the reset at step 3 back to zeros while the saved initial values are not zero
EXPECTED = [
    ("warm-start", "encoder", "h", [3]),
    ("warm-start", "encoder", "prev_action", [3]),
]
RESET_AT = 3


def weights():
    torch.manual_seed(0)
    return torch.randn(4, 4) * 0.5, torch.randn(4, 2)


def policy_step(obs, prev_action, h, w, p):
    """The policy: one step (plain torch; used traced and untraced)."""
    h_new = torch.tanh(obs @ w + h + prev_action.sum())
    return h_new, torch.tanh(h_new @ p)


def body(warm_steps=3):
    """``warm_steps`` untraced steps first (0: the trace starts at an episode start, no warm start)."""
    w, p = weights()
    h, prev = torch.zeros(1, 4), torch.zeros(1, 2)
    for _ in range(warm_steps):            # the episode is already running: not traced
        h, prev = policy_step(torch.randn(1, 4), prev, h, w, p)
    for t in range(6):
        if t == RESET_AT:                  # the episode ends: the policy resets its state
            h, prev = torch.zeros(1, 4), torch.zeros(1, 2)
        o, pa = annotate.input_tensors("encoder", {"obs": torch.randn(1, 4), "prev_action": prev})
        h_in = annotate.state_tensors("encoder", {"h": h})
        h_new = torch.tanh(o @ w + h_in + pa.sum())
        annotate.update_state("encoder", {"h": h_new})
        latent = annotate.output_tensors("encoder", {"latent": h_new * 1.0}, export_with="jit")
        lat = annotate.input_tensors("policy", {"latent": latent})
        action = annotate.output_tensors("policy", {"action": torch.tanh(lat @ p)}, export_with="jit")
        h, prev = h_new, action


class Original:
    """The same policy as a step_fn for leapp_lab.replay / parity: reset=True zeroes the state."""

    def __init__(self):
        self.w, self.p = weights()
        self.h, self.prev = torch.zeros(1, 4), torch.zeros(1, 2)

    def __call__(self, inputs, reset):
        if reset:
            self.h, self.prev = torch.zeros(1, 4), torch.zeros(1, 2)
        self.h, self.prev = policy_step(inputs["encoder/obs"], self.prev, self.h, self.w, self.p)
        return {"encoder/latent": self.h, "encoder/h": self.h, "policy/action": self.prev}


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=6)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

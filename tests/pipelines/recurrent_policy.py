"""Clean: a recurrent policy whose exported pipeline replays the captured trajectory, fresh
observations and episode resets exactly (docs/deep-checks.md, replay tiers a and b).

The encoder carries its state with ``state_tensors`` / ``update_state`` and is exported to ONNX
(which renames the state ``h`` to ``h_in`` / ``h_out``); the policy head is TorchScript and its
action is fed back as ``prev_action``. The trace starts at an episode start (zero state), so
LEAPP's saved initial values are the reset state. ``Original`` is the same policy as a step_fn.
"""
import torch
from leapp import annotate

NAME = "recurrent_policy"
OPTIONS = {"max_cached_io": 5}
EXPECTED = []


def weights():
    torch.manual_seed(0)
    return torch.randn(4, 4) * 0.5, torch.randn(4, 4) * 0.5, torch.randn(4, 2)


def encoder(obs, prev_action, h, wx, wh):
    return torch.tanh(obs @ wx + h @ wh + prev_action.mean())


def body():
    wx, wh, p = weights()
    h, prev = torch.zeros(1, 4), torch.zeros(1, 2)
    for _ in range(5):
        o, pa = annotate.input_tensors("encoder", {"obs": torch.randn(1, 4), "prev_action": prev})
        h_in = annotate.state_tensors("encoder", {"h": h})
        h_new = encoder(o, pa, h_in, wx, wh)
        annotate.update_state("encoder", {"h": h_new})
        latent = annotate.output_tensors("encoder", {"latent": h_new * 1.0}, export_with="onnx")
        lat = annotate.input_tensors("policy", {"latent": latent})
        action = annotate.output_tensors("policy", {"action": torch.tanh(lat @ p)}, export_with="jit")
        h, prev = h_new, action


class Original:
    """The policy, one step at a time (the step_fn of leapp_lab.replay / parity)."""

    def __init__(self):
        self.wx, self.wh, self.p = weights()
        self.h, self.prev = torch.zeros(1, 4), torch.zeros(1, 2)

    def __call__(self, inputs, reset):
        if reset:
            self.h, self.prev = torch.zeros(1, 4), torch.zeros(1, 2)
        self.h = encoder(inputs["encoder/obs"], self.prev, self.h, self.wx, self.wh)
        self.prev = torch.tanh(self.h @ self.p)
        return {"encoder/latent": self.h, "encoder/h": self.h, "policy/action": self.prev}


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=5)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

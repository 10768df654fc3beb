"""Errors by meaning (docs/semantics.md): a joint policy whose ports declare LEAPP semantics.

``q`` (joint positions) and ``action`` (joint position targets, unit rad) name six joints;
``chunk`` is an action chunk of 3 steps along a ``TemporalAxis(20 ms)``. One value is frozen at
trace time (``float()`` of the knee's position), and it is added to the *left knee* only: every
later sample fails on that joint alone, so the per-element breakdown names ``left_knee`` (and
``t+2/left_knee`` in the chunk, the only step it perturbs) as the worst element.
"""
import torch
from leapp import OutputKindEnum, InputKindEnum, TemporalAxis, TensorSemantics, annotate

NAME = "joint_semantics"
OPTIONS = {"max_cached_io": 4}
JOINTS = ["left_hip", "left_knee", "left_ankle", "right_hip", "right_knee", "right_ankle"]
KNEE = JOINTS.index("left_knee")
EXPECTED = [
    ("trace-loss", "policy", None, []),
    ("frozen-constant", "policy", "action", [1, 2, 3]),
    ("frozen-constant", "policy", "chunk", [1, 2, 3]),
]


def weights():
    torch.manual_seed(0)
    return torch.randn(6, 6) * 0.4, torch.randn(6, 18) * 0.4


def masks():
    knee = torch.zeros(1, 6)
    knee[0, KNEE] = 1.0
    step2 = torch.zeros(1, 3, 6)
    step2[0, 2, KNEE] = 1.0
    return knee, step2


def policy(q, w, wc, knee_offset, knee, step2):
    action = torch.tanh(q @ w) + 0.5 * knee_offset * knee
    chunk = torch.tanh(q @ wc).reshape(1, 3, 6) + 0.5 * knee_offset * step2
    return action, chunk


def body():
    w, wc = weights()
    knee, step2 = masks()
    gen = torch.Generator().manual_seed(1)
    for _ in range(4):
        q0 = torch.randn(1, 6, generator=gen)
        q = annotate.input_tensors("policy", TensorSemantics(
            name="q", ref=q0, kind=InputKindEnum.JOINT_POSITION, element_names=JOINTS))
        offset = float(q[0, KNEE])          # leaves the graph: frozen at the first pass
        action, chunk = policy(q, w, wc, offset, knee, step2)
        annotate.output_tensors("policy", [
            TensorSemantics(name="action", ref=action, kind=OutputKindEnum.JOINT_POSITION,
                            element_names=JOINTS, extra={"unit": "rad"}),
            TensorSemantics(name="chunk", ref=chunk, kind=OutputKindEnum.JOINT_POSITION,
                            element_names=[TemporalAxis(20.0), JOINTS])], export_with="onnx")


class Original:
    """The policy as Python runs it (the step_fn of parity / replay): the knee's offset is read from
    each observation, where the export froze the first one."""

    def __init__(self):
        self.w, self.wc = weights()
        self.knee, self.step2 = masks()

    def __call__(self, inputs, reset):
        q = inputs["policy/q"]
        action, chunk = policy(q, self.w, self.wc, float(q[0, KNEE]), self.knee, self.step2)
        return {"policy/action": action, "policy/chunk": chunk}


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=4)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

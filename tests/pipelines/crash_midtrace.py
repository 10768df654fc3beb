"""trace-refused: the traced code raises half-way through a node, on the second pass.

The session never reaches compile_graph; leapp_lab still reports the graph, with status "error"
and the exception as its message.
"""
import torch
from leapp import annotate

NAME = "crash_midtrace"
OPTIONS = {"max_cached_io": 3}
EXPECTED = [
    ("trace-refused", None, None, []),
]


class SensorDropout(RuntimeError):
    pass


def body():
    torch.manual_seed(0)
    for k in range(3):
        x = annotate.input_tensors("policy", {"obs": torch.randn(1, 4)})
        if k == 1:
            raise SensorDropout("lidar frame missing at step 1")
        annotate.output_tensors("policy", {"action": x * 2}, export_with="jit")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

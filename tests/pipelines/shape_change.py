"""trace-refused: the observation changes shape on the third pass; the script catches LEAPP's error.

LEAPP refuses the re-entry with a FATAL record ("Reentering policy with new i/o obs but the
description has changed ..."). The script catches the exception itself and goes on to export the
two passes it has: the export silently does not cover what the script did.
"""
import torch
from leapp import annotate

NAME = "shape_change"
OPTIONS = {"max_cached_io": 3}
EXPECTED = [
    ("trace-refused", None, None, []),
]


def body():
    torch.manual_seed(0)
    try:
        for k in range(3):
            width = 5 if k == 2 else 4
            x = annotate.input_tensors("policy", {"obs": torch.randn(2, width)})
            annotate.output_tensors("policy", {"action": x * 2}, export_with="jit")
    except Exception as exc:   # the script "handles" the error and carries on
        print(f"ignoring: {str(exc).splitlines()[0]}")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

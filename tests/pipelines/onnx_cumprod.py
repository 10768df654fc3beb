"""Exporter matrix: a node the ONNX exporters cannot lower, that jit, jit-trace and pt2 export.

``torch.cumprod`` has no ONNX function in torch 2.13's dynamo exporter ("No ONNX function found for
prims.prod") and the TorchScript-based one fails too, so ``export_with="onnx"`` makes LEAPP refuse
the compile. The trace itself is right: the exporter matrix shows which backends export the node
and validate (docs/deep-checks.md); the isolation runs decide "export".
"""
import torch
from leapp import annotate

NAME = "onnx_cumprod"
OPTIONS = {"max_cached_io": 3}
EXPECTED = [
    ("trace-refused", None, None, []),
]
RAISES = "Error compiling model discount"     # leapp_lab.trace raises LEAPP's refusal (after saving)


def body():
    torch.manual_seed(0)
    for _ in range(3):
        x = annotate.input_tensors("discount", {"rewards": torch.rand(1, 5) * 0.5 + 0.5})
        g = annotate.output_tensors("discount", {"gain": torch.cumprod(x, dim=-1)}, export_with="onnx")
        y = annotate.input_tensors("head", {"gain": g})
        annotate.output_tensors("head", {"value": y.sum(dim=-1, keepdim=True)}, export_with="jit")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

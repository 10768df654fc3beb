"""export-mismatch: integer floor division exported by the TorchScript-based ONNX exporter.

``idx // 4`` on int64 floors in torch (-5 // 4 == -2) but the legacy ``onnx-torchscript`` exporter
lowers it to ONNX ``Div``, which truncates (-5 / 4 == -1). The trace is right (FX replay equals
Python), the exported model is off by one bin wherever the index is negative.
"""
import torch
from leapp import annotate

NAME = "floor_div_export"
OPTIONS = {"max_cached_io": 3}
EXPECTED = [
    ("export-mismatch", "quantize", "bins", [0, 1, 2]),
]


def body():
    torch.manual_seed(0)
    for _ in range(3):
        x = annotate.input_tensors("quantize", {"obs": torch.randn(2, 8) * 10})
        bins = (x.to(torch.int64) // 4).to(torch.float32)
        annotate.output_tensors("quantize", {"bins": bins}, export_with="onnx-torchscript")


if __name__ == "__main__":
    import sys
    import leapp
    leapp.start(NAME, save_path=sys.argv[1] if len(sys.argv) > 1 else ".", max_cached_io=3)
    body()
    leapp.stop()
    leapp.compile_graph(visualize=False, validate=True, strict=False)

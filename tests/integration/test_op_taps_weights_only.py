"""Op taps on a tied-embedding model stored ``Transpose(lm_head.weight)`` once per sample, in the
reference and again in the build's sample_outputs.npz: a value of the weights alone, the same on
every sample, and on GPT-2 tiny most of the tap bytes. Op taps skip values no graph input reaches."""
from __future__ import annotations

import numpy as np
import onnx
import torch
from torch import nn

import leapp_lab


class TiedHead(nn.Module):
    # above the exporter's constant-folding size bound (1 M elements), so the transpose of the
    # shared weight stays a node of the graph, as GPT-2's does
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(2100, 512)
        self.norm = nn.LayerNorm(512)
        self.head = nn.Linear(512, 2100, bias=False)
        self.head.weight = self.emb.weight              # tied: the export transposes the shared weight

    def forward(self, ids):
        return {"logits": self.head(self.norm(self.emb(ids)))}


def test_op_taps_leave_out_values_of_the_weights_alone(tmp_path):
    torch.manual_seed(0)
    samples = [(torch.randint(0, 2100, (1, 6)),) for _ in range(3)]
    onnx_p, ref = tmp_path / "m.onnx", tmp_path / "m.reference.npz"
    leapp_lab.prepare({"model": TiedHead().eval(), "samples": samples}, onnx_p, tmp_path / "m.npz", ref,
                      op_taps=True)
    g = onnx.load(str(onnx_p)).graph
    transposed = [o for n in g.node if n.op_type == "Transpose" for o in n.output]
    assert transposed, [n.op_type for n in g.node]          # the weights-only value is in the graph
    with np.load(ref) as z:
        names = set(z.files)
    assert not set(transposed) & names, sorted(names)
    # what depends on the input is still tapped, and compile + verify run over it
    assert any(n.op_type == "LayerNormalization" and n.output[0] in names for n in g.node), sorted(names)
    build = leapp_lab.compile(onnx_p, "ort", naive_check=False)
    assert not {t.name for t in build.manifest.taps} & set(transposed)
    rep = leapp_lab.verify(ref, build.path, save=False, max_mape=1)
    assert rep.exit_code == 0

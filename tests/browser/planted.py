"""Reports with a defect planted where a test knows it, one per report kind, for the first-screen
tests (issue 21, Must show). Real builds and runs, saved in run folders under one root, so the
offline report and a notebook load the same ones.

- trace: conftest's ``frozen_trace`` (``.item()`` freezes a literal into node ``scale``);
- the broken layer: tests/models/conv_net.py with every tap, ``block2``'s conv weights perturbed in
  the engine's ONNX only: ``verify`` (ort: block2 is the first divergent row), ``verify --local``
  (ort-int8: block2 adds the error), ``diff`` and an engines compare of the clean and broken ort
  builds (block2 flips to fail);
- op taps: conv_net with op taps, the same perturbation, ort-int8 with ``--local``: the convs are
  fused away (not-in-engine rows), block2's relu (``relu_2``) adds the error;
- repair: tests/models/repairs.py's int8 repair of the outlier MLP (its kept segments).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

BROKEN = "block2"                       # the layer whose weights the engine gets wrong
BROKEN_INIT = "block2.0.weight"


def _copy(src_onnx: Path, npz: Path, folder: Path, perturb: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    m = onnx.load(str(src_onnx))
    if perturb:
        init = next(i for i in m.graph.initializer if i.name == BROKEN_INIT)
        w = numpy_helper.to_array(init).copy()
        w += np.random.default_rng(0).standard_normal(w.shape).astype(np.float32) * np.float32(w.std() * 0.05)
        init.CopyFrom(numpy_helper.from_array(w, init.name))
    onnx.save(m, str(folder / "model.onnx"))
    shutil.copy(npz, folder / "model.npz")
    return folder / "model.onnx"


def make(root: Path, trace) -> dict:
    """{kind: report} for trace, verify, local, op, diff, engines, repair (each saved: ``.path``)."""
    import leapp_lab
    from tests.models.builds import prepared
    from tests.models.repairs import int8_repair

    root.mkdir(parents=True, exist_ok=True)
    b = prepared("conv_net", taps=("all",))
    clean = leapp_lab.compile(_copy(b.onnx, b.npz, root / "clean", False), "ort", naive_check=False)
    broken_onnx = _copy(b.onnx, b.npz, root / "broken", True)
    broken = leapp_lab.compile(broken_onnx, "ort", naive_check=False)
    int8 = leapp_lab.compile(broken_onnx, "ort-int8", naive_check=False)
    out = {"trace": trace}
    clean_run = leapp_lab.verify(b.reference, clean.path, out=root / "runs-clean")
    out["verify"] = leapp_lab.verify(b.reference, broken.path, out=root / "runs-verify")
    out["local"] = leapp_lab.verify(b.reference, int8.path, out=root / "runs-local", local=True)
    out["diff"] = leapp_lab.diff(clean_run.path, out["verify"].path, out=root / "runs-diff")
    out["engines"] = leapp_lab.verify_many(b.reference, [clean.path, broken.path], out=root / "runs-engines",
                                           labels=["ort clean", "ort broken"])
    op = prepared("conv_net", op=True)
    op_build = leapp_lab.compile(_copy(op.onnx, op.npz, root / "op", True), "ort-int8", naive_check=False)
    out["op"] = leapp_lab.verify(op.reference, op_build.path, out=root / "runs-op", local=True)
    out["repair"] = int8_repair()
    return out

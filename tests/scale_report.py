"""A verify run at real scale (2,000 rows by default) for the view tests and bench/bench_views.py.

Cheap but real: a reference npz and a build folder (``sample_outputs.npz`` + ``build.json`` with a
tap manifest) are written to disk and ``leapp_lab.verify`` compares them, so every number, status,
reason and histogram comes from the real pipeline. The rows read like the op taps of a deep
transformer exported from torch (``gelu_37`` in scope ``blocks.3.mlp``) run in emulated fp16:

* small rounding noise that grows slowly with depth (rows pass);
* every Softmax of blocks ``SPIKE_BLOCKS`` diverges (nrmse ~3 %): the first divergent row is the
  first of them, and there are more further down (``n`` / ``j`` has somewhere to go);
* at ``OVERFLOW_ROW`` one tensor overflows: a few elements are inf on the engine side only (nrmse
  stays tiny and cosine 1, so the row diverges for its non-finite values alone), and the next
  ``ALL_NONFINITE`` rows are inf everywhere on the engine side (no finite pair at all);
* one plugin tap has no reference (uncompared) and one tap has another shape in the engine.

    from tests.scale_report import scale_verify
    report = scale_verify(tmp_path)          # a saved VerifyReport (report.path: its run folder)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

OPS = (("LayerNormalization", "layer_norm", "ln_1"), ("MatMul", "matmul", "attn"), ("MatMul", "matmul", "attn"),
       ("MatMul", "matmul", "attn"), ("Softmax", "softmax", "attn"), ("MatMul", "matmul", "attn"),
       ("Add", "add", ""), ("LayerNormalization", "layer_norm", "ln_2"), ("MatMul", "matmul", "mlp"),
       ("Gelu", "gelu", "mlp"), ("MatMul", "matmul", "mlp"), ("Add", "add", ""))
SPIKE_BLOCKS = (40, 41, 90)
OVERFLOW_ROW = 1500
ALL_NONFINITE = 120


def _layout(rows: int) -> list[dict]:
    """One dict per row in model order: name, kind, op, scope, source."""
    out, counters = [], {}
    i = 0
    while len(out) < rows - 1:
        block = i // (len(OPS) + 1)
        j = i % (len(OPS) + 1)
        i += 1
        if j == len(OPS):           # a manual tap at the end of each block
            out.append({"name": f"block_{block}", "kind": "manual", "op": "Add", "scope": f"blocks.{block}",
                        "source": f"model.py:{88}"})
            continue
        op, stem, sub = OPS[j]
        counters[stem] = counters.get(stem, -1) + 1
        scope = f"blocks.{block}" + (f".{sub}" if sub else "")
        out.append({"name": f"{stem}_{counters[stem]}", "kind": "op", "op": op, "scope": scope,
                    "source": f"transformer.py:{40 + j * 3}"})
    out.append({"name": "output_0", "kind": "output", "op": "MatMul", "scope": "head", "source": "model.py:95"})
    return out


def write_scale_run(root: Path, rows: int = 2000, samples: int = 3, elements: int = 48,
                    seed: int = 0) -> tuple[Path, Path]:
    """reference npz + build folder under ``root``; returns (reference path, build folder)."""
    from leapp_lab.model.build import BuildReport
    from leapp_lab.model.jsonio import save_npz
    from leapp_lab.model.tap import Manifest, TapEntry

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    layout = _layout(rows)
    ref, eng, taps, outputs = {}, {}, [], []
    plugin_at, shape_at = rows // 3, rows // 3 + 7
    for k, row in enumerate(layout):
        r = rng.standard_normal((samples, elements)).astype(np.float32)
        block = k // (len(OPS) + 1)
        scale = 2e-4 * (1 + k / rows)
        if row["op"] == "Softmax" and block in SPIKE_BLOCKS:
            scale = 3e-2
        e = (r + rng.standard_normal(r.shape).astype(np.float32) * np.float32(scale)).astype(np.float32)
        if k == OVERFLOW_ROW:
            e[:, :2] = np.inf                       # overflow in a few elements, the rest is fine
        elif OVERFLOW_ROW < k <= OVERFLOW_ROW + ALL_NONFINITE:
            e[:] = np.inf                           # every element overflowed
        name = row["name"]
        entry = TapEntry(name, row["kind"], k, name, producer_op=row["op"], producer_node=f"node_{name}",
                         reference_source="torch", source=row["source"], scope=row["scope"],
                         dtype="float32", shape=[elements])
        if k == plugin_at:
            entry.kind, entry.reference_source = "plugin", None
            entry.uncompared_reason = "custom op boundary without a torch reference"
            eng[name] = e
        elif k == shape_at:
            ref[name], eng[name] = r, e[:, : elements // 2]
        else:
            ref[name], eng[name] = r, e
        (outputs if row["kind"] == "output" else taps).append(
            entry.bind("uncompared" if k == plugin_at else "bound", bound_to=name, via="direct"))
    save_npz(root / "model.reference.npz", ref)
    build = root / "model.ort-fp16"
    build.mkdir(exist_ok=True)
    save_npz(build / "sample_outputs.npz", eng)
    manifest = Manifest(inputs=["x"], outputs=outputs, taps=taps)
    BuildReport(engine="ort-fp16", onnx="model.onnx", npz="model.npz", artifact="engine.onnx",
                outputs=[x["name"] for x in layout], model_outputs=["output_0"], samples=samples,
                manifest=manifest).save(build)
    x = rng.standard_normal((samples, 4, 8)).astype(np.float32)
    save_npz(root / "model.npz", {"x": x})
    return root / "model.reference.npz", build


def scale_verify(root: Path, rows: int = 2000, samples: int = 3, elements: int = 48, seed: int = 0):
    """The verify report of ``write_scale_run`` (saved under ``root/lab``)."""
    import leapp_lab
    ref, build = write_scale_run(root, rows, samples, elements, seed)
    return leapp_lab.verify(str(ref), str(build), out=Path(root) / "lab", verbose=True)

"""Benchmark: ``leapp_lab.verify`` over >= 1 GB of tap data, against the floor of any comparison.

The floor ("baseline") is what every comparison must at least do: load both npz files with numpy
and take one bare ``np.abs(a - b)`` pass over every pair of arrays. verify does much more per
element (float64 MAPE, MSE, max |diff|, cosine, min atol, non-finite counts, a log |diff|
histogram, per sample and per row) and writes its run folder. Both are measured side by side in one
run, alternating, on the same warm page cache; the script prints the best time of each and the
ratio verify / baseline (target <= 2).

    .venv/bin/python bench/bench_verify.py                 # 64 taps x 16 samples x 256 Ki floats
    .venv/bin/python bench/bench_verify.py --gib 0.1       # a quick small run
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def make_data(root: Path, taps: int, samples: int, elements: int, seed: int = 0) -> tuple[Path, Path]:
    """reference.npz and a build folder (sample_outputs.npz + build.json with a tap manifest)."""
    from leapp_lab.model.build import BuildReport
    from leapp_lab.model.tap import Manifest, TapEntry
    from leapp_lab.model.jsonio import save_npz

    rng = np.random.default_rng(seed)
    names = [f"tap_{i:03d}" for i in range(taps - 1)] + ["output_0"]
    ref, eng = {}, {}
    for i, n in enumerate(names):
        r = rng.standard_normal((samples, elements), dtype=np.float32)
        # error that grows with depth, like a real engine
        e = r + rng.standard_normal((samples, elements), dtype=np.float32) * np.float32(1e-4 * (1 + i))
        ref[n], eng[n] = r, e
    ref["benchmark_timings_ms"] = np.ones(samples)
    save_npz(root / "model.reference.npz", ref)
    del ref
    build = root / "model.ort"
    build.mkdir()
    save_npz(build / "sample_outputs.npz", eng)
    del eng
    manifest = Manifest(inputs=["x"], outputs=[TapEntry("output_0", "output", taps, reference_source="torch")],
                        taps=[TapEntry(n, "manual", i, n, reference_source="torch", source=f"model.py:{10 + i}",
                                       binding="bound", bound_to=n, via="direct")
                              for i, n in enumerate(names[:-1])])
    BuildReport(engine="ort", onnx="model.onnx", npz="model.npz", artifact="engine.onnx",
                outputs=names, model_outputs=["output_0"], samples=samples, manifest=manifest).save(build)
    return root / "model.reference.npz", build


def baseline(ref: Path, build: Path) -> float:
    """Load both npz files and one bare np.abs(a - b) pass over every pair."""
    t = time.perf_counter()
    with np.load(ref, allow_pickle=False) as zr, np.load(build / "sample_outputs.npz", allow_pickle=False) as ze:
        for k in ze.files:
            a, b = ze[k], zr[k]
            np.abs(a - b)
    return time.perf_counter() - t


def run_verify(ref: Path, build: Path, out: Path) -> tuple[float, object]:
    from leapp_lab.compare.verify import verify

    t = time.perf_counter()
    rep = verify(ref, build, out=out)
    return time.perf_counter() - t, rep


def warm(*paths: Path) -> None:
    for p in paths:
        with open(p, "rb") as fh:
            while fh.read(1 << 24):
                pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--taps", type=int, default=64)
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--gib", type=float, default=1.0, help="tap data per npz file, GiB (default 1)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", help="where to write the data (default: a temp folder, removed after)")
    ap.add_argument("--json", help="write the measurements here")
    args = ap.parse_args(argv)
    elements = max(1, int(args.gib * (1 << 30) / 4 / args.taps / args.samples))
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="leapp-lab-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        t = time.perf_counter()
        ref, build = make_data(root, args.taps, args.samples, elements)
        size = ref.stat().st_size + (build / "sample_outputs.npz").stat().st_size
        print(f"data: {args.taps} rows x {args.samples} samples x {elements} float32 = "
              f"{size / 2**30:.2f} GiB in two npz files (written in {time.perf_counter() - t:.1f}s)")
        warm(ref, build / "sample_outputs.npz")
        base, ver = [], []
        rep = None
        for i in range(args.repeat):
            base.append(baseline(ref, build))
            tv, rep = run_verify(ref, build, root / "verify")
            ver.append(tv)
            print(f"  round {i + 1}: baseline {base[-1]:.2f}s   verify {tv:.2f}s   ratio {tv / base[-1]:.2f}")
        b, v = min(base), min(ver)
        elems = args.taps * args.samples * elements
        print(f"baseline (np.load both + np.abs(a - b)): {b:.2f}s  ({elems / b / 1e6:.0f} M pairs/s)")
        print(f"verify (metrics + histograms + per-sample + run folder): {v:.2f}s  ({elems / v / 1e6:.0f} M pairs/s)")
        print(f"ratio verify / baseline: {v / b:.2f}x  (target <= 2x)")
        assert rep is not None and len(rep.rows) == args.taps and all(r.status == "compared" for r in rep.rows)
        if args.json:
            Path(args.json).write_text(json.dumps({
                "taps": args.taps, "samples": args.samples, "elements": elements, "bytes": size,
                "baseline_s": base, "verify_s": ver, "ratio": v / b}, indent=1))
        return 0
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

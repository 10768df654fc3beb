"""Benchmark: ``leapp_lab.verify`` against the fastest possible read of the same tap data.

For each size (GiB of float32 tap data per npz file; default 0.25, 1 and 4), the script writes a
reference npz and a build's ``sample_outputs.npz`` (64 rows x 16 samples), reads both once (warm
page cache), then times, alternating in each round on that warm cache:

- **limit**: zero-copy memory maps of the same npz members (``leapp_lab.compare.npzio.NpzArrays``)
  and one ``np.abs(a - b)`` pass over every pair: the least any comparison has to do;
- **strict limit**: the same maps and the same |a-b|, computed into one reused buffer
  (``np.subtract(a, b, out=buf)``, ``np.abs(buf, out=buf)``): no temporaries to allocate and fault
  in, which at 16 MiB members and up cost ``np.abs(a - b)`` more than the arithmetic;
- **verify**: a full ``leapp_lab.verify(reference, build, out=...)``: float64 sums, non-finite
  counts, histograms, per sample and per row, the rule, and the run folder written.

It prints every round, the median of each, the ratios verify / limit (target <= 1.2x) and verify /
strict limit, M pairs/s,
and each one's peak memory beyond the memory-mapped files: in a fresh Python process (imports done,
the metrics kernel loaded), the rise of its anonymous resident memory (``RssAnon`` in
/proc/self/status; pages of mapped files are ``RssFile``, not counted) over its value just before
one call, sampled every millisecond by a thread.

    .venv/bin/python bench/bench_verify.py                  # 0.25, 1 and 4 GiB (needs ~9 GiB free disk)
    .venv/bin/python bench/bench_verify.py --gib 1          # one size
    LEAPP_LAB_METRICS=numpy .venv/bin/python bench/bench_verify.py --gib 0.25   # the numpy backend
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import numpy as np

TARGET = 1.2


def _write_members(zf: zipfile.ZipFile, name: str, a: np.ndarray) -> None:
    with zf.open(name + ".npy", "w", force_zip64=True) as fh:
        np.lib.format.write_array(fh, a, allow_pickle=False)


def make_data(root: Path, taps: int, samples: int, elements: int, seed: int = 0) -> tuple[Path, Path]:
    """reference.npz and a build folder (sample_outputs.npz + build.json with a tap manifest),
    written one member at a time (uncompressed, like np.savez) so memory stays at one row."""
    from leapp_lab.model.build import BuildReport
    from leapp_lab.model.tap import Manifest, TapEntry

    rng = np.random.default_rng(seed)
    names = [f"tap_{i:03d}" for i in range(taps - 1)] + ["output_0"]
    build = root / "model.ort"
    build.mkdir(parents=True, exist_ok=True)
    ref_path, eng_path = root / "model.reference.npz", build / "sample_outputs.npz"
    with zipfile.ZipFile(ref_path, "w", zipfile.ZIP_STORED, allowZip64=True) as zr, \
            zipfile.ZipFile(eng_path, "w", zipfile.ZIP_STORED, allowZip64=True) as ze:
        for i, n in enumerate(names):
            r = rng.standard_normal((samples, elements), dtype=np.float32)
            _write_members(zr, n, r)
            # error that grows with depth, like a real engine
            r += rng.standard_normal((samples, elements), dtype=np.float32) * np.float32(1e-4 * (1 + i))
            _write_members(ze, n, r)
            del r
        _write_members(zr, "benchmark_timings_ms", np.ones(samples))
    manifest = Manifest(inputs=["x"], outputs=[TapEntry("output_0", "output", taps, reference_source="torch")],
                        taps=[TapEntry(n, "manual", i, n, reference_source="torch", source=f"model.py:{10 + i}",
                                       binding="bound", bound_to=n, via="direct")
                              for i, n in enumerate(names[:-1])])
    BuildReport(engine="ort", onnx="model.onnx", npz="model.npz", artifact="engine.onnx",
                outputs=names, model_outputs=["output_0"], samples=samples, manifest=manifest).save(build)
    return ref_path, build


def limit(ref: Path, build: Path) -> float:
    """Memory-map both npz files' members in place and take one np.abs(a - b) over every pair."""
    from leapp_lab.compare.npzio import NpzArrays

    t = time.perf_counter()
    with NpzArrays(ref) as zr, NpzArrays(build / "sample_outputs.npz") as ze:
        for k in ze:
            np.abs(np.asarray(ze[k]) - np.asarray(zr[k]))
    return time.perf_counter() - t


def strict_limit(ref: Path, build: Path) -> float:
    """The limit's |a - b| into one buffer reused for every member (no temporaries)."""
    from leapp_lab.compare.npzio import NpzArrays

    t = time.perf_counter()
    buf = None
    with NpzArrays(ref) as zr, NpzArrays(build / "sample_outputs.npz") as ze:
        for k in ze:
            a, b = np.asarray(ze[k]), np.asarray(zr[k])
            dt = np.result_type(a, b)
            if buf is None or buf.nbytes < a.size * dt.itemsize:
                buf = np.empty(a.size * dt.itemsize, np.uint8)
            o = buf[:a.size * dt.itemsize].view(dt).reshape(a.shape)
            np.subtract(a, b, out=o)
            np.abs(o, out=o)
    return time.perf_counter() - t


def run_verify(ref: Path, build: Path, out: Path, save: bool = True):
    from leapp_lab.steps.verify import verify

    t = time.perf_counter()
    rep = verify(ref, build, out=out, save=save)
    return time.perf_counter() - t, rep


def warm(*paths: Path) -> None:
    for p in paths:
        with open(p, "rb") as fh:
            while fh.read(1 << 24):
                pass


def _rss_anon_kib() -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def peak_anon_mib(fn) -> float | None:
    """Rise of RssAnon over its value before ``fn()``, sampled every ms while it runs (MiB)."""
    before = _rss_anon_kib()
    if before is None:
        return None
    peak = [before]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            v = _rss_anon_kib()
            if v is not None and v > peak[0]:
                peak[0] = v
            time.sleep(0.001)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    try:
        fn()
    finally:
        stop.set()
        th.join()
    v = _rss_anon_kib()
    peak[0] = max(peak[0], v or 0)
    return (peak[0] - before) / 1024.0


def _peak_in_fresh_process(what: str, ref: Path, build: Path, out: Path) -> float | None:
    """``peak_anon_mib`` of one ``what`` call (verify | limit) in a new interpreter, so that memory
    this process already holds from earlier rounds cannot hide what the call needs."""
    import subprocess
    r = subprocess.run([sys.executable, __file__, "--peak-of", what, str(ref), str(build), str(out)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"bench_verify: measuring the peak memory of {what} failed:\n{r.stderr}")
    v = r.stdout.strip().splitlines()[-1]
    return None if v == "None" else float(v)


def _peak_main(what: str, ref: str, build: str, out: str) -> int:
    import leapp_lab.steps.verify  # noqa: F401 - imports done before the baseline is taken
    from leapp_lab.numerics.backend import resolve_backend
    from leapp_lab.numerics.metrics import diff_sums
    # the kernel loaded for the bench's dtypes, as in any process that has verified once
    diff_sums(np.ones(8, np.float32), np.ones(8, np.float32), backend=resolve_backend())
    if what == "verify":
        print(peak_anon_mib(lambda: run_verify(Path(ref), Path(build), Path(out))))
    else:
        print(peak_anon_mib(lambda: limit(Path(ref), Path(build))))
    return 0


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def bench_size(gib: float, args, root: Path) -> dict:
    elements = max(1, int(gib * (1 << 30) / 4 / args.taps / args.samples))
    pairs = args.taps * args.samples * elements
    need = 2 * pairs * 4 + (64 << 20)
    free = shutil.disk_usage(root).free
    if free < need * 1.1:
        raise SystemExit(f"bench_verify: {gib:g} GiB needs {need * 1.1 / 2**30:.1f} GiB free in {root}, "
                         f"{free / 2**30:.1f} GiB are; pass --dir on a larger disk or a smaller --gib")
    t = time.perf_counter()
    ref, build = make_data(root, args.taps, args.samples, elements)
    size = ref.stat().st_size + (build / "sample_outputs.npz").stat().st_size
    print(f"\n{gib:g} GiB per file: {args.taps} rows x {args.samples} samples x {elements} float32 = "
          f"{size / 2**30:.2f} GiB in two npz files (written in {time.perf_counter() - t:.1f}s)", flush=True)
    warm(ref, build / "sample_outputs.npz")
    out = root / "verify"
    limit(ref, build)                      # first touch of the mappings, numba's cache loaded:
    strict_limit(ref, build)
    _, rep = run_verify(ref, build, out)   # none of it is what a round measures
    lim, strict, ver, nos = [], [], [], []
    for i in range(args.rounds):
        lim.append(limit(ref, build))
        strict.append(strict_limit(ref, build))
        tv, rep = run_verify(ref, build, out)
        ver.append(tv)
        nos.append(run_verify(ref, build, out, save=False)[0])   # in the same rounds: the same load
        print(f"  round {i + 1}: limit {lim[-1]:.3f}s   strict limit {strict[-1]:.3f}s   verify {tv:.3f}s   "
              f"ratio {tv / lim[-1]:.2f} (strict {tv / strict[-1]:.2f})", flush=True)
    assert len(rep.rows) == args.taps and all(r.status == "compared" for r in rep.rows)
    nosave = statistics.median(nos)
    mem_v = _peak_in_fresh_process("verify", ref, build, out)
    mem_l = _peak_in_fresh_process("limit", ref, build, out)
    lm, vm, sm = statistics.median(lim), statistics.median(ver), statistics.median(strict)
    print(f"  limit  (memory-mapped npz members + one |a-b| pass): median {lm:.3f}s  "
          f"({pairs / lm / 1e6:.0f} M pairs/s)")
    print(f"  strict limit (the same |a-b| into one reused buffer): median {sm:.3f}s  "
          f"({pairs / sm / 1e6:.0f} M pairs/s)")
    print(f"  verify (metrics + histograms + per-sample + run folder; {rep.metrics_backend}): median "
          f"{vm:.3f}s  ({pairs / vm / 1e6:.0f} M pairs/s)")
    print(f"  ratio verify / limit: {vm / lm:.2f}x  (target <= {TARGET}x); verify / strict limit: {vm / sm:.2f}x")
    print(f"  verify without the run folder (save=False, median of the rounds): {nosave:.3f}s, {nosave / lm:.2f}x the "
          f"limit; so writing report.json, samples.npz, histograms.npz and 2 CSVs ({args.taps} rows, "
          f"{args.taps * args.samples} samples) took ~{max(vm - nosave, 0.0):.3f}s")
    if mem_v is not None:
        print(f"  peak memory beyond the memory-mapped files (RssAnon rise in a fresh process, sampled "
              f"every ms): verify {mem_v:.1f} MiB, limit {mem_l:.1f} MiB")
    return {"gib": gib, "taps": args.taps, "samples": args.samples, "elements": elements, "pairs": pairs,
            "bytes": size, "limit_s": lim, "verify_s": ver, "limit_median_s": lm, "verify_median_s": vm,
            "ratio": vm / lm, "strict_limit_s": strict, "strict_limit_median_s": sm, "ratio_strict": vm / sm, "limit_mpairs_s": pairs / lm / 1e6, "verify_mpairs_s": pairs / vm / 1e6,
            "verify_nosave_median_s": nosave, "verify_peak_anon_mib": mem_v, "limit_peak_anon_mib": mem_l,
            "metrics_backend": rep.metrics_backend, "run_folder": str(rep.path)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--peak-of"]:
        return _peak_main(*argv[1:5])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gib", type=float, nargs="+", default=[0.25, 1.0, 4.0],
                    help="tap data per npz file, GiB, one or more sizes (default 0.25 1 4)")
    ap.add_argument("--taps", type=int, default=64)
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--rounds", "--repeat", dest="rounds", type=int, default=5,
                    help="timed rounds per size; the medians are reported (default 5)")
    ap.add_argument("--dir", help="where to write the data (kept; default: a temp folder per size, removed after)")
    ap.add_argument("--json", help="write the measurements here")
    args = ap.parse_args(argv)
    from leapp_lab.numerics.backend import backend_threads, resolve_backend

    backend = resolve_backend()
    cores = os.cpu_count()
    date = _dt.date.today().isoformat()
    versions = f"numpy {np.__version__}"
    if backend == "numba":
        import numba
        versions += f", numba {numba.__version__} ({backend_threads()} threads)"
    print(f"machine: {cores} cores ({_cpu()}), {versions}, metrics backend {backend}, {date}")
    runs = []
    for gib in args.gib:
        if args.dir:
            root = Path(args.dir) / f"{gib:g}GiB"
            root.mkdir(parents=True, exist_ok=True)
        else:
            root = Path(tempfile.mkdtemp(prefix="leapp-lab-bench-"))
        try:
            runs.append(bench_size(gib, args, root))
        finally:
            if not args.dir:
                shutil.rmtree(root, ignore_errors=True)
    print(f"\nsummary ({cores} cores, {date}; median of {args.rounds} rounds, warm page cache):")
    print("  GiB/file   M pairs   limit s   verify s   ratio   strict limit s   ratio to strict   "
          "verify M pairs/s   verify peak MiB")
    for r in runs:
        mem = "-" if r["verify_peak_anon_mib"] is None else f"{r['verify_peak_anon_mib']:.1f}"
        print(f"  {r['gib']:>8g}  {r['pairs'] / 1e6:>8.0f}  {r['limit_median_s']:>8.3f}  "
              f"{r['verify_median_s']:>9.3f}  {r['ratio']:>5.2f}x  {r['strict_limit_median_s']:>14.3f}  "
              f"{r['ratio_strict']:>15.2f}x  {r['verify_mpairs_s']:>16.0f}  {mem:>16}")
    worst = max(r["ratio"] for r in runs)
    print(f"  worst ratio verify / limit: {worst:.2f}x  (target <= {TARGET}x); without the run folder: "
          f"{max(r['verify_nosave_median_s'] / r['limit_median_s'] for r in runs):.2f}x; "
          f"verify / strict limit: {max(r['ratio_strict'] for r in runs):.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"cores": cores, "cpu": _cpu(), "date": date,
                                               "metrics_backend": backend, "rounds": args.rounds,
                                               "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: the user's daily loop (prepare -> compile -> verify) against the bare export and against
torch.onnx's own verification, side by side, every variant a whole process, in one run.

For each size (a MobileNetV2-class net, bench/loop_model.py, 96 px, 2 samples; default 10, 17 and 40
blocks), each round runs, in an order that rotates from round to round:

- **bare**: ``python -c`` import torch, build the model, ``torch.onnx.export(dynamo=True)``, save the
  ``.onnx`` -- what exporting costs at all (the floor);
- **anchor**: the same plus ``torch.onnx.verification.verify_onnx_program(compare_intermediates=True)``,
  torch.onnx's own way to compare every intermediate value with onnxruntime;
- **cli**: ``leapp-lab prepare --debug-op-taps`` + ``compile --engine ort`` + ``verify``, three
  processes into a fresh folder (no cache), timed one by one;
- **api**: the same three steps through ``leapp_lab.prepare / compile / verify`` in one process;
- **rerun**: the cli pipeline again on the cli folder, unchanged: prepare and compile reuse their
  outputs (docs/taps.md, "Re-running an unchanged model"), verify runs again.

It prints every process, then the medians and the ratios cli / bare (target <= 1.3x), anchor / cli
(target >= 5x), rerun / cli (target <= 0.3x) and prepare's own overhead beside the export (its
``timings_s``: eager, taps, references, writes; target <= 25 % of the export) and compile's time
beyond one onnxruntime session of the same ONNX (target <= 1.5 s).

``--verify-gib G`` also times ``leapp-lab verify`` of G GiB of taps per file (bench/bench_verify.py's
data) as a whole process against a memory-mapped read + one |a - b| pass of the same files plus the
interpreter's start-up (``python -c pass``) (target <= 1.5x).

    .venv/bin/python bench/bench_loop.py                          # 10 17 40 blocks, 3 rounds (~25 min)
    .venv/bin/python bench/bench_loop.py --blocks 17 --rounds 2 --anchor-max 17
    .venv/bin/python bench/bench_loop.py --blocks 17 --no-anchor --verify-gib 1
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable

BARE = """
import sys, contextlib, io, torch
sys.path.insert(0, {d!r})
import model
net, args = model.Model().eval(), model.get_fwd_args()
with contextlib.redirect_stdout(io.StringIO()):
    prog = torch.onnx.export(net, args, dynamo=True)
    prog.save({out!r})
    if {anchor!r}:
        from torch.onnx.verification import verify_onnx_program
        info = verify_onnx_program(prog, compare_intermediates=True)
if {anchor!r}:
    print("verification infos:", len(info))
"""

API = """
import json, sys, time
import leapp_lab
d = {d!r}
t = time.perf_counter()
p = leapp_lab.prepare(d + "/model.py", d + "/api/m.onnx", d + "/api/m.npz", d + "/api/m.ref.npz", op_taps=True)
t1 = time.perf_counter()
b = leapp_lab.compile(d + "/api/m.onnx", "ort")
t2 = time.perf_counter()
v = leapp_lab.verify(d + "/api/m.ref.npz", b.path, out=d + "/api/runs")
t3 = time.perf_counter()
print(json.dumps({{"prepare": t1 - t, "compile": t2 - t1, "verify": t3 - t2, "rows": len(v.rows)}}))
"""

SESSION = """
import time, onnxruntime as ort
so = ort.SessionOptions(); so.log_severity_level = 3
t = time.perf_counter(); ort.InferenceSession({onnx!r}, so, providers=["CPUExecutionProvider"])
print(time.perf_counter() - t)
"""


def _env(blocks: int) -> dict:
    env = dict(os.environ, LEAPP_BENCH_BLOCKS=str(blocks), ORT_DISABLE_TELEMETRY="1")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def timed(cmd: list[str], env: dict, what: str) -> tuple[float, str]:
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{what} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return wall, p.stdout


def cli(d: Path, out: Path, env: dict) -> dict:
    """The three commands into ``out``: wall seconds each, and prepare's / compile's own timings."""
    lab = [PY, "-m", "leapp_lab.cli"]
    out.mkdir(parents=True, exist_ok=True)
    w = {}
    w["prepare"], _ = timed(lab + ["prepare", str(d / "model.py"), "--onnx-out", str(out / "m.onnx"), "--npz-out",
                                   str(out / "m.npz"), "--reference-out", str(out / "m.ref.npz"),
                                   "--debug-op-taps", "--quiet"], env, "prepare")
    w["compile"], _ = timed(lab + ["compile", str(out / "m.onnx"), "--engine", "ort", "--quiet"], env, "compile")
    w["verify"], _ = timed(lab + ["verify", str(out / "m.ref.npz"), str(out / "m.ort"), "--out",
                                  str(out / "runs")], env, "verify")
    rep = json.loads((out / "m.prepare" / "report.json").read_text())
    build = json.loads((out / "m.ort" / "build.json").read_text())
    return {"wall": w, "total": sum(w.values()), "prepare_timings": rep["timings_s"],
            "prepare_hit": bool((rep.get("cache") or {}).get("hit")), "taps": len(rep["rows"]),
            "compile_timings": build["timings_s"], "compile_hit": bool((build.get("cache") or {}).get("hit"))}


def bench_size(blocks: int, rounds: int, anchor: bool, root: Path) -> dict:
    d = root / f"b{blocks}"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "loop_model.py", d / "model.py")
    env = _env(blocks)
    res: dict[str, list] = {k: [] for k in ("bare", "anchor", "cli", "api", "rerun", "session")}
    variants = ["bare", "cli", "api"] + (["anchor"] if anchor else [])
    for r in range(rounds):
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for v in order:
            if v in ("bare", "anchor"):
                code = BARE.format(d=str(d), out=str(d / f"{v}.onnx"), anchor=v == "anchor")
                wall, _ = timed([PY, "-c", code], env, v)
                res[v].append(wall)
                print(f"  {blocks:>3} blocks  round {r + 1}  {v:<7} {wall:7.2f} s", flush=True)
            elif v == "cli":
                out = d / f"cli{r}"
                c = cli(d, out, env)
                res["cli"].append(c)
                print(f"  {blocks:>3} blocks  round {r + 1}  cli     {c['total']:7.2f} s  "
                      + "  ".join(f"{k} {s:.2f}" for k, s in c["wall"].items())
                      + f"  ({c['taps']} rows; prepare timings {c['prepare_timings']})", flush=True)
                s, out_s = timed([PY, "-c", SESSION.format(onnx=str(out / "m.onnx"))], env, "session")
                res["session"].append(float(out_s.strip()))
                rr = cli(d, out, env)             # unchanged: prepare and compile reuse their outputs
                res["rerun"].append(rr)
                print(f"  {blocks:>3} blocks  round {r + 1}  rerun   {rr['total']:7.2f} s  "
                      + "  ".join(f"{k} {s:.2f}" for k, s in rr["wall"].items())
                      + f"  (prepare reused: {rr['prepare_hit']}, compile reused: {rr['compile_hit']})", flush=True)
            else:
                shutil.rmtree(d / "api", ignore_errors=True)
                wall, out_s = timed([PY, "-c", API.format(d=str(d))], env, "api")
                steps = json.loads(out_s.strip().splitlines()[-1])
                res["api"].append({"total": wall, **steps})
                print(f"  {blocks:>3} blocks  round {r + 1}  api     {wall:7.2f} s  "
                      + "  ".join(f"{k} {steps[k]:.2f}" for k in ("prepare", "compile", "verify")), flush=True)
    return summarise(blocks, res)


def _med(xs):
    return statistics.median(xs) if xs else None


def summarise(blocks: int, res: dict) -> dict:
    cli_t = _med([c["total"] for c in res["cli"]])
    pt = [c["prepare_timings"] for c in res["cli"]]
    overhead = [(t["total"] - t["export"]) / t["export"] for t in pt if "export" in t]
    compile_beyond = [c["compile_timings"]["total"] - s for c, s in zip(res["cli"], res["session"])]
    out = {"blocks": blocks, "rows": res["cli"][0]["taps"] if res["cli"] else None,
           "bare_s": _med(res["bare"]), "anchor_s": _med(res["anchor"]), "cli_s": cli_t,
           "cli_steps_s": {k: _med([c["wall"][k] for c in res["cli"]]) for k in ("prepare", "compile", "verify")},
           "api_s": _med([a["total"] for a in res["api"]]), "rerun_s": _med([c["total"] for c in res["rerun"]]),
           "rerun_steps_s": {k: _med([c["wall"][k] for c in res["rerun"]]) for k in ("prepare", "compile", "verify")},
           "rerun_reused": all(c["prepare_hit"] and c["compile_hit"] for c in res["rerun"]),
           "prepare_overhead": _med(overhead),
           "prepare_parts_s": {k: _med([t.get(k, 0.0) for t in pt]) for k in
                               ("load", "cache_check", "eager", "export", "taps", "fx_reference", "ort_reference",
                                "write", "total")},
           "compile_s": _med([c["compile_timings"]["total"] for c in res["cli"]]),
           "session_s": _med(res["session"]), "compile_beyond_session_s": _med(compile_beyond), "raw": res}
    return out


def verify_gib(gib: float, rounds: int, root: Path) -> dict:
    sys.path.insert(0, str(HERE))
    import numpy as np
    from bench_verify import limit, make_data, warm

    taps, samples = 64, 16
    elements = int(gib * (1 << 30) / 4 / taps / samples)
    ref, build = make_data(root / "v", taps, samples, elements)
    warm(ref, build / "sample_outputs.npz")
    env = _env(17)
    verify = [PY, "-m", "leapp_lab.cli", "verify", str(ref), str(build), "--out", str(root / "v" / "runs")]
    timed(verify, env, "verify")    # untimed: numba's compiled kernel cached, as after any first verify
    res = {"startup": [], "limit": [], "verify": []}
    for r in range(rounds):
        res["startup"].append(timed([PY, "-c", "pass"], env, "python -c pass")[0])
        res["limit"].append(limit(ref, build))
        res["verify"].append(timed(verify, env, "verify")[0])
        print(f"  verify {gib:g} GiB  round {r + 1}  python -c pass {res['startup'][-1]:.3f} s  "
              f"limit {res['limit'][-1]:.3f} s  leapp-lab verify {res['verify'][-1]:.3f} s", flush=True)
    m = {k: _med(v) for k, v in res.items()}
    return {"gib": gib, **{f"{k}_s": v for k, v in m.items()},
            "ratio": m["verify"] / (m["limit"] + m["startup"]), "numpy": np.__version__}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, nargs="+", default=[10, 17, 40])
    ap.add_argument("--rounds", type=int, default=3, help="rounds per size; medians are reported (default 3)")
    ap.add_argument("--anchor-max", type=int, default=40,
                    help="run the torch.onnx anchor only up to this many blocks (it takes ~90 s at 17)")
    ap.add_argument("--no-anchor", action="store_true")
    ap.add_argument("--verify-gib", type=float, default=None, help="also time leapp-lab verify of G GiB")
    ap.add_argument("--json", help="write the measurements here")
    args = ap.parse_args(argv)
    import torch
    cores = os.cpu_count()
    date = _dt.datetime.now().isoformat(timespec="minutes")
    print(f"machine: {cores} cores ({platform.processor() or platform.machine()}), torch {torch.__version__}, "
          f"load average {os.getloadavg()[0]:.1f}, {date}", flush=True)
    root = Path(tempfile.mkdtemp(prefix="leapp-lab-loop-"))
    runs, ver = [], None
    try:
        for b in args.blocks:
            runs.append(bench_size(b, args.rounds, not args.no_anchor and b <= args.anchor_max, root))
        if args.verify_gib:
            ver = verify_gib(args.verify_gib, args.rounds, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    load = os.getloadavg()
    print(f"\nsummary ({cores} cores, {date}, load average now {load[0]:.1f} / {load[2]:.1f} over 15 min; "
          f"median of {args.rounds} rounds, every variant a whole process):")
    print("  blocks  rows   bare s  anchor s   cli s  (prepare compile verify)   api s  rerun s   "
          "cli/bare  anchor/cli  rerun/cli  prepare overhead  compile-session s")
    for r in runs:
        st = r["cli_steps_s"]
        anchor = "-" if r["anchor_s"] is None else f"{r['anchor_s']:.1f}"
        ratio_a = "-" if r["anchor_s"] is None else f"{r['anchor_s'] / r['cli_s']:.1f}x"
        print(f"  {r['blocks']:>6}  {r['rows']:>4}  {r['bare_s']:>7.2f}  {anchor:>8}  {r['cli_s']:>6.2f}  "
              f"({st['prepare']:.2f} {st['compile']:.2f} {st['verify']:.2f})  {r['api_s']:>10.2f}  "
              f"{r['rerun_s']:>7.2f}  {r['cli_s'] / r['bare_s']:>8.2f}x  {ratio_a:>10}  "
              f"{r['rerun_s'] / r['cli_s']:>8.2f}x  {100 * r['prepare_overhead']:>15.0f} %  "
              f"{r['compile_beyond_session_s']:>17.2f}")
    for r in runs:
        print(f"  {r['blocks']} blocks: prepare's parts (s): "
              + ", ".join(f"{k} {v:.2f}" for k, v in r["prepare_parts_s"].items() if v)
              + f"; rerun reused prepare and compile: {r['rerun_reused']}")
    print("  targets: cli/bare <= 1.3x, anchor/cli >= 5x, rerun/cli <= 0.3x (at 17 blocks); prepare overhead "
          "<= 25 % of the export; compile <= 1.5 s beyond one onnxruntime session")
    if ver:
        print(f"  leapp-lab verify of {ver['gib']:g} GiB/file, whole process: {ver['verify_s']:.3f} s; memory-mapped "
              f"read + one pass {ver['limit_s']:.3f} s + python -c pass {ver['startup_s']:.3f} s; ratio "
              f"{ver['ratio']:.2f}x (target <= 1.5x)")
    if args.json:
        Path(args.json).write_text(json.dumps({"cores": cores, "date": date, "rounds": args.rounds,
                                               "load_end": load, "runs": runs, "verify": ver}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: the loop at model scale. GPT-2 configurations (bench/gpt2_model.py, random init, seq
64, 2 samples), each step a whole process, its wall time and peak memory (the process's own maximum
resident set, from wait4) beside the bare dynamo export's:

- **bare**: import torch, build the model, ``torch.onnx.export(dynamo=True)``, save the ``.onnx``
  (external data above 2 GB, as torch does) -- the floor;
- **anchor** (``--anchor-max``, within ``--anchor-timeout``): the same plus
  ``verify_onnx_program(compare_intermediates=True)``, torch.onnx's own comparison;
- per tap mode (``op``: ``prepare --debug-op-taps``; ``block``: a tap() after each block,
  ``prepare --debug-taps all``): ``prepare``, ``compile --engine ort``, ``compile --engine
  ort-int8`` (``--no-int8`` skips it), ``verify`` of the ort build, ``verify --local``.

It prints a table per configuration (seconds, peak MiB, and each as a multiple of the bare
export's), the weights' bytes, the taps' bytes (the reference npz) and the checks of issue 36:
prepare's peak <= 1.2x the bare export's; compile's and verify's peaks <= 2x the weights + 1 GiB;
prepare + compile ort + verify <= 1.5x the bare export.

    .venv/bin/python bench/bench_scale.py                                  # tiny and small
    .venv/bin/python bench/bench_scale.py --configs medium --taps op --json scale.json
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
GiB = 1 << 30

BARE = """
import sys, contextlib, io, torch
sys.path.insert(0, {d!r})
import model
net, args = model.Model().eval(), model.get_fwd_args()
with contextlib.redirect_stdout(io.StringIO()):
    prog = torch.onnx.export(net, args, dynamo=True)
    prog.save({out!r}, external_data=sum(p.numel() * 4 for p in net.parameters()) > (1536 << 20))
    if {anchor!r}:
        from torch.onnx.verification import verify_onnx_program
        info = verify_onnx_program(prog, compare_intermediates=True)
"""


def run(cmd: list[str], env: dict, timeout: float | None = None, cwd: Path | None = None) -> dict:
    """One whole process: wall seconds, its own peak RSS (wait4), exit status."""
    t = time.perf_counter()
    # the output goes to a file: a pipe read only after the exit would fill and stall the step
    log = tempfile.TemporaryFile()
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    deadline = None if timeout is None else t + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if deadline is not None and time.perf_counter() > deadline:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            return {"s": time.perf_counter() - t, "peak_mib": ru.ru_maxrss / 1024, "rc": None,
                    "timed_out": True, "tail": ""}
        time.sleep(0.05)
    wall = time.perf_counter() - t
    log.seek(0)
    out = log.read().decode(errors="replace")
    log.close()
    return {"s": wall, "peak_mib": ru.ru_maxrss / 1024, "rc": os.waitstatus_to_exitcode(status),
            "timed_out": False, "tail": out[-600:]}


def bench_config(config: str, modes: list[str], work: Path, int8: bool, anchor: bool,
                 anchor_timeout: float) -> dict:
    d = work / config
    d.mkdir(parents=True)
    shutil.copy(HERE / "gpt2_model.py", d / "model.py")
    env = dict(os.environ, LEAPP_GPT2=config, PYTHONPATH=os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    env.pop("LEAPP_GPT2_TAPS", None)
    sys.path.insert(0, str(HERE))
    import gpt2_model
    layers, width, heads, vocab = gpt2_model.CONFIGS[config]
    params = vocab * width + gpt2_model.POSITIONS * width + layers * (12 * width * width + 13 * width) + 2 * width
    res = {"config": config, "params": params, "weights_bytes": params * 4, "steps": {}}
    say = lambda m: print(f"[{config}] {m}", file=sys.stderr, flush=True)   # noqa: E731
    say(f"{params / 1e6:.0f} M parameters: bare export")
    res["steps"]["bare"] = run([PY, "-c", BARE.format(d=str(d), out=str(d / "bare.onnx"), anchor=False)], env)
    if anchor:
        say(f"anchor (torch.onnx verify_onnx_program, at most {anchor_timeout:.0f} s)")
        res["steps"]["anchor"] = run([PY, "-c", BARE.format(d=str(d), out=str(d / "anchor.onnx"), anchor=True)],
                                     env, timeout=anchor_timeout)
    for p in d.glob("bare.onnx*"):
        p.unlink()
    cli = [PY, "-m", "leapp_lab.cli"]
    for mode in modes:
        menv = dict(env, **({"LEAPP_GPT2_TAPS": "blocks"} if mode == "block" else {}))
        b = d / mode
        flags = ["--debug-op-taps"] if mode == "op" else ["--debug-taps", "all"]
        steps = [("prepare", cli + ["prepare", str(d / "model.py"), "--onnx-out", str(b / "m.onnx"), "--npz-out",
                                    str(b / "m.npz"), "--reference-out", str(b / "m.ref.npz"), "--quiet", *flags]),
                 ("compile ort", cli + ["compile", str(b / "m.onnx"), "--engine", "ort", "--quiet"])]
        if int8:
            steps.append(("compile ort-int8", cli + ["compile", str(b / "m.onnx"), "--engine", "ort-int8", "--quiet"]))
        steps += [("verify", cli + ["verify", str(b / "m.ref.npz"), str(b / "m.ort"), "--no-save"]),
                  ("verify --local", cli + ["verify", str(b / "m.ref.npz"), str(b / "m.ort"), "--no-save", "--local"])]
        for name, cmd in steps:
            say(f"{mode} taps: {name}")
            r = run(cmd, menv)
            res["steps"][f"{mode}: {name}"] = r
            if r["rc"] not in (0, 1):
                say(f"{name} failed (exit {r['rc']}): {r['tail']}")
                break
        ref = b / "m.ref.npz"
        res[f"{mode}_tap_bytes"] = ref.stat().st_size if ref.exists() else None
        shutil.rmtree(b, ignore_errors=True)
    return res


def bench_big(work: Path) -> dict:
    """bench/big_model.py (2.1 GiB of weights, above protobuf's bound): prepare (op taps), compile
    ort, verify, each a whole process."""
    d = work / "big"
    d.mkdir(parents=True)
    shutil.copy(HERE / "big_model.py", d / "model.py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    cli = [PY, "-m", "leapp_lab.cli"]
    b = d / "b"
    res = {"config": "big (2.1 GiB embedding)", "steps": {}}
    for name, cmd in [("prepare", cli + ["prepare", str(d / "model.py"), "--onnx-out", str(b / "m.onnx"), "--npz-out",
                                         str(b / "m.npz"), "--reference-out", str(b / "m.ref.npz"), "--quiet",
                                         "--debug-op-taps"]),
                      ("compile ort", cli + ["compile", str(b / "m.onnx"), "--engine", "ort", "--quiet"]),
                      ("verify", cli + ["verify", str(b / "m.ref.npz"), str(b / "m.ort"), "--no-save",
                                        "--max-mape", "1"])]:
        print(f"[big] {name}", file=sys.stderr, flush=True)
        r = run(cmd, env)
        res["steps"][name] = r
        if r["rc"] != 0:
            print(f"[big] {name} exit {r['rc']}: {r['tail']}", file=sys.stderr)
            break
    res["files"] = {p.name: p.stat().st_size for p in sorted(b.iterdir()) if p.is_file()} if b.exists() else {}
    return res


def checks(res: dict) -> list[str]:
    bare = res["steps"]["bare"]
    w = res["weights_bytes"] / (1 << 20)
    out = []
    for mode in ("op", "block"):
        st = {k.split(": ", 1)[1]: v for k, v in res["steps"].items() if k.startswith(mode + ": ")}
        if "prepare" not in st:
            continue
        pr = st["prepare"]["peak_mib"] / bare["peak_mib"]
        out.append(f"{mode} taps: prepare peak {pr:.2f}x the bare export's (target <= 1.2x)")
        for k in ("compile ort", "compile ort-int8", "verify", "verify --local"):
            if k in st:
                out.append(f"{mode} taps: {k} peak {st[k]['peak_mib']:.0f} MiB, bound 2 x weights + 1 GiB = "
                           f"{2 * w + 1024:.0f} MiB: {'ok' if st[k]['peak_mib'] <= 2 * w + 1024 else 'ABOVE'}")
        if all(k in st for k in ("prepare", "compile ort", "verify")):
            tot = sum(st[k]["s"] for k in ("prepare", "compile ort", "verify"))
            out.append(f"{mode} taps: prepare + compile ort + verify {tot:.1f} s = {tot / bare['s']:.2f}x the bare "
                       f"export (target <= 1.5x)")
    return out


def table(res: dict) -> str:
    bare = res["steps"]["bare"]
    lines = [f"GPT-2 {res['config']}: {res['params'] / 1e6:.0f} M parameters, {res['weights_bytes'] / GiB:.2f} GiB "
             f"of fp32 weights; taps (reference npz): "
             + ", ".join(f"{m} {res[f'{m}_tap_bytes'] / GiB:.2f} GiB" for m in ("op", "block")
                         if res.get(f"{m}_tap_bytes")),
             "", "| step | s | peak MiB | s / bare | peak / bare |", "| --- | ---: | ---: | ---: | ---: |"]
    for k, v in res["steps"].items():
        s = "timed out" if v["timed_out"] else f"{v['s']:.1f}"
        fail = "" if v["rc"] in (0, 1, None) else f" (exit {v['rc']})"
        lines.append(f"| {k}{fail} | {s} | {v['peak_mib']:.0f} | {v['s'] / bare['s']:.2f} | "
                     f"{v['peak_mib'] / bare['peak_mib']:.2f} |")
    return "\n".join(lines + [""] + [f"- {c}" for c in checks(res)])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", nargs="*", default=["tiny", "small"],
                    choices=["tiny", "mini", "small", "medium", "large"])
    ap.add_argument("--taps", nargs="+", default=["op", "block"], choices=["op", "block"])
    ap.add_argument("--no-int8", action="store_true", help="skip compile --engine ort-int8")
    ap.add_argument("--anchor-max", default="tiny", help="run torch.onnx's anchor up to this config ('none': never)")
    ap.add_argument("--anchor-timeout", type=float, default=600.0)
    ap.add_argument("--big", action="store_true", help="also run bench/big_model.py (2.1 GiB of weights)")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    a = ap.parse_args(argv)
    order = ["tiny", "mini", "small", "medium", "large"]
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    results = []
    try:
        for c in a.configs:
            anchor = a.anchor_max != "none" and order.index(c) <= order.index(a.anchor_max)
            res = bench_config(c, a.taps, work, not a.no_int8, anchor, a.anchor_timeout)
            results.append(res)
            print(table(res), "\n", flush=True)
        if a.big:
            big = bench_big(work)
            results.append(big)
            print(f"{big['config']}: files {big['files']}")
            for k, v in big["steps"].items():
                print(f"  {k}: {v['s']:.1f} s, {v['peak_mib']:.0f} MiB peak, exit {v['rc']}")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    meta = {"date": _dt.date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "python": platform.python_version()}
    print(f"({meta['date']}, {meta['machine']})")
    if a.json:
        a.json.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: what a ``leapp-lab`` command costs beyond the interpreter's own start-up (issue 23).

Prepares a small conv net (``leapp-lab prepare --debug-op-taps``), compiles a plain fp32 onnxruntime
build and saves one verify run, then times fresh processes, alternating in every round:
``python -c pass``, ``leapp-lab --help``, ``leapp-lab verify --help``, ``leapp-lab verify REF BUILD``
(--no-save) and ``leapp-lab report RUN``. Prints each one's median wall time, its minimum and its
median CPU time (user + sys of the child; on a machine shared with other work the wall time also
holds the waits for a core, the CPU time does not), and each minus ``python -c pass``.

Bytecode: by default the children may write and read it (``PYTHONPYCACHEPREFIX`` in a temporary
folder, so the tree gets no ``__pycache__``), as on an installed copy; ``--no-bytecode`` measures
with ``PYTHONDONTWRITEBYTECODE=1`` and no cache folder, as this machine image runs: only bytecode
already beside the sources (``scripts/install.sh`` compiles leapp_lab's) is read, every other module
is compiled from source in every process.
``--pythonpath DIR`` times another checkout's ``leapp_lab`` (e.g. ``git archive`` of an older commit).

    .venv/bin/python bench/bench_startup.py                 # 10 rounds
    .venv/bin/python bench/bench_startup.py --runs 20 --pythonpath /tmp/old
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL = '''
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1),
                                  nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))

    def forward(self, x):
        return self.body(x)


def get_samples():
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(1, 3, 32, 32, generator=g),) for _ in range(3)]
'''


def _setup(work: Path, cli: list[str], env: dict) -> tuple[Path, Path, Path]:
    (work / "model.py").write_text(MODEL)
    b = work / "build"
    steps = [["prepare", "model.py", "--onnx-out", f"{b}/model.onnx", "--npz-out", f"{b}/model.npz",
              "--reference-out", f"{b}/model.reference.npz", "--debug-op-taps", "--quiet"],
             ["compile", f"{b}/model.onnx", "--engine", "ort", "--quiet"],
             ["verify", f"{b}/model.reference.npz", f"{b}/model.ort", "--out", f"{work}/lab"]]
    for s in steps:
        subprocess.run([*cli, *s], cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)
    run = next((work / "lab" / "runs").iterdir())
    return b / "model.reference.npz", b / "model.ort", run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="rounds (default 10)")
    ap.add_argument("--no-bytecode", action="store_true", help="PYTHONDONTWRITEBYTECODE=1, no cache folder")
    ap.add_argument("--pythonpath", metavar="DIR", help="time the leapp_lab found in DIR instead")
    opts = ap.parse_args()
    py = sys.executable
    script = Path(py).with_name("leapp-lab")      # the console script the user runs, when installed
    cli = [str(script)] if script.is_file() else \
        [py, "-c", "import sys; from leapp_lab.cli import main; sys.argv[0] = 'leapp-lab'; sys.exit(main())"]
    with tempfile.TemporaryDirectory(prefix="bench_startup_") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
        if opts.no_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        if opts.pythonpath:
            env["PYTHONPATH"] = opts.pythonpath
        ref, build, run = _setup(work, cli, env)
        cmds = {"python -c pass": [py, "-c", "pass"],
                "leapp-lab --help": [*cli, "--help"],
                "leapp-lab verify --help": [*cli, "verify", "--help"],
                "leapp-lab verify REF BUILD": [*cli, "verify", str(ref), str(build), "--no-save"],
                "leapp-lab report RUN": [*cli, "report", str(run), "-o", str(work / "r.html")]}
        wall: dict = {k: [] for k in cmds}
        cpu: dict = {k: [] for k in cmds}
        for i in range(opts.runs + 1):
            for k, c in cmds.items():
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                subprocess.run(c, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               check=True)
                t1 = time.perf_counter()
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                if i:       # round 0 warms the page cache (and writes the bytecode)
                    wall[k].append(t1 - t0)
                    cpu[k].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    base_w, base_c = statistics.median(wall["python -c pass"]), statistics.median(cpu["python -c pass"])
    print(f"{opts.runs} rounds, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
          f"{'PYTHONDONTWRITEBYTECODE=1' if opts.no_bytecode else 'bytecode cached'}")
    for k in cmds:
        w, c = statistics.median(wall[k]), statistics.median(cpu[k])
        print(f"{k:28s} wall {w:6.3f} s (+{w - base_w:.3f})  min {min(wall[k]):6.3f} s   "
              f"cpu {c:6.3f} s (+{c - base_c:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

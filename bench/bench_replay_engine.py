"""Benchmark: a replay on an engine against N single runs of that engine.

``leapp_lab.replay(report, engine=...)`` builds each ONNX node of the pipeline for the engine once
and runs that one session at every step (no per-step session rebuild); the pipeline wiring (LEAPP's
``InferenceManager``, the state fed back, torch <-> numpy) is the only overhead. This script traces
an LSTM policy with declared state (hidden size ``--hidden``, an MLP head) through LEAPP, replays
``--steps`` fresh steps on the engine (``ort-int8`` by default; the build is made by a first short
replay and reused), and prints:

- the engine closed loop's time (the engine pipeline stepping N steps, as measured by the replay:
  ``EngineReplay.timings_s["engine_loop"]``) against N single runs of the engine (the best of
  ``--repeat`` loops of N bare ``session.run`` on the same inputs, same artifact): target <= 1.5x;
- for the record, the whole engine entry (the fp32 side in lockstep, the teacher-forced runs, the
  comparisons) against the same N single runs, and what building a session costs (what a per-step
  rebuild would add to every step).

    .venv/bin/python bench/bench_replay_engine.py                     # hidden 512, 200 steps
    .venv/bin/python bench/bench_replay_engine.py --hidden 64 --steps 20 --repeat 1   # a quick run
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path


def make_policy(hidden: int, obs: int = 48, act: int = 12):
    import torch

    class Policy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.cell = torch.nn.LSTMCell(obs, hidden)
            self.head = torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.ELU(),
                                            torch.nn.Linear(hidden, hidden), torch.nn.ELU(),
                                            torch.nn.Linear(hidden, act))

        def forward(self, o, h, c):
            h, c = self.cell(o, (h, c))
            return torch.tanh(self.head(h)), h, c

    return Policy().eval()


def trace(root: Path, hidden: int, samples: int):
    import torch
    from leapp import annotate

    import leapp_lab
    policy = make_policy(hidden)
    g = torch.Generator().manual_seed(1)
    h, c = torch.zeros(1, hidden), torch.zeros(1, hidden)
    with torch.no_grad(), leapp_lab.trace("bench_policy", save_path=str(root), max_cached_io=samples) as t:
        for _ in range(samples):
            o = annotate.input_tensors("policy", {"obs": torch.randn(1, 48, generator=g)})
            hs, cs = annotate.state_tensors("policy", {"h": h, "c": c})
            a, h, c = policy(o, hs, cs)
            annotate.update_state("policy", {"h": h, "c": c})
            annotate.output_tensors("policy", {"action": a}, export_with="onnx")

    class Original:
        def __init__(self):
            self.h, self.c = torch.zeros(1, hidden), torch.zeros(1, hidden)

        def __call__(self, inputs, reset):
            if reset:
                self.h, self.c = torch.zeros(1, hidden), torch.zeros(1, hidden)
            a, self.h, self.c = policy(inputs["policy/obs"], self.h, self.c)
            return {"policy/action": a}

    return t.report, Original


def single_runs(artifact: Path, engine: str, feeds: list[dict], repeat: int) -> tuple[float, float]:
    """(best time of one loop of len(feeds) bare runs, time to build one session)."""
    from leapp_lab.engines import get_engine
    t0 = time.perf_counter()
    r = get_engine(engine).runner(artifact).activate()
    t_session = time.perf_counter() - t0
    names = list(r.output_names)
    r.run(feeds[0], names)                      # warm
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for f in feeds:
            r.run(f, names)
        best = min(best, time.perf_counter() - t0)
    r.deactivate()
    return best, t_session


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--samples", type=int, default=8, help="cached samples (the int8 calibration)")
    ap.add_argument("--engine", default="ort-int8")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", help="where to write the trace (default: a temp folder, removed after)")
    ap.add_argument("--json", help="write the measurements here")
    args = ap.parse_args(argv)
    import numpy as np

    import leapp_lab
    from leapp_lab.model.jsonio import load_npz
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench_replay_engine_"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.2f}; LSTM hidden {args.hidden}, {args.steps} steps, {args.engine}")
        report, Original = trace(root, args.hidden, args.samples)
        leapp_lab.replay(report, steps=1, engine=args.engine)           # builds the node once
        runs = []
        for i in range(args.repeat):
            res = leapp_lab.replay(report, steps=args.steps, step_fn=Original(), resets=[], engine=args.engine)
            e = res.engine(args.engine)
            assert e.fresh is not None and e.fresh.steps == args.steps, e.reason
            assert e.nodes[0].source == "reused", e.nodes
            runs.append(dict(e.timings_s))
            print(f"  round {i + 1}: engine closed loop {e.timings_s['engine_loop']:.3f}s, "
                  f"whole engine entry {e.timings_s['total']:.3f}s")
        # the same engine, its inputs of every fresh step (the fp32 pipeline's: observation + state)
        saved = load_npz(Path(report.graph.run_dir) / "replay.npz")
        art = Path(res.engine(args.engine).nodes[0].build) / "engine.untapped.onnx"
        rng = np.random.default_rng(0)        # the state's values do not change a dense kernel's time
        feeds = [{"obs": saved[f"b/policy/obs/{k}/input"],
                  "h_in": rng.normal(scale=0.3, size=(1, args.hidden)).astype(np.float32),
                  "c_in": rng.normal(scale=0.3, size=(1, args.hidden)).astype(np.float32)} for k in range(args.steps)]
        single, t_session = single_runs(art, args.engine, feeds, args.repeat)
        # the closed loop runs both tiers: its captured steps (tier a) count as steps too
        steps_run = args.steps + min(args.steps, args.samples)
        single_all = single * steps_run / args.steps
        loop = min(r["engine_loop"] for r in runs)
        total = min(r["total"] for r in runs)
        inside = min(r.get("engine_loop_engine", 0.0) for r in runs)
        ratio = loop / single_all
        print(f"{args.engine}: {steps_run} engine steps (tier a {min(args.steps, args.samples)} + tier b "
              f"{args.steps}); engine closed loop {loop:.3f}s vs {steps_run} single runs {single_all:.3f}s "
              f"(one run {single / args.steps * 1e6:.0f} us): ratio {ratio:.2f}x (target <= 1.5x)")
        print(f"  of which the engine's own runs inside the loop {inside:.3f}s and the pipeline wiring "
              f"(LEAPP's InferenceManager, state fed back, torch <-> numpy) {loop - inside:.3f}s = "
              f"{(loop - inside) / steps_run * 1e6:.0f} us a step")
        print(f"  whole engine entry (fp32 side, teacher forcing, comparisons): {total:.3f}s = "
              f"{total / single_all:.2f}x the single runs (stated, not a target); building one session "
              f"takes {t_session * 1e3:.1f} ms ({t_session / (single / args.steps):.0f} runs' worth: what a "
              f"per-step rebuild would add to every step)")
        out = {"engine": args.engine, "hidden": args.hidden, "steps": args.steps, "engine_steps": steps_run,
               "engine_loop_s": [r["engine_loop"] for r in runs], "total_s": [r["total"] for r in runs],
               "single_runs_s": single_all, "one_run_s": single / args.steps, "session_build_s": t_session,
               "engine_loop_engine_s": [r.get("engine_loop_engine") for r in runs],
               "wiring_per_step_s": (loop - inside) / steps_run, "ratio": ratio, "total_ratio": total / single_all}
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1))
        return 0
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

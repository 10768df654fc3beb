"""Benchmark: a replay on an engine of N steps against N single runs of that engine.

``leapp_lab.replay(report, engine=...)`` builds each ONNX node of the pipeline for the engine once
and runs that one session at every step (no per-step session rebuild). Its engine closed loop runs
as a pass of its own (the fp32 pipeline, the teacher-forced runs and the comparisons in other
passes: ``leapp_lab/deep/engine_passes.py``), so between two engine steps only the pipeline wiring
runs (LEAPP's ``InferenceManager``, the state fed back, torch <-> numpy).

This script traces an LSTM policy with declared state (hidden size ``--hidden``, an MLP head)
through LEAPP, makes the engine build with a first, untimed replay, then ``--repeat`` times, the two
sides alternating (replay first in even rounds, single runs first in odd ones):

- a replay of ``--steps`` fresh steps (plus the captured ones, tier a) on the engine (``ort-int8``
  by default): its engine closed loop's time ``EngineReplay.timings_s["engine_loop"]``, N engine
  runs for N steps (one engine node);
- N single runs: a session of the same artifact, built by the same factory
  (``get_engine(engine).runner(artifact)``) with the same session options (the bench reads and
  prints both sides' ``intra_op_num_threads`` and spinning; ``--threads`` sets them for both), one
  untimed warm run, then N bare runs on the *same inputs* the closed loop fed the engine (rebuilt
  from the replay's arrays; the bench checks that the runs reproduce the closed loop's outputs).

It prints the medians and their ratio, target <= 1.5x; the teacher-forced runs (a second engine run
per step, on the fp32 state) against N more single runs, the ratio per engine run of both passes;
and, for the record, the whole engine entry against the N single runs and what building a session
costs (what a per-step rebuild would add to every step).

    .venv/bin/python bench/bench_replay_engine.py                     # hidden 512, 200 steps, 5 rounds
    .venv/bin/python bench/bench_replay_engine.py --hidden 64 --steps 20 --repeat 1   # a quick run
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
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


class SessionLog:
    """The options of every onnxruntime session leapp_lab's ort engines make (both sides' sessions
    come from ``leapp_lab.engines.ort_session.make_session``)."""

    def __init__(self) -> None:
        from leapp_lab.engines import ort_session
        self.made: list[str] = []
        self._mod, self._orig = ort_session, ort_session.make_session

        def make(*a, **kw):
            s = self._orig(*a, **kw)
            self.made.append(options_text(s))
            return s
        ort_session.make_session = make

    def take(self) -> list[str]:
        out, self.made = self.made, []
        return out


def options_text(session) -> str:
    so = session.get_session_options()
    try:
        spin = so.get_session_config_entry("session.intra_op.allow_spinning") != "0"
    except Exception:  # noqa: BLE001 - not set: onnxruntime's default, spinning
        spin = True
    n = so.intra_op_num_threads
    return (f"intra_op_num_threads={n}" + (" (onnxruntime's default: one per core)" if n == 0 else "")
            + f", inter_op_num_threads={so.inter_op_num_threads}, spinning {'on' if spin else 'off'}")


def closed_loop_feeds(e, arrays: dict, saved: dict, engine: str) -> tuple[list[dict], list]:
    """(the engine's inputs at every closed-loop step, tier a then b; the action it returned):
    the observation of the step, the state the engine returned one step before (at step 0 and
    at a reset: LEAPP's initial value, sample 0)."""
    feeds, actions = [], []
    for run, obs_key in ((e.closed_loop, "policy/obs/{k}/input"), (e.fresh, "b/policy/obs/{k}/input")):
        if run is None:
            continue
        src = arrays if run.tier == "a" else saved
        for k in range(run.steps):
            f = {"obs": src[obs_key.format(k=k)]}
            for s in ("h", "c"):
                f[f"{s}_in"] = (arrays[f"policy/{s}_in/0/input"] if k == 0 or k in run.resets else
                                saved[f"{engine}/{run.tier}/policy/{s}_out/{k - 1}/engine"])
            feeds.append(f)
            actions.append(saved[f"{engine}/{run.tier}/policy/action/{k}/engine"])
    return feeds, actions


def single_runs(artifact: Path, engine: str, feeds: list[dict]) -> tuple[float, float, float, list]:
    """(wall time of len(feeds) bare runs of one warm session, this thread's CPU time of them, time
    to build the session, the actions)."""
    from leapp_lab.engines import get_engine
    t0 = time.perf_counter()
    r = get_engine(engine).runner(artifact).activate()
    t_session = time.perf_counter() - t0
    names = list(r.output_names)
    r.run(feeds[0], names)                      # warm (the replay's session ran its build replay)
    outs = []
    t0, c0 = time.perf_counter(), time.thread_time()
    for f in feeds:
        outs.append(r.run(f, names))
    t, cpu = time.perf_counter() - t0, time.thread_time() - c0
    r.deactivate()
    return t, cpu, t_session, [o["action"] for o in outs]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--samples", type=int, default=8, help="cached samples (the int8 calibration)")
    ap.add_argument("--engine", default="ort-int8")
    ap.add_argument("--repeat", type=int, default=5, help="rounds, each side once per round (medians)")
    ap.add_argument("--threads", type=int, default=1,
                    help="intra_op_num_threads of the engine sessions, both sides (0: onnxruntime's "
                         "default, one per core); sets LEAPP_LAB_ORT_THREADS")
    ap.add_argument("--dir", help="where to write the trace (default: a temp folder, removed after)")
    ap.add_argument("--json", help="write the measurements here")
    args = ap.parse_args(argv)
    from leapp_lab.engines.ort_session import ENV_THREADS
    os.environ[ENV_THREADS] = str(args.threads) if args.threads > 0 else ""
    import numpy as np

    import leapp_lab
    from leapp_lab.model.jsonio import load_npz
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench_replay_engine_"))
    root.mkdir(parents=True, exist_ok=True)
    log = SessionLog()
    try:
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min); LSTM hidden {args.hidden}, "
              f"{args.steps} fresh steps, {args.engine}, {args.repeat} rounds")
        report, Original = trace(root, args.hidden, args.samples)

        def replay():
            res = leapp_lab.replay(report, steps=args.steps, step_fn=Original(), resets=[], engine=args.engine)
            e = res.engine(args.engine)
            assert e.fresh is not None and e.fresh.steps == args.steps, e.reason
            return res, e
        res, e = replay()                                  # builds the node once; untimed
        log.take()
        run_dir = Path(report.graph.run_dir)
        feeds, actions = closed_loop_feeds(e, load_npz(run_dir / "arrays.npz"), load_npz(run_dir / "replay.npz"),
                                           args.engine)
        n = len(feeds)
        art = Path(e.nodes[0].build) / "engine.untapped.onnx"
        rounds = []
        for i in range(args.repeat):
            r = {}
            for side in (("replay", "single") if i % 2 == 0 else ("single", "replay")):
                if side == "replay":
                    _, e = replay()
                    assert e.nodes[0].source == "reused", e.nodes
                    r.update(e.timings_s)
                    r["replay_sessions"] = log.take()
                else:
                    r["single"], r["single_cpu"], r["session_build"], got = single_runs(art, args.engine, feeds)
                    r["single_sessions"] = log.take()
                    worst = max(float(np.max(np.abs(a - b))) for a, b in zip(got, actions))
                    assert worst <= 1e-5, f"the single runs do not reproduce the closed loop: max |diff| {worst}"
            assert r["replay_sessions"] and set(r["replay_sessions"]) == set(r["single_sessions"]), r  # same options
            rounds.append(r)
            print(f"  round {i + 1} ({'replay first' if i % 2 == 0 else 'single runs first'}): engine closed "
                  f"loop {r['engine_loop']:.3f}s, {n} single runs {r['single']:.3f}s: "
                  f"{r['engine_loop'] / r['single']:.2f}x; teacher-forced runs {r.get('teacher_forcing', 0):.3f}s; "
                  f"whole engine entry {r['total']:.3f}s")
        med = {k: statistics.median(r.get(k, 0.0) for r in rounds)
               for k in ("engine_loop", "engine_loop_engine", "teacher_forcing", "total", "single", "session_build",
                         "engine_loop_cpu", "teacher_forcing_cpu", "single_cpu")}
        ratio = med["engine_loop"] / med["single"]
        per_run = (med["engine_loop"] + med["teacher_forcing"]) / (2 * med["single"])
        one = med["single"] / n
        wiring = med["engine_loop"] - med["engine_loop_engine"]
        print(f"sessions, both sides: {rounds[0]['single_sessions'][0]} (the replay's engine session and the "
              f"single runs' session made by the same factory with the same options)")
        print(f"{args.engine}: {n} engine steps (tier a {e.closed_loop.steps if e.closed_loop else 0} + tier b "
              f"{args.steps}), one engine run each in the closed loop; medians of {args.repeat} rounds: engine "
              f"closed loop {med['engine_loop']:.3f}s vs {n} single runs on the same inputs {med['single']:.3f}s "
              f"(one run {one * 1e6:.0f} us): ratio {ratio:.2f}x (target <= 1.5x)")
        print(f"  of which the engine's own runs inside the loop {med['engine_loop_engine']:.3f}s "
              f"({med['engine_loop_engine'] / med['single']:.2f}x the single runs) and the pipeline wiring "
              f"(LEAPP's InferenceManager, state fed back, torch <-> numpy) {wiring:.3f}s = {wiring / n * 1e6:.0f} us a step")
        print(f"  the replay runs the engine twice a step (closed loop + teacher-forced from the fp32 state): "
              f"teacher-forced runs {med['teacher_forcing']:.3f}s; both passes {2 * n} engine runs in "
              f"{med['engine_loop'] + med['teacher_forcing']:.3f}s vs {2 * n} single runs {2 * med['single']:.3f}s: "
              f"{per_run:.2f}x per engine run")
        print(f"  control: the teacher-forced pass (the same session's runs back to back, no wiring) vs the single "
              f"runs: {med['teacher_forcing'] / med['single']:.2f}x (how far the machine's load moves the same work)")
        if args.threads == 1:     # the session works on the calling thread: its CPU time is all of it
            print(f"  CPU time of this thread (leaves out the time other processes held the cores): engine closed "
                  f"loop {med['engine_loop_cpu']:.3f}s vs single runs {med['single_cpu']:.3f}s: cpu ratio "
                  f"{med['engine_loop_cpu'] / med['single_cpu']:.2f}x; teacher-forced pass "
                  f"{med['teacher_forcing_cpu'] / med['single_cpu']:.2f}x")
        print(f"  whole engine entry (fp32 pass, both engine passes, comparisons): {med['total']:.3f}s = "
              f"{med['total'] / med['single']:.2f}x the {n} single runs (stated, not a target); building one session "
              f"takes {med['session_build'] * 1e3:.1f} ms ({med['session_build'] / one:.0f} runs' worth: what a "
              f"per-step rebuild would add to every step)")
        out = {"engine": args.engine, "hidden": args.hidden, "steps": args.steps, "engine_steps": n,
               "threads": args.threads, "session_options": rounds[0]["single_sessions"][0],
               "load": list(os.getloadavg()), "cpus": os.cpu_count(),
               "engine_loop_s": [r["engine_loop"] for r in rounds], "single_runs_s": [r["single"] for r in rounds],
               "engine_loop_engine_s": [r["engine_loop_engine"] for r in rounds],
               "teacher_forcing_s": [r.get("teacher_forcing", 0.0) for r in rounds],
               "total_s": [r["total"] for r in rounds], "one_run_s": one, "session_build_s": med["session_build"],
               "wiring_per_step_s": wiring / n, "ratio": ratio, "ratio_per_engine_run": per_run,
               "total_ratio": med["total"] / med["single"],
               "engine_loop_cpu_s": [r.get("engine_loop_cpu") for r in rounds],
               "single_runs_cpu_s": [r["single_cpu"] for r in rounds],
               "cpu_ratio": med["engine_loop_cpu"] / med["single_cpu"] if med["single_cpu"] else None}
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1))
        return 0
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""``leapp_lab.repair(reference, onnx, engine="ort-int8", target_nrmse=0.01, ...)``: keep the fewest
model segments in fp32 that bring every output of a reduced-precision engine under a target error,
and prove it with a build of that mixed engine.

1. build and verify the engine as it is (the baseline, kept);
2. round 1, the sweep: one build per segment, that segment kept in fp32 (``compile(keep_fp32=...)``),
   each verified against the reference; segments ranked by the largest output nrmse left;
3. while the best set is above the target: another round adds each remaining segment to the set
   chosen so far and keeps the best (greedy; round 1's ranking alone misleads once the dominant
   error is gone: the next segment that matters is one whose gain was hidden behind it);
4. the chosen set is built again in its own folder and verified in its own saved run: the report
   states what that build measured, nothing else.

Every build runs through one executor (``leapp_lab.executor``): in this process, a local process
pool or a Dask cluster. ``budget`` caps the number of builds (the final one included); a round that
does not fit sweeps its most promising segments first (round 1: the taps whose error grew most in
the baseline; later: round 1's ranking). See docs/repair.md.
"""
from __future__ import annotations

import concurrent.futures as cf
import datetime as _dt
import math
import shutil
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .reference_check import check_reference_for_model
from leapp_lab.engines.base import CompileError
from leapp_lab.executor import InlineExecutor, sweep_executor
from leapp_lab.model.errors import InvalidOption
from leapp_lab.model.jsonio import write_json
from leapp_lab.model.repair import Proof, RepairReport, Trial, sort_key, worst
from leapp_lab.model.runs import LATEST, RUNS_DIRNAME, RunFolder, lab_dir
from leapp_lab.model.safepaths import check_input_file, check_outputs, make_folders, no_room, remove_made, staged

from . import REPAIRABLE  # engines repair can rebuild with segments in fp32 (sweeps/__init__)
from .repair_segments import keep_fp32, most_at_once, segments
from .prepare_node import TraceGraphRefused
from .repair_tasks import build_and_verify

ProgressFn = Callable[[str, int, int], None]
RANKS = ("output", "excess")
#: the expectation the baseline's verify has for --rank excess, per engine
EXPECTED_OF = {"ort-int8": "int8", "ort-fp16": "fp16"}


def repair(reference, onnx, engine: str = "ort-int8", target_nrmse: float = 0.01, budget: int | None = None,
           jobs: int | None = None, dask: Any = None, progress: ProgressFn | None = None, *, npz=None,
           out=None, json_path=None, save: bool = True, executor: cf.Executor | None = None,
           html=None, rank: str = "output") -> RepairReport:
    """Find and prove the fewest segments to keep in fp32 (module doc).

    ``reference``: prepare's model.reference.npz; ``onnx``: the prepared model; ``npz``: its inputs
    (default ``<onnx stem>.npz``). ``engine``: ort-int8 | ort-fp16 | trt-fp16. ``target_nrmse``:
    every model output's nrmse (a fraction) must end at or below it. ``budget``: most builds in all
    (None: no limit). ``jobs``: builds at once in a local pool (default: the CPU count, at most 8;
    1: in this process; at most ``most_at_once``); ``dask``: a Dask scheduler address or ``distributed.Client`` (default
    ``$LEAPP_LAB_DASK``); ``executor``: any ``concurrent.futures.Executor`` instead (``jobs`` = how
    many it runs at once). ``progress(stage, done, total)``: after each build. ``rank``: ``output``
    (default: a sweep build per segment, ranked by the output error left) or ``excess`` (by each
    segment's local excess in the baseline's ``verify --expected``, one build per candidate;
    ``steps.repair_excess``).
    The run is saved under ``out`` (a runs root, default ``<onnx dir>/leapp_lab``): ``runs/<id>/``
    (report.json) and ``repair/<id>/`` (the baseline and final build folders and their verify runs).
    ``json_path``: also write the report there. Raises InvalidOption (a ValueError) on an option
    that means nothing (a NaN or non-positive target, ``budget`` or ``jobs`` < 1), FileNotFoundError /
    UnusableInput / UnsafeOutput (ValueErrors) on unusable input or output paths, all before anything
    is built or written; ExecutorUnavailable when the cluster cannot be reached, EngineUnavailable
    when the engine cannot run here, CompileError when the baseline cannot be built. A repair that
    fails or is interrupted leaves nothing behind (docs/safety.md).
    """
    from leapp_lab.engines import get_engine
    from leapp_lab.steps.compile import check_prepared, default_npz

    t_start = time.perf_counter()
    check_repair_options(engine=engine, target_nrmse=target_nrmse, budget=budget, jobs=jobs, rank=rank)
    onnx_path, ref_path = Path(onnx).resolve(), Path(reference).resolve()
    npz_path = Path(npz).resolve() if npz is not None else default_npz(onnx_path)
    if onnx_path.is_file():
        check_prepared(onnx_path)               # a build's engine.onnx, named before its "npz"
    for p, what in ((onnx_path, "ONNX model (run leapp-lab prepare first)"), (ref_path, "reference npz"),
                    (npz_path, "input npz (default <onnx stem>.npz beside the model; pass --npz)")):
        if not (p.exists() or p.is_symlink()):
            raise FileNotFoundError(f"{p}: no such {what}")
        check_input_file(p, f"the {what.split(' (')[0]}")       # a FIFO or a device is never read
    root = Path(out) if out is not None else lab_dir(onnx_path.parent)
    check_repair_outputs(reference, onnx, npz=npz, out=root, json_path=json_path, save=save, html=html)
    # another model's reference or inputs, named now: else the baseline "cannot be built" (exit 2)
    check_reference_for_model(ref_path, onnx_path, npz_path)
    target = float(target_nrmse)
    get_engine(engine).check_available()       # EngineUnavailable names what is missing
    segs, warnings = segments(onnx_path, engine)
    if not segs:
        raise ValueError(f"{onnx_path}: no named ONNX node to keep in fp32; nothing to sweep")

    run = RunFolder(root, label=f"repair-{engine}")
    art = (root / "repair" / run.run_id).resolve()
    sweep_dir = art / ".sweep"
    report = RepairReport(onnx=str(onnx_path), npz=str(npz_path), reference=str(ref_path), engine=engine,
                          target_nrmse=target, budget=None if budget is None else int(budget),
                          segments=segs, warnings=warnings, rank=rank)
    made: list[Path] = []
    try:
        with sweep_executor(jobs, dask, executor, work=most_at_once(len(segs), budget, rank)) as (ex, info):
            # made once the executor is up: an unreachable cluster leaves no folder behind
            made = make_folders(sweep_dir)
            report.workers, report.executor, report.address = info.workers, info.kind, info.address
            _Sweep(report, ex, art, sweep_dir, progress).run()
        shutil.rmtree(sweep_dir, ignore_errors=True)
        report.seconds = round(time.perf_counter() - t_start, 3)
        report.created = _dt.datetime.now().isoformat(timespec="seconds")
        report.versions = _versions()
        if save:
            # the run commits only with every file of it written (--json, --html too); else the kept
            # builds and verify runs under repair/<id>/ go with it: nothing is left that no run names
            with staged([f for f in (json_path, html) if f is not None]) as tmps, run:
                report.save(run.path)
                report.path = run.final_path
                _write_files(report, json_path, html, tmps)
    except BaseException:
        shutil.rmtree(art, ignore_errors=True)
        remove_made(made)
        raise
    if not save:
        with staged([f for f in (json_path, html) if f is not None]) as tmps:
            _write_files(report, json_path, html, tmps)
    return report


def _write_files(report: RepairReport, json_path, html, tmps: list[Path]) -> None:
    """--json and --html (those given) into their temporary siblings ``tmps``, in that order."""
    tmp = iter(tmps)
    if json_path is not None:
        _write_json(next(tmp), report)
    if html is not None:
        report.to_html(next(tmp))


def _write_json(path, report: RepairReport) -> None:
    write_json(path, report.body())


def check_repair_options(*, engine: str = "ort-int8", target_nrmse: Any = 0.01, budget: Any = None,
                         jobs: Any = None, rank: str = "output") -> None:
    """Refuse an option that cannot mean anything before anything is read, built or written:
    InvalidOption (a ValueError) naming the option (docs/safety.md)."""
    def bad(flag: str, value: Any, want: str) -> InvalidOption:
        return InvalidOption(f"--{flag} {value} ({flag.replace('-', '_')}={value!r}): must be {want}")

    if engine not in REPAIRABLE:
        raise InvalidOption(f"--engine {engine!r}: {engine!r} cannot be repaired: choose one of "
                            f"{', '.join(REPAIRABLE)} (repair keeps parts of a reduced-precision engine in fp32)")
    if rank not in RANKS:
        raise InvalidOption(f"--rank {rank!r}: choose one of {', '.join(RANKS)}")
    if rank == "excess" and engine not in EXPECTED_OF:
        raise InvalidOption(f"--rank excess: engine {engine} has no expected local error to rank by (verify "
                            f"--expected needs {' or '.join(EXPECTED_OF)}); use --rank output")
    if isinstance(target_nrmse, bool) or not isinstance(target_nrmse, (int, float, np.integer, np.floating)) \
            or not math.isfinite(target_nrmse) or target_nrmse <= 0:
        raise bad("target-nrmse", target_nrmse, "a finite number > 0, a fraction (0.01 = 1 %)")
    for flag, v, want in (("budget", budget, "a whole number of builds >= 1"),
                          ("jobs", jobs, "a whole number >= 1 (1 runs the builds in this process)")):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
            raise bad(flag, v, want)


def check_repair_outputs(reference, onnx, *, npz=None, out=None, json_path=None, html=None,
                         save: bool = True) -> None:
    """Refuse, before any build, an output of repair that is, contains or lies inside one of its
    inputs (the reference, the ONNX, the input npz), or replaces a file leapp_lab did not write for
    it (docs/safety.md). ``out``: the runs root (default ``<onnx dir>/leapp_lab``): its ``latest``,
    ``runs/`` and ``repair/`` (the kept builds, saved with ``save=False`` too)."""
    from leapp_lab.steps.compile import check_prepared, default_npz

    onnx_path = Path(onnx)
    if onnx_path.is_file():
        check_prepared(onnx_path)   # a build's engine.onnx: its default --out would lie in the build
    root = Path(out) if out is not None else lab_dir(onnx_path.resolve().parent)
    check_outputs(
        [(json_path, "repair-json", "--json"), (html, "html", "--html"),
         (root / LATEST if save else None, "latest", "--out"),
         (root / RUNS_DIRNAME if save else None, "runs-dir", "--out"),
         (root / "repair", "repair-dir", "--out")],
        [(onnx_path, "the ONNX model"), (reference, "the reference npz"),
         (Path(npz) if npz is not None else default_npz(onnx_path), "the input npz")])


def _versions() -> dict[str, str]:
    import numpy as np
    import onnxruntime

    from leapp_lab import __version__
    return {"leapp_lab": __version__, "numpy": np.__version__, "onnxruntime": onnxruntime.__version__}


class _Sweep:
    """The rounds of one repair (state shared by its steps)."""

    def __init__(self, report: RepairReport, ex: cf.Executor, art: Path, sweep_dir: Path, progress):
        self.r = report
        self.ex = ex
        self.art = art
        self.sweep_dir = sweep_dir
        self.progress = progress
        self.order = {s.name: i for i, s in enumerate(report.segments)}
        self.serial = 0
        self.growth: dict[str, float | None] = {}
        self.excess: dict[str, float] = {}

    # -- one build ---------------------------------------------------------------------------------
    def _args(self, names: list[str], out: Path, keep: bool = False, verify_out: Path | None = None,
              expected: str | None = None) -> tuple:
        r = self.r
        return (r.onnx, r.npz, r.reference, r.engine, keep_fp32(r.segments, names), str(out), keep,
                None if verify_out is None else str(verify_out), expected)

    def _submit_all(self, stage: str, jobs: list[tuple[Any, tuple]]) -> list[tuple[Any, dict]]:
        """Run every (key, args) through the executor; results in submission order."""
        results: list[dict | None] = [None] * len(jobs)
        done = 0

        def collect(f: cf.Future, i: int) -> None:
            nonlocal done
            try:
                results[i] = f.result()
            except TraceGraphRefused:     # every build reads that node graph: no trial can use it
                raise
            except Exception as exc:  # noqa: BLE001 - a worker's failure is one failed trial
                if no_room(exc) is not None:    # but a full disk is the machine's: exit 2 naming it
                    raise
                results[i] = {"ok": False, "outputs": {}, "reasons": [], "growth": {}, "seconds": 0.0,
                              "reason": f"the build raised {type(exc).__name__}: {str(exc)[:400]}"}
            done += 1
            if self.progress is not None:
                self.progress(stage, done, len(jobs))

        if isinstance(self.ex, InlineExecutor):      # runs on submit: report each build as it ends
            for i, (_, args) in enumerate(jobs):
                collect(self.ex.submit(build_and_verify, *args), i)
        else:
            futs = {self.ex.submit(build_and_verify, *args): i for i, (_, args) in enumerate(jobs)}
            try:
                for f in cf.as_completed(futs):
                    collect(f, futs[f])
            except BaseException:
                for f in futs:
                    f.cancel()
                raise
        self.r.builds += len(jobs)
        self.r.build_seconds = round(self.r.build_seconds + sum(x.get("seconds", 0.0) for x in results), 3)
        return [(key, res) for (key, _), res in zip(jobs, results)]

    @staticmethod
    def _fill(t: Trial, res: dict) -> Trial:
        t.seconds = float(res.get("seconds") or 0.0)
        if not res.get("ok"):
            t.error, t.reason = None, res.get("reason") or "the build failed"
            return t
        t.outputs = dict(res["outputs"])
        t.error = worst(t.outputs)
        t.reason = "; ".join(res.get("reasons") or []) or None
        return t

    def _proof(self, names: list[str], tag: str) -> Proof:
        out = self.art / f"{tag}.{self.r.engine}"
        excess = self.r.rank == "excess" and tag == "baseline"
        args = self._args(names, out, keep=True, verify_out=self.art / f"{tag}.verify",
                          expected=EXPECTED_OF.get(self.r.engine) if excess else None)
        ((_, res),) = self._submit_all(tag, [(tag, args)])
        p = self._fill(Proof(round=0, segments=list(names)), res)
        if not res.get("ok") and tag == "baseline":
            raise CompileError(f"the {self.r.engine} engine cannot be built as it is, so there is nothing to "
                               f"repair: {p.reason}")
        p.build, p.verify_run = res.get("build"), res.get("verify_run")
        p.keep_fp32 = keep_fp32(self.r.segments, names)
        p.met = p.error is not None and p.error <= self.r.target_nrmse
        if tag == "baseline":
            self.growth = res.get("growth") or {}
            self.excess = res.get("excess") or {}
        return p

    # -- the rounds --------------------------------------------------------------------------------
    def run(self) -> None:
        r = self.r
        r.baseline = self._proof([], "baseline")
        if r.baseline.met:
            r.final, r.status, r.met, r.exit_code = r.baseline, "already-met", True, 0
            r.message = (f"the {r.engine} engine already meets the target: output nrmse "
                         f"{r.baseline.error:.4g} <= {r.target_nrmse:g}; nothing to keep in fp32")
            return
        if r.rank == "excess":
            from .repair_excess import excess_rounds
            chosen, last, current = excess_rounds(self)
        else:
            chosen, last, current = self._output_rounds()
        self._finish(chosen, last, current)

    def _output_rounds(self) -> tuple[list[str], Trial | None, float | None]:
        """The sweep and the greedy rounds: (chosen segments, the trial of the last choice, its error)."""
        r = self.r
        current = r.baseline.error
        chosen: list[str] = []
        last: Trial | None = None
        rnd = 1
        while True:
            remaining = [s.name for s in r.segments if s.name not in chosen]
            if not remaining:
                break
            room = None if r.budget is None else r.budget - r.builds - 1   # one build stays for the proof
            if room is not None and room <= 0:
                r.warnings.append(f"budget of {r.budget} builds reached before round {rnd}")
                break
            cands = self._prioritised(remaining, rnd)
            if room is not None and room < len(cands):
                r.warnings.append(f"round {rnd}: the budget left room for {room} of {len(cands)} segments "
                                  "(the most promising ones were swept)")
                cands = cands[:room]
            jobs = []
            for name in cands:
                self.serial += 1
                jobs.append((name, self._args(chosen + [name], self.sweep_dir / f"{self.serial}.{r.engine}")))
            trials = []
            for name, res in self._submit_all(f"round {rnd}", jobs):
                t = self._fill(Trial(round=rnd, segments=chosen + [name], added=name), res)
                t.gain = None if t.error is None or current is None else current - t.error
                trials.append(t)
            trials.sort(key=lambda t: sort_key(t.error, self.order[t.added]))
            if rnd == 1:
                for i, t in enumerate(trials, 1):
                    t.rank = i
            r.trials += trials
            best = trials[0] if trials else None
            if best is None or best.error is None or (current is not None and best.error >= current):
                break                     # no segment lowers the error any more
            best.chosen = True
            chosen.append(best.added)
            current, last = best.error, best
            if best.error <= r.target_nrmse:
                break
            rnd += 1
        return chosen, last, current

    def _finish(self, chosen: list[str], last: Trial | None, current: float | None) -> None:
        """The proof of the chosen set (or why there is none) and the report's verdict."""
        r = self.r
        if not chosen:
            r.status, r.met, r.exit_code = "not-met", False, 1
            r.message = (f"no segment kept in fp32 lowered the output error (nrmse {_f(r.baseline.error)}, "
                         f"target {r.target_nrmse:g}); nothing was repaired" if r.trials else
                         f"the budget of {r.budget} builds left no room to sweep a segment (output nrmse "
                         f"{_f(r.baseline.error)}, target {r.target_nrmse:g}); nothing was repaired")
            return
        r.chosen = list(chosen)
        if r.budget is not None and r.builds >= r.budget:
            r.status, r.met, r.exit_code = "not-met", False, 1
            r.message = (f"the budget of {r.budget} builds left none to build and verify the best set "
                         f"({', '.join(chosen)}: nrmse {_f(current)} in the sweep) on its own; not claimed")
            return
        r.final = self._proof(chosen, "final")
        r.final.round = last.round if last is not None else 0
        r.final.swept_error = current
        r.met = r.final.met
        r.status = "met" if r.met else "not-met"
        r.exit_code = 0 if r.met else 1
        n, total = len(chosen), len(r.segments)
        if r.met:
            r.message = (f"{n} of {total} segments kept in fp32 ({', '.join(chosen)}) bring{'s' * (n == 1)} every output "
                         f"under {r.target_nrmse:g}: nrmse {_f(r.baseline.error)} -> {_f(r.final.error)}, "
                         f"verified on the final build ({r.builds} builds)")
        else:
            r.message = (f"target {r.target_nrmse:g} not met within {r.builds} builds; the best verified set "
                         f"keeps {n} of {total} segments in fp32 ({', '.join(chosen)}): nrmse "
                         f"{_f(r.baseline.error)} -> {_f(r.final.error)}")
        if r.final.error != current:
            r.warnings.append(f"the final build measured nrmse {_f(r.final.error)} where the same set measured "
                              f"{_f(current)} in the sweep: builds of this engine are not reproducible")

    def _prioritised(self, names: list[str], rnd: int) -> list[str]:
        if rnd == 1:
            # the taps whose error grew most in the baseline first (a segment's largest growth)
            def g(name: str) -> float:
                vals = [self.growth.get(t) for t in self.r.segment(name).taps]
                vals = [v for v in vals if v is not None]
                return -max(vals) if vals else math.inf
            return sorted(names, key=lambda n: (g(n), self.order[n]))
        rank = {t.added: t.rank for t in self.r.trials if t.round == 1}
        return sorted(names, key=lambda n: (rank.get(n) is None, rank.get(n) or 0, self.order[n]))


def _f(v: float | None) -> str:
    return "unmeasurable" if v is None else f"{v:.4g}"

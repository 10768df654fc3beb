"""Local vs inherited error (``verify(..., local=True)``): score each row's teacher-forced value.

The engine graph is cut at every tap and fed the reference values there
(``leapp_lab.engines.ort_local``), run once per sample on a thread while verify scores the
cumulative rows (``LocalJob``), and each row's local value is scored against its reference with the
same kernel as the cumulative metrics, in its light mode (``diff_sums_rows(light=True)`` -> ``Metrics``).
Per row: ``local_nrmse``, ``local_cosine``, ``local_max_abs``, ``local_share`` (local_nrmse / nrmse
clipped to [0, 1]), ``locally_diverged`` (the report's DivergenceRule judging the local record);
per report: ``first_locally_divergent`` and ``worst_local``. Nothing here raises for a build it
cannot cut: the reason goes to the rows' ``local_note`` and the report's warnings.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from leapp_lab.model.jsonio import load_npz
from leapp_lab.model.metrics import Metrics
from leapp_lab.model.safepaths import check_input_file, present
from leapp_lab.model.verify import VerifyReport, VerifyRow

from leapp_lab.compare.buildio import OpenBuild
from leapp_lab.numerics.metrics import diff_sums_rows, merge_sums
from leapp_lab.compare.npzio import NpzArrays

#: local values held before they are scored (bounds memory on large runs)
SCORE_BLOCK_BYTES = 256 << 20


def _feedable(row: VerifyRow) -> bool:
    """Can this row's reference stand in for the engine's value (same shape, a castable dtype)?"""
    if row.status != "compared" or not row.dtype_engine or not row.dtype_reference:
        return False
    e, r = np.dtype(row.dtype_engine), np.dtype(row.dtype_reference)
    return e == r or (e.kind == "f" and r.kind == "f")


def _skip(report: VerifyReport, why: str) -> None:
    report.warnings.append(f"[{report.build_name}]: no local error: {why}")
    for r in report.rows:
        if r.status == "compared":
            r.local_note = why


class LocalJob:
    """Local error in two halves, so that the engine runs overlap the cumulative scoring:
    ``start()`` (once the rows are paired, before they are scored) prepares the teacher-forced
    graph and starts a thread that opens its session and runs it once per sample (onnxruntime
    releases the GIL); ``finish(report)`` (once the rows are scored) takes the values as they
    come, scores them (a light pass) and fills the rows. ``cancel()`` stops the thread (always call
    it: a ``finally``)."""

    def __init__(self, rows: list[VerifyRow], samples: int, build: OpenBuild, ref: NpzArrays,
                 inputs_npz: Path | None, ref_path: Path | None = None):
        self.rows, self.samples, self.build, self.ref, self.inputs_npz = rows, samples, build, ref, inputs_npz
        self.ref_path = ref_path
        self.skip: str | None = None        # why there is no local error at all
        self.notes: dict[str, str] = {}     # row -> why it has no local value
        self.scored: list[VerifyRow] = []
        self.lg = None
        self._thread = None
        self._stop = None
        self._queue = None

    def start(self) -> None:
        from google.protobuf.message import DecodeError

        from leapp_lab.engines.base import EngineUnavailable

        build = self.build
        if build.report is None:
            self.skip = "the build has no build.json (its engine and tap bindings are unknown)"
            return
        try:
            from leapp_lab.engines.ort_local import check_engine, teacher_forced
            check_engine(build.report.engine)
        except EngineUnavailable as exc:
            self.skip = str(exc)
            return
        artifact = build.folder / (build.report.artifact or "engine.onnx")
        if not present(artifact):
            self.skip = f"the engine graph {artifact.name} is not in the build"
            return
        check_input_file(artifact, "the build's engine graph (an ONNX file)")
        if self.inputs_npz is None:
            self.skip = (f"the input samples (build.json npz {build.report.npz!r}, or "
                         "<stem>.npz beside the reference) were not found")
            return
        feedable = {r.name: (np.dtype(r.dtype_engine), tuple(r.shape_engine[1:]))
                    for r in self.rows if _feedable(r)}
        try:
            lg = teacher_forced(build.onnx_split(artifact), build.report.manifest.taps, feedable,
                                prepared=self._prepared)
        except (DecodeError, ValueError, OSError) as exc:    # the build's engine graph, not the user's input
            self.skip = (f"{artifact.name} is not a readable ONNX model ({type(exc).__name__}: "
                         f"{str(exc)[:200]}); compile the build again")
            return
        self.lg = lg
        self.notes.update(lg.notes)
        self.scored = [r for r in self.rows if r.status == "compared" and r.name in lg.outputs]
        for r in self.rows:
            if r.status == "compared" and r.name not in lg.outputs:
                self.notes[r.name] = lg.reasons.get(r.name, "the engine graph has no output carrying it")
        if not self.samples:
            return
        for c in lg.cuts:       # mapped here: the thread then only reads them
            self.ref[c.name]
        import queue
        import threading
        # at most SCORE_BLOCK_BYTES of local values wait to be scored
        per_sample = sum(int(np.prod(r.shape_engine[1:], dtype=np.int64)) * np.dtype(r.dtype_engine).itemsize
                         for r in self.scored)
        self._queue = queue.Queue(maxsize=max(1, SCORE_BLOCK_BYTES // max(per_sample, 1)))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, daemon=True, name="leapp-lab-local")
        self._thread.start()

    def _prepared(self):
        """The graph of the model the engine was compiled from (build.json's onnx, else the one
        beside the reference), or None: what its taps feed tells a watched value from one the
        engine reads through another tensor (``ort_local.teacher_forced``)."""
        from google.protobuf.message import DecodeError
        from leapp_lab.model.build import prepared_onnx_candidates
        b = self.build
        onnx_ = b.report.onnx if b.report is not None else None
        cands = (prepared_onnx_candidates(onnx_, b.path, self.ref_path) if self.ref_path is not None else
                 [Path(onnx_), b.path.parent / Path(onnx_).name] if onnx_ else [])
        for p in cands:
            try:
                if p.is_file():
                    return b.onnx_split(p).model
            except (OSError, ValueError, DecodeError):
                continue
        return None

    def _produce(self) -> None:
        """The thread: one run of the teacher-forced graph per sample, each run's values queued;
        an exception that stops it is queued instead (``finish`` says or raises it)."""
        stop, lg = self._stop, self.lg
        try:
            inputs = load_npz(self.inputs_npz)
            with lg.runner() as runner:
                cut_feeds = {c.feed for c in lg.cuts}
                missing = [n for n in runner.input_names if n not in inputs and n not in cut_feeds]
                if missing:
                    raise _NoLocal(f"{self.inputs_npz.name} has no array for engine input(s) {missing}")
                wanted = list(dict.fromkeys(lg.outputs[r.name] for r in self.scored))
                feed_names = [n for n in runner.input_names if n in inputs]
                for i in range(self.samples):
                    if stop.is_set():
                        return
                    feed = {n: np.ascontiguousarray(inputs[n][i]) for n in feed_names}
                    feed.update(lg.feed(i, self.ref))
                    self._put(runner.run(feed, wanted))   # one run per sample: every row's local value
        except BaseException as exc:  # noqa: BLE001 - handed to finish() on the caller's thread
            self._put(exc)

    def _put(self, item) -> None:
        import queue
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def cancel(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None

    def finish(self, report: VerifyReport, progress=None, sink=None) -> None:
        """Score the local values into ``report``'s rows (the rows ``start`` saw, now scored).
        ``sink(sample, row name, value)``: also handed each local value as it is taken (verify
        --expected int8 compares it with its own simulation's), before it is scored."""
        from leapp_lab.engines.base import CompileError

        report.local = True
        if self.skip is not None:
            return _skip(report, self.skip)
        for r in report.rows:
            if r.name in self.notes:
                r.local_note = self.notes[r.name]
        ref, scored, lg = self.ref, list(self.scored), self.lg
        sums: dict[str, object] = {}
        pending: dict[str, list[np.ndarray]] = {}
        first = 0

        def score(upto: int) -> None:
            # every row's block of samples in one kernel call, scored side by side (as verify
            # scores); light: a local record reports nrmse, cosine and max |d| only, so the pass
            # skips the histogram, the |d| and APE sums and min_atol
            nonlocal first
            names = [r.name for r in scored if pending.get(r.name)]
            # the values as the engine returned them: the kernel copies them once (no stacking)
            rows = [(pending.pop(n), ref[n][first:upto]) for n in names]
            for j, per_sample in diff_sums_rows(rows, rtol=0.0, light=True):
                st = merge_sums(per_sample)
                n = names[j]
                sums[n] = st if n not in sums else sums[n].merge(st)
            first = upto

        held = 0
        for i in range(self.samples):
            vals = self._queue.get()
            if isinstance(vals, BaseException):
                if isinstance(vals, _NoLocal):
                    return _skip(report, str(vals))
                if isinstance(vals, CompileError):
                    return _skip(report, f"onnxruntime could not run the teacher-forced graph: {vals}")
                raise vals
            for r in list(scored):
                v = vals[lg.outputs[r.name]]
                if tuple(v.shape) != tuple(r.shape_reference[1:]):
                    # never a wrong number: a value of another shape is not scored at all
                    r.local_note = (f"the teacher-forced graph gives shape {tuple(v.shape)} on sample {i}, "
                                    f"the reference {tuple(r.shape_reference[1:])}")
                    scored.remove(r)
                    pending.pop(r.name, None)
                    continue
                pending.setdefault(r.name, []).append(v)
                held += v.nbytes
                if sink is not None:
                    sink(i, r.name, v)
            if held > SCORE_BLOCK_BYTES:
                score(i + 1)
                held = 0
            if progress is not None:
                progress("local", i + 1, self.samples)
        score(self.samples)

        cut_of = {t: c for c in lg.cuts for t in c.taps}
        for r in scored:
            st = sums.get(r.name)
            if st is None:      # no samples
                continue
            m = Metrics().fill(st)      # from a light pass: only nrmse, cosine and max_abs are numbers
            r.local_nrmse, r.local_cosine, r.local_max_abs = m.nrmse, m.cosine, m.max_abs
            if r.nrmse is not None and r.nrmse > 0 and m.nrmse is not None:
                r.local_share = min(1.0, m.nrmse / r.nrmse)
            if r.in_rule:
                r.locally_diverged = report.rule.diverges(m)
            if r.is_tap and r.name not in cut_of:
                r.local_note = (f"not cut ({lg.reasons.get(r.name, 'no reason recorded')}): rows after it "
                                "include its error")
        _mark(report)


class _NoLocal(Exception):
    """The thread found no way to run the teacher-forced graph (the message says why)."""


def _mark(report: VerifyReport) -> None:
    first = next((r for r in report.rows if r.in_rule and r.locally_diverged), None)
    if first is not None:
        first.first_locally_divergent = True
        report.first_locally_divergent = first.name
    cands = [r for r in report.rows if r.in_rule and r.local_nrmse is not None]
    pool = [r for r in cands if r.is_tap] or cands
    if pool:
        report.worst_local = max(pool, key=lambda r: r.local_nrmse).name

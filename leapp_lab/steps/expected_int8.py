"""Expected int8 error (``verify(..., expected="int8")``): what the engine's own int8 rounding
alone would do to each row, cumulatively and locally.

The grids are read from the int8 build's ``engine.onnx`` (``engines.int8_grids``); the model rounded
onto them is the *prepared* ONNX, the model of the reference (``<stem>.onnx`` beside
``<stem>.reference.npz``, else build.json's ``onnx``), checked to reproduce the reference in fp32 on
the first sample before anything is taken from it (a build compiled from an edited copy of the model
is compared with the model the reference came from, never with itself). ``engines.ort_fakequant``
builds one graph with the rounded model, cumulative and cut at the taps ``--local`` cut, run in
fp32 onnxruntime once per sample; each row's value is scored against its reference with the verify
kernel (light pass): ``expected_nrmse`` and ``expected_local_nrmse``. ``judge_expected`` then sets
``local_excess``, ``beyond_expected`` and the report's ranking. Nothing here fails the verify: what
cannot be computed goes to ``expected_note`` and the warnings.

``Int8Job`` does it beside the rest of the verify: ``start()`` (once ``--local``'s cuts are known)
builds, opens and runs the graph on a thread while the cumulative rows are scored and the
teacher-forced engine runs; ``finish(report)`` scores its values into the rows. The fp32 check is
skipped when the prepare report beside the ONNX names this reference and neither file changed since
prepare wrote it (their mtimes), the case of every build compiled from a prepared model.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from leapp_lab.compare.buildio import OpenBuild
from leapp_lab.compare.npzio import NpzArrays
from leapp_lab.model.jsonio import load_npz
from leapp_lab.model.metrics import Metrics
from leapp_lab.model.safepaths import check_input_file, present
from leapp_lab.model.verify import ExpectedRule, ExportDiffers, VerifyReport
from leapp_lab.numerics.metrics import diff_sums_rows, merge_sums

from .expected_drift import judge_expected

#: the prepared ONNX must reproduce the reference this closely (nrmse of every compared row on the
#: first sample; onnxruntime fp32 against torch is ~1e-7 on the test models, a fault of a few
#: percent in one layer ~1e-2)
SAME_MODEL_NRMSE = 1e-4


def _candidates(build: OpenBuild, ref_path: Path) -> list[Path]:
    """The prepared ONNX of the reference: beside it first (a build may come from an edited copy)."""
    out: list[Path] = []
    if ref_path.name.endswith(".reference.npz"):
        out.append(ref_path.with_name(ref_path.name[: -len(".reference.npz")] + ".onnx"))
    onnx_ = build.report.onnx if build.report is not None else ""
    if onnx_:
        p = Path(onnx_)
        out += [p, build.path.parent / p.name, ref_path.parent / p.name]
    return [p for p in dict.fromkeys(out) if p.is_file()]


def _skip(report: VerifyReport, why: str) -> None:
    report.warnings.append(f"[{report.build_name}]: no expected int8 error: {why}")
    for r in report.rows:
        if r.status == "compared":
            r.expected_note = why


def _nrmse(a: np.ndarray, r: np.ndarray) -> float:
    a, r = np.asarray(a, np.float64), np.asarray(r, np.float64)
    den = float(np.sqrt((r * r).sum()))
    d = float(np.sqrt(((a - r) ** 2).sum()))
    return 0.0 if den == 0 and d == 0 else (float("inf") if den == 0 else d / den)


class Int8Job:
    """Expected int8 error beside the verify (module doc): ``start()``, then ``finish(report, rule)``;
    ``cancel()`` in a ``finally``."""

    def __init__(self, rows, build: OpenBuild, ref: NpzArrays, ref_path: Path, inputs_npz: Path | None,
                 local_job=None):
        self.rows, self.build, self.ref, self.ref_path = rows, build, ref, ref_path
        self.inputs_npz, self.local_job = inputs_npz, local_job
        self.skip: str | None = None
        self.unmapped: list[str] = []
        self.eg = None
        self.got: dict[str, list] = {}
        self._thread = None
        self._error: BaseException | None = None
        from .int8_sim import SimSums
        self.sums = SimSums()
        #: (row, its fp32 nrmse on sample 0, the prepared ONNX) where the fp32 export first departs
        #: from the reference, when no candidate ONNX is the model of the reference
        self.export_differs: tuple[str, float, Path] | None = None
        self._waiting: list = []        # teacher-forced values handed over before the simulation ran
        self._held = 0

    def start(self) -> None:
        build = self.build
        engine = build.report.engine if build.report is not None else None
        if engine != "ort-int8":
            self.skip = (f"the build's engine is {engine or 'unknown'}, not ort-int8: it has no int8 grids to "
                         "round the model onto")
            return
        self.artifact = build.folder / (build.report.artifact or "engine.onnx")
        if not present(self.artifact):
            self.skip = f"the engine graph {self.artifact.name} is not in the build"
            return
        check_input_file(self.artifact, "the build's engine graph (an ONNX file)")
        if self.inputs_npz is None:
            self.skip = "the input samples (build.json npz, or <stem>.npz beside the reference) were not found"
            return
        self.cands = _candidates(build, self.ref_path)
        if not self.cands:
            self.skip = (f"the prepared ONNX of the reference ({self.ref_path.name[:-len('.reference.npz')]}.onnx "
                         "beside it, or build.json's onnx) was not found")
            return
        lg = self.local_job.lg if self.local_job is not None else None
        self.has_local = lg is not None          # the local chain (no cut: the whole model)
        self.cut_taps = {t for c in lg.cuts for t in c.taps} if lg is not None else set()
        # read here, on the caller's thread: a damaged engine graph (truncated, a scale of 0 or NaN)
        # is unusable input (exit 2, naming the file), never a traceback from the thread
        from leapp_lab.engines.int8_grids import read_grids
        key = ("grids", _stat(self.artifact))
        self.grids = _CACHE.get(key) or _remember(key, read_grids(self.artifact))
        # a tap the engine shows as its float tensor (not the dequantized int8 value) is not rounded
        # (an unfused tap the engine reads through an extra DequantizeLinear is rounded)
        self.unrounded = {t.name for t in build.report.manifest.taps if t.via in ("direct", "unfused")
                          and not (t.via == "unfused" and t.bound_to in self.grids.dequantized)}
        for r in self.rows:                     # mapped here: the thread then only reads them
            self.ref[r.name]
        import threading
        self._thread = threading.Thread(target=self._run, daemon=True, name="leapp-lab-expected-int8")
        self._thread.start()

    def _run(self) -> None:
        try:
            self._work()
        except BaseException as exc:  # noqa: BLE001 - handed to finish() on the caller's thread
            self._error = exc

    def _work(self) -> None:
        import onnx

        from leapp_lab.engines.ort_fakequant import expected_graph, unreproduced
        from leapp_lab.engines.ort_session import OrtRunner
        from leapp_lab.onnxio.manifest import read_manifest

        inputs = load_npz(self.inputs_npz)
        ref, why = self.ref, []
        grids = self.grids
        for onnx_path in self.cands:
            trusted = _prepared_together(onnx_path, self.ref_path)
            key = (_stat(self.artifact), _stat(onnx_path), frozenset(self.cut_taps), frozenset(self.unrounded),
                   self.has_local, trusted)
            hit = _CACHE.get(key)
            if hit is None:
                if not len(grids):
                    self.skip = f"{self.artifact.name} holds no quantized tensor"
                    return
                model = onnx.load(str(onnx_path))
                cuts = {t.name: t.tensor for t in read_manifest(model).taps if t.name in self.cut_taps and t.tensor}
                eg = expected_graph(model, grids, cuts, local=self.has_local, unrounded=self.unrounded,
                                    fp32=not trusted)
                eg.unreproduced = unreproduced(model, [r.name for r in self.rows], set(cuts.values()),
                                               grids.kernels)
                eg.unmapped = grids.unmapped
                runner = OrtRunner(eg.model.SerializeToString(), optimize=False, spin=False).activate()
                eg.model = None                  # the session holds the graph now
                hit = _remember(key, (eg, runner))
            eg, runner = hit
            self.unmapped = eg.unmapped
            names = set(runner.output_names)
            feed_names = [n for n in runner.input_names if n in inputs]
            missing = [n for n in runner.input_names if n not in inputs and n not in {f for f, _ in eg.feeds}]
            if missing:
                self.skip = f"{self.inputs_npz.name} has no array for input(s) {missing} of {onnx_path.name}"
                return
            rows = [r for r in self.rows if eg.cumulative.get(r.name) in names]
            bad = None if trusted else _check_fp32(runner, eg, rows, inputs, feed_names, ref)
            if bad:
                why.append(f"{onnx_path}: {bad[0]}")
                if bad[1] is not None and self.export_differs is None:
                    self.export_differs = (bad[1], bad[2], onnx_path)
                continue
            outs = list(dict.fromkeys([eg.cumulative[r.name] for r in rows]
                                      + [eg.local[r.name] for r in rows if r.name in eg.local]))
            self.got = {o: [] for o in outs}
            n = ref[rows[0].name].shape[0] if rows else 0
            for i in range(n):
                vals = runner.run(_feed(eg, inputs, feed_names, ref, i), outs)
                for o in outs:
                    self.got[o].append(vals[o])
            self.eg = eg
            return
        self.skip = "; ".join(why) + " (not the model of this reference: re-run prepare)"
        if self.export_differs is not None:
            row, e, path = self.export_differs
            self.skip = (f"{'; '.join(why)}: the fp32 export already differs from torch at {row} (not the model "
                         f"of this reference, or an export fault): not an int8 effect; verify an ort build of "
                         f"{path.name} next")

    def cancel(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def local_sink(self, i: int, name: str, value: np.ndarray) -> None:
        """The teacher-forced engine's value of row ``name`` on sample ``i`` (``LocalJob.finish``'s
        sink), compared with the simulation's local value. While the simulation still runs on its
        thread the values wait (up to ``SINK_BYTES``), so that the local scoring overlaps it."""
        if self._thread is not None and self._thread.is_alive() and self._held < SINK_BYTES:
            self._waiting.append((i, name, value))
            self._held += value.nbytes
            return
        self.cancel()
        self._drain()
        self._compare(i, name, value)

    def _drain(self) -> None:
        waiting, self._waiting, self._held = self._waiting, [], 0
        for item in waiting:
            self._compare(*item)

    def _compare(self, i: int, name: str, value: np.ndarray) -> None:
        if self.eg is None or self._error is not None:
            return
        o = self.eg.local.get(name)
        if o is not None and o in self.got and i < len(self.got[o]):
            self.sums.add("local", name, value, self.got[o][i], self.ref[name][i])

    def finish(self, report: VerifyReport, rule: ExpectedRule, eng=None) -> None:
        """Score the expected values into ``report``'s rows and judge them."""
        report.expected = rule
        self.cancel()
        if self._error is not None:
            raise self._error
        self._drain()
        if self.skip is not None:
            if self.export_differs is not None:
                row, e, path = self.export_differs
                report.export_differs = ExportDiffers(row=row, nrmse=e, onnx=str(path))
            return _skip(report, self.skip)
        eg, ref = self.eg, self.ref
        rows = [r for r in report.rows if r.status == "compared"]
        pairs = [(r, eg.cumulative[r.name], "expected_nrmse") for r in rows if eg.cumulative.get(r.name) in self.got]
        pairs += [(r, eg.local[r.name], "expected_local_nrmse") for r in rows
                  if r.local_nrmse is not None and eg.local.get(r.name) in self.got]
        pairs = [p for p in pairs if all(v.shape == ref[p[0].name].shape[1:] for v in self.got[p[1]])]
        if pairs and self.got[pairs[0][1]]:
            for j, per_sample in diff_sums_rows([(self.got[o], ref[r.name]) for r, o, _ in pairs],
                                                rtol=0.0, light=True):
                r, _, key = pairs[j]
                setattr(r, key, Metrics().fill(merge_sums(per_sample)).nrmse)
        for r in rows:
            if r.expected_nrmse is None and r.expected_note is None:
                r.expected_note = "the prepared ONNX has no output of this name"
            if r.expected_local_nrmse is None and r.local_nrmse is not None and r.expected_note is None:
                r.expected_note = "no local expectation (the row's upstream taps were not cut)"
        if self.unmapped:
            report.warnings.append(f"[{report.build_name}]: expected int8: {len(self.unmapped)} int8 tensor(s) "
                                   f"of {self.artifact.name} have no float name in the prepared model and are "
                                   f"not rounded: {', '.join(self.unmapped[:5])}")
        if eng is not None:
            for r in rows:
                o = eg.cumulative.get(r.name)
                if o in self.got and r.name in eng:
                    for i, v in enumerate(self.got[o]):
                        self.sums.add("cumulative", r.name, eng[r.name][i], v, ref[r.name][i])
        n = len(next(iter(self.got.values()), []))
        for r in rows:
            r.sim_nrmse = self.sums.value("cumulative", r.name, n)
            r.sim_local_nrmse = self.sums.value("local", r.name, n)
            k = eg.unreproduced.get(r.name)
            if k is not None:
                r.sim_note = (f"its int8 kernel {k} rounds in a way the simulation does not reproduce: judged by "
                              "its local excess")
            elif r.sim_local_nrmse is None and r.local_nrmse is not None:
                r.sim_note = self.sums.bad.get(("local", r.name)) or "no simulated local value: judged by its local excess"
        rule.local = any(r.expected_local_nrmse is not None for r in rows)
        rule.text = rule.describe()
        judge_expected(report, rule)


#: teacher-forced values held for the simulation's comparison while it still runs (then the local
#: scoring waits for it instead)
SINK_BYTES = 256 << 20

#: the rounded model's graph and open session of the last builds verified in this process, keyed by
#: the files they come from (path, size, mtime) and the cuts: a verify of the same build again (a
#: notebook re-running its cell) reuses them instead of building and opening them again
_CACHE: dict = {}
_CACHE_SIZE = 4     # two builds: each its graph and session, and its grids


def _stat(p: Path) -> tuple:
    st = p.stat()
    return (str(p.resolve()), st.st_size, st.st_mtime_ns)


def _remember(key, value):
    with _LOCK:
        if key not in _CACHE:
            while len(_CACHE) >= _CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))      # the oldest; its session closes when unreferenced
            _CACHE[key] = value
        return _CACHE[key]


import threading as _threading  # noqa: E402
_LOCK = _threading.Lock()


def _prepared_together(onnx_path: Path, ref_path: Path) -> bool:
    """Did prepare write ``onnx_path`` as the model of ``ref_path``, and has neither changed since?
    (the prepare report beside the ONNX names both, and is not older than either)."""
    from leapp_lab.model.jsonio import read_json
    rec = onnx_path.parent / f"{onnx_path.stem}.prepare" / "report.json"
    try:
        d = read_json(rec)
        t = rec.stat().st_mtime_ns
        same = (Path(d.get("onnx") or "").resolve() == onnx_path.resolve()
                and Path(d.get("reference") or "").resolve() == ref_path.resolve())
        return bool(same and onnx_path.stat().st_mtime_ns <= t and ref_path.stat().st_mtime_ns <= t)
    except (OSError, ValueError, TypeError, AttributeError):
        return False


def _feed(eg, inputs, feed_names, ref, i: int) -> dict:
    f = {n: np.ascontiguousarray(inputs[n][i]) for n in feed_names}
    f.update({name: np.ascontiguousarray(ref[tap][i], dtype=np.float32) for name, tap in eg.feeds})
    return f


def _check_fp32(runner, eg, rows, inputs, feed_names, ref) -> tuple[str, str | None, float] | None:
    """(why the prepared ONNX is not the model of the reference, the first row in model order whose
    fp32 value departs from it or None for a shape, that row's nrmse), from its fp32 chain on
    sample 0; None when it is the model."""
    if not rows or ref[rows[0].name].shape[0] == 0:
        return None
    outs = [eg.fp32[r.name] for r in rows]
    vals = runner.run(_feed(eg, inputs, feed_names, ref, 0), outs)
    for r, o in zip(rows, outs):
        v = vals[o]
        if v.shape != ref[r.name].shape[1:]:
            return (f"its {r.name!r} has shape {tuple(v.shape)}, the reference {tuple(ref[r.name].shape[1:])}",
                    None, float("nan"))
        if not np.issubdtype(v.dtype, np.floating):
            continue
        e = _nrmse(v, ref[r.name][0])
        if not e <= SAME_MODEL_NRMSE:
            return f"its fp32 {r.name!r} differs from the reference (nrmse {e:.3g} on sample 0)", r.name, e
    return None

"""``leapp_lab.compile(onnx, engine="ort", npz=None, out=None, archive=False)``: build an engine from
a prepared ONNX, run it on every input sample, and write the build folder::

    build/model.<engine>/          (or build/model.<engine>.tgz with archive=True)
        engine.onnx                the engine artifact (taps exposed), engine.untapped.onnx beside it
        sample_outputs.npz         every output and bound tap on every sample (leading sample axis)
        compile.log                what the build did, line by line
        build.json                 BuildReport (kind "build"): per-tap binding, observer effect

Everything is written to a hidden temporary sibling first and renamed into place at the end, so a
failed build never destroys the previous one.
"""
from __future__ import annotations

import datetime as _dt
import os
import shutil
import sys
import tarfile
import time
import uuid
from pathlib import Path
from typing import Callable

import numpy as np

from leapp_lab.model.finding import plural
from leapp_lab.model.build import (BUILD_FILE, COMPILE_LOG, SAMPLE_OUTPUTS, BuildReport, KernelDiff,
                                   ObserverEffect)
from leapp_lab.model.errors import UnusableInput
from leapp_lab.model.jsonio import atomic_write_text, load_npz
from leapp_lab.model.npzstream import SampleNpzWriter
from leapp_lab.model.safepaths import (check_input_file, check_outputs, make_folders, no_room_error,
                                      remove_made, room_problem, writing)
from leapp_lab.onnxio.manifest import read_manifest, strip_taps
from leapp_lab.onnxio.weights import check_weights, load_weightless

from leapp_lab.engines import get_engine
from leapp_lab.engines.base import CompileError, ProgressFn
from leapp_lab.engines.feeds import check_calibration, check_feeds

from .compile_options import QUANTIZERS, _check_keep_fp32, _check_quantizer  # noqa: F401 - public here too


def stderr_progress(stage: str, done: int, total: int) -> None:
    """A ready-made progress hook: one stderr line per step (what the CLI uses)."""
    from leapp_lab.model.messages import printable
    print(printable(f"[leapp-lab compile] {stage} {done}/{total}"), file=sys.stderr, flush=True)


def default_npz(onnx_path: Path) -> Path:
    return onnx_path.with_name(onnx_path.stem + ".npz")


def default_out(onnx_path: Path, engine: str, archive: bool) -> Path:
    return onnx_path.with_name(f"{onnx_path.stem}.{engine}" + (".tgz" if archive else ""))


def load_inputs(npz: Path, names: list[str]) -> tuple[list[dict[str, np.ndarray]], list[str]]:
    """Per-sample feeds from model.npz (every ONNX input, leading sample axis)."""
    arrays = load_npz(npz)
    missing = [n for n in names if n not in arrays]
    if missing:
        raise CompileError(f"{npz}: has no array for model input(s) {missing} (it holds {sorted(arrays)}); "
                           f"re-run prepare or pass the matching --npz")
    counts = {n: (arrays[n].shape[0] if arrays[n].ndim else None) for n in names}
    bad = [n for n, c in counts.items() if c is None]
    if bad:
        raise CompileError(f"{npz}: input(s) {bad} are scalars; every input needs a leading sample axis")
    if len(set(counts.values())) > 1:
        raise CompileError(f"{npz}: inputs have different sample counts {counts}; every input needs the "
                           f"same leading sample axis")
    n = next(iter(counts.values()), 0)
    extra = sorted(set(arrays) - set(names))
    return [{k: np.ascontiguousarray(arrays[k][i]) for k in names} for i in range(n)], extra


def compile(onnx, engine: str = "ort", npz=None, out=None, archive: bool = False, *,
            progress: ProgressFn | None = None, naive_check: bool = True,
            log: Callable[[str], None] | None = None, keep_fp32=None, force: bool = False,
            quantizer: str | None = None) -> BuildReport:
    """Build ``engine`` from the prepared ONNX ``onnx`` and run it on every sample of ``npz``.

    ``keep_fp32``: names of ONNX nodes (of the prepared model) the reduced-precision engines keep in
    fp32: ``ort-int8`` leaves them unquantized (quantize_static's ``nodes_to_exclude``), ``ort-fp16``
    and ``trt-fp16`` compute them in float32 between Casts in the typed ONNX (the converter's node
    block list; engines/typed_onnx.py). Recorded in build.json (``keep_fp32``); ``leapp_lab.repair`` chooses them.

    Raises FileNotFoundError (a missing file, named), ValueError (an unknown engine, a bad manifest)
    or CompileError (a custom op onnxruntime cannot run, a manual tap the engine lost, a missing
    package/GPU for TensorRT). ``progress(stage, done, total)`` is called during long steps;
    ``log(line)`` receives compile.log lines as they are written.
    ``quantizer``: what writes the int8 Q/DQ of ``ort-int8`` / ``trt-int8``: ``"ort"`` (the default:
    onnxruntime's quantize_static) or ``"modelopt"`` (NVIDIA ModelOpt's ONNX PTQ, the
    ``modelopt`` extra); recorded in build.json (``quantizer``). InvalidOption for other engines.
    ``force``: build even when the ONNX, npz, engine and options are those of the build already at
    ``out`` (which is otherwise reused: ``report.cache.hit``; steps/compile_cache.py).
    """
    onnx_path = Path(onnx)
    if not onnx_path.exists():
        raise FileNotFoundError(f"{onnx_path}: no such ONNX model (run leapp-lab prepare first)")
    check_input_file(onnx_path, "an ONNX model")
    from leapp_lab.onnxio.wire import check_external_data
    check_external_data(onnx_path)
    check_prepared(onnx_path)
    npz_path = Path(npz) if npz is not None else default_npz(onnx_path)
    if not npz_path.exists():
        raise FileNotFoundError(f"{npz_path}: no such input npz (the default is <onnx stem>.npz beside "
                                f"the model; pass --npz FILE)")
    check_input_file(npz_path, "an input .npz")
    out_path = Path(out) if out is not None else default_out(onnx_path, engine, archive)
    if archive and not out_path.name.endswith((".tgz", ".tar.gz")):
        out_path = out_path.with_name(out_path.name + ".tgz")
    # the build replaces only a build (docs/safety.md), never its own inputs
    check_outputs([(out_path, "build", "--out")],
                  [(onnx_path, "the ONNX model"), (npz_path, "the input npz")])
    _check_quantizer(engine, quantizer)
    from . import compile_cache
    t_cache = time.perf_counter()
    # before get_engine: a build that is reused imports neither onnx nor onnxruntime
    chk = compile_cache.check(onnx_path, npz_path, out_path, engine, archive, keep_fp32, naive_check, force,
                              quantizer)
    if chk.info.hit:
        reused = compile_cache.reuse(chk, out_path, onnx_path, npz_path, t_cache)
        if reused is not None:
            if log is not None:
                log(compile_cache.hit_line(chk.info))
            return reused
    eng = get_engine(engine)
    if quantizer is not None:
        eng.quantizer = quantizer
    eng.check_available()
    import onnx as onnx_mod

    lines: list[str] = []
    t_start = time.perf_counter()

    def say(msg: str) -> None:
        line = f"[{time.perf_counter() - t_start:7.2f}s] {msg}"
        lines.append(line)
        if log is not None:
            log(line)

    try:
        model = load_weightless(onnx_path) if eng.weightless else onnx_mod.load(str(onnx_path))
    except Exception as exc:  # noqa: BLE001
        from .reference_check import is_zip
        hint = ("; an npz archive: compile takes the MODEL.onnx prepare wrote (the samples go to --npz)"
                if is_zip(onnx_path) else "")
        raise UnusableInput(f"{onnx_path}: not a readable ONNX model ({type(exc).__name__}: {exc}){hint}") from None
    if not model.graph.node or not model.graph.output:
        raise UnusableInput(f"{onnx_path}: not an ONNX model (no graph: the file is empty, truncated or "
                            f"of another format); run leapp-lab prepare again")
    if eng.weightless:
        check_weights(model, onnx_path)         # the sessions read the weights from its folder
        eng.weights_dir = onnx_path.resolve().parent
    manifest = read_manifest(model, onnx_path)  # ManifestError (a ValueError) names the file
    check_feeds(model, manifest.inputs, npz_path)   # wrong name / rank / shape / dtype: exit 2
    keep = _check_keep_fp32(eng, model, keep_fp32, onnx_path)
    eng.keep_fp32 = frozenset(keep)
    say(f"compile {onnx_path} engine={engine} npz={npz_path}"
        + (f" keep_fp32={len(keep)} nodes" if keep else ""))
    if chk.info.reason and chk.info.reason != "no previous run recorded":
        say(f"building again: {chk.info.reason}")
    say(f"manifest: {plural(len(manifest.outputs), 'output')}, {plural(len(manifest.taps), 'tap')}")
    feeds, extra = load_inputs(npz_path, manifest.inputs)
    if extra:
        say(f"note: {npz_path.name} also holds {extra}, which are not model inputs (ignored)")
    if not feeds:
        raise CompileError(f"{npz_path}: holds zero samples")
    if eng.precision == "int8":     # the samples are its calibration: a range must exist (feeds.py)
        for note in check_calibration(feeds, npz_path, eng.name):
            say(note)
    say(f"inputs: {manifest.inputs}, {len(feeds)} samples")

    tmp = out_path.with_name(f".{out_path.name}.tmp-{uuid.uuid4().hex[:8]}")
    work = tmp if not archive else tmp.with_name(tmp.name + ".d")
    with writing(out_path, rename=True):
        made = make_folders(work)       # removed again on failure, --out's new parents included
    try:
        report = _build(eng, model, manifest, feeds, work, onnx_path, npz_path, say, progress, naive_check)
        report.keep_fp32 = keep
        report.archive = archive
        report.cache = chk.info
        report.timings_s["total"] = round(time.perf_counter() - t_start, 4)
        say(f"done in {report.timings_s['total']:.2f}s")
        atomic_write_text(work / COMPILE_LOG, "\n".join(lines) + "\n")
        # what the build holds, with sizes: the bound a .tgz build's extraction is held to
        report.files = {p.name: p.stat().st_size for p in sorted(work.iterdir()) if p.name != BUILD_FILE}
        report.save(work)
        compile_cache.record(chk, work)
        if archive:
            with writing(out_path, rename=True), tarfile.open(tmp, "w:gz") as tf:
                for p in sorted(work.iterdir()):
                    tf.add(p, arcname=p.name)
            shutil.rmtree(work)
        _replace(tmp, out_path)
    except BaseException as exc:
        # an engine that could not write its files says only "serialization failed", and onnx's
        # own save an EFBIG / ENOSPC that names no file: a full or read-only location is the
        # user's to fix (exit 2, naming the build), not a failed build
        room = (room_problem(work if work.is_dir() else out_path.parent, onnx_path.stat().st_size)
                if isinstance(exc, CompileError) else None)
        full = no_room_error(exc, out_path)
        shutil.rmtree(work, ignore_errors=True)
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink()
        remove_made(made)
        if full is not None:
            raise full from exc
        if room is not None:
            raise OSError(room.errno, room.strerror, str(out_path)) from exc
        raise
    report.path = out_path
    return report


def check_prepared(onnx_path: Path) -> None:
    """A build's engine.onnx is an engine, not a model prepare wrote: compile (or repair) of it said
    "engine.npz: no such input npz". UnusableInput naming the build and the ONNX it was made from."""
    from leapp_lab.model.build import BUILD_FILE
    from leapp_lab.model.jsonio import read_json

    build_json = Path(onnx_path).parent / BUILD_FILE
    if not build_json.is_file():
        return
    try:
        src = read_json(build_json).get("onnx")
    except (UnusableInput, AttributeError):
        src = None
    made_from = f" it was made from ({src})" if isinstance(src, str) and src else ""
    raise UnusableInput(f"{onnx_path}: a file of the build {Path(onnx_path).parent} (it holds "
                        f"{BUILD_FILE}), not a model prepare wrote; pass the prepared ONNX{made_from}")


def unfused_warning(taps) -> str:
    """The taps on tensors onnxruntime fuses away, and what to do: a manual tap moves to a module
    boundary; an op or plugin tap is one prepare's flag added, so prepare again without it."""
    unf = [t for t in taps if t.via == "unfused"]
    flags = sorted({f"--debug-{t.kind}-taps" for t in unf if t.kind in ("op", "plugin")})
    fix = " and ".join(([f"prepare again without {' and '.join(flags)}"] if flags else [])
                       + ([f"move {'the manual ones' if flags else 'them'} to a module boundary"]
                          if any(t.kind == "manual" for t in unf) else []))
    return (f"{plural(len(unf), 'tap')} {'sits' if len(unf) == 1 else 'sit'} on tensors onnxruntime fuses away "
            f"({', '.join(t.name for t in unf)}); exposing them changed the engine's kernels (see the observer "
            f"effect); {fix} to debug the exact untapped engine")


def _replace(tmp: Path, final: Path) -> None:
    """Put ``tmp`` where ``final`` is; the old build is removed only once the new one is in place."""
    from leapp_lab.signals import commit_guard
    with commit_guard():    # a Ctrl-C between the two renames would leave no build at --out
        if final.exists() or final.is_symlink():
            old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
            os.replace(final, old)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink()
        else:
            os.replace(tmp, final)


def _build(eng, model, manifest, feeds, work: Path, onnx_path: Path, npz_path: Path, say, progress,
           naive_check: bool) -> BuildReport:
    import onnx as onnx_mod
    import onnxruntime

    untapped = strip_taps(model, manifest)
    # the prepared model as is (taps already outputs) is the naive way; engines only read it
    naive = model if naive_check and manifest.taps else None
    t0 = time.perf_counter()
    built = eng.build(untapped, manifest.taps, feeds, work, say, progress, naive=naive)
    t_build = time.perf_counter() - t0
    for k, v in built.custom_ops.items():
        say(f"custom op {k} (first node {v!r}) runs through onnxruntime-extensions' registered kernels")

    by_name = {t.name: t for t in built.taps}
    taps = []
    errors = []
    for t in manifest.taps:
        t = by_name.get(t.name) or t.bind("unbound", reason="not bound")
        if t.binding == "bound" and (t.reference_source is None or t.uncompared_reason):
            t = t.bind("uncompared", t.bound_to, t.via,
                       t.uncompared_reason or "the manifest gives it no reference (reference_source null)")
        if t.binding == "unbound" and (t.kind == "manual" or (t.kind == "plugin" and t.reference_source)):
            errors.append(f"tap {t.name!r} ({t.kind}, {t.source or 'source unknown'}): {t.binding_reason}")
        taps.append(t)
        say(f"tap {t.name}: {t.binding}" + (f" via {t.via} ({t.bound_to})" if t.bound_to else "")
            + (f" - {t.binding_reason}" if t.binding_reason else ""))
    manifest.taps = taps
    if errors:
        raise CompileError(f"engine {eng.name} lost the binding of {len(errors)} tap(s) that must be "
                           "compared: " + "; ".join(errors))

    model_outputs = [o.name for o in manifest.outputs]
    t0 = time.perf_counter()
    # each sample's values go to disk as they come (model/npzstream.py): the taps of N samples
    # are never all in memory; the model outputs are kept for the observer check
    writer = SampleNpzWriter(len(feeds), work)
    outputs: dict[str, list[np.ndarray]] = {k: [] for k in model_outputs}
    try:
        with eng.runner(built.artifact) as r:
            out_names = list(r.output_names)
            in_names = list(r.input_names)
            for i, feed in enumerate(feeds):
                vals = r.run(feed)  # one engine call per sample yields every output and tap
                try:
                    writer.add(i, vals)
                except ValueError as exc:
                    raise CompileError(str(exc)) from None
                for k in model_outputs:
                    if k in vals:
                        outputs[k].append(np.asarray(vals[k]))
                del vals
                if progress:
                    progress("run", i + 1, len(feeds))
        t_run = time.perf_counter() - t0
        say(f"ran {len(feeds)} samples in {t_run:.2f}s")
        keep = set(model_outputs) | {t.name for t in taps}
        for t in taps:
            # alias: the tap shows a model output's own value; an engine that names its outputs after
            # the tensors (TensorRT) returns bound_to instead of the tap name
            if t.binding != "unbound" and t.name not in writer.names and t.bound_to in writer.names:
                writer.alias(t.name, t.bound_to)
                out_names.append(t.name)
                if t.bound_to not in keep:
                    writer.drop(t.bound_to)
                    out_names.remove(t.bound_to)
        writer.close(work / SAMPLE_OUTPUTS)
    finally:
        writer.discard()
    stacked = {k: np.stack(v) for k, v in outputs.items() if v}
    observer = _observer(eng, built, feeds, model_outputs, stacked, say)
    versions = {"onnxruntime": onnxruntime.__version__, "onnx": onnx_mod.__version__}
    warnings = []
    unb = [t.name for t in taps if t.binding == "unbound"]
    if unb:
        warnings.append(f"{len(unb)} tap{' is' if len(unb) == 1 else 's are'} unbound (the engine fused "
                        f"their tensors away): {', '.join(unb)}")
    if any(t.via == "unfused" for t in taps):
        warnings.append(unfused_warning(taps))
    if observer.checked and not observer.outputs_agree:
        warnings.append("the model outputs with and without taps differ: the taps change this engine")
    return BuildReport(
        engine=eng.name, onnx=str(onnx_path), npz=str(npz_path), artifact=built.artifact.name,
        untapped_artifact=built.untapped_artifact.name if built.untapped_artifact.exists() else None,
        inputs=in_names, outputs=out_names, model_outputs=model_outputs, samples=len(feeds),
        manifest=manifest, observer=observer,
        timings_s={"build": round(t_build, 4), "run": round(t_run, 4)}, versions=versions,
        custom_ops=built.custom_ops, warnings=warnings,
        engine_onnx=built.engine_onnx.name if built.engine_onnx is not None else None,
        quantizer=eng.quantizer if eng.precision == "int8" else None,
        created=_dt.datetime.now().isoformat(timespec="seconds"))


def _kdiff(a: dict[str, int], b: dict[str, int]) -> list[KernelDiff]:
    return [KernelDiff(op, a.get(op, 0), b.get(op, 0)) for op in sorted(set(a) | set(b))
            if a.get(op, 0) != b.get(op, 0)]


def _observer(eng, built, feeds, model_outputs, tapped_vals, say) -> ObserverEffect:
    ob = ObserverEffect(kernels_untapped=built.kernels_untapped, kernels_tapped=built.kernels_tapped,
                        kernels_differ=_kdiff(built.kernels_untapped, built.kernels_tapped),
                        debug_tensors=list(built.debug))
    if built.naive_kernels is not None:
        ob.naive = ObserverEffect(checked=False, kernels_untapped=built.kernels_untapped,
                                  kernels_tapped=built.naive_kernels,
                                  kernels_differ=_kdiff(built.kernels_untapped, built.naive_kernels),
                                  note="taps exposed before conversion (not built, kernels only)")
    if not built.untapped_artifact.exists():
        ob.note = "untapped engine not built"
        return ob
    agree = True
    with eng.runner(built.untapped_artifact) as r:
        for i, feed in enumerate(feeds):
            vals = r.run(feed, model_outputs)
            for k in model_outputs:
                a, b = np.asarray(vals[k]), tapped_vals[k][i]
                same = a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
                agree &= bool(same)
                d = (float(np.max(np.abs(a.astype(np.float64) - b))) if a.shape == b.shape and a.size
                     else (0.0 if a.shape == b.shape else None))
                prev = ob.max_abs_diff.get(k)
                ob.max_abs_diff[k] = d if prev is None or d is None else max(prev, d)
    ob.checked = True
    ob.outputs_agree = agree
    ob.note = ("taps do not change this engine: same kernels, bitwise identical outputs"
               if agree and not ob.kernels_differ else
               "the taps change this engine: see kernels_differ / max_abs_diff")
    say(f"observer effect: outputs {'agree' if agree else 'DIFFER'} with/without taps; kernels "
        + ("identical" if not ob.kernels_differ else
           "differ: " + ", ".join(map(str, ob.kernels_differ))))
    if ob.naive is not None and ob.naive.kernels_differ:
        say("naive tapping (taps as outputs before conversion) would have changed kernels: "
            + ", ".join(map(str, ob.naive.kernels_differ)))
    return ob

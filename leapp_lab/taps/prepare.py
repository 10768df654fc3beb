"""``leapp_lab.prepare``: export a model to ONNX with debug taps, plus its inputs and references.

Flow (each step's failure names the thing at fault):

1. load MODEL.py, build the model (seeded), take the samples;
2. eager torch runs, one per sample, in ``CaptureMode``: outputs, tap values, tap sites, timings;
3. check the requested manual taps against the sites (typo -> close names; reached by no sample
   -> branch not taken) before paying for an export;
4. export with the dynamo exporter in ``ExportMode`` (exposed taps become ``leapp_lab::Tap``
   marker nodes), falling back to the TorchScript exporter with a logged reason;
5. remove the markers and collect the taps: manual ones from the markers (a missing marker means
   optimised away or branch not taken), plugin boundaries (custom-domain nodes), op values;
6. references: manual taps and outputs from the eager runs; plugin / op taps from the exported
   program's FX graph run eagerly (torch) where an FX node has the value's name, else from an
   onnxruntime fp32 run of the untapped graph with graph optimisations off;
7. expose the taps as graph outputs, stamp the manifest, write the three files atomically.

With no tap exposed, step 4 runs without any mode and step 7 writes the exporter's model as is:
the file is byte-identical to the export of the same source with ``tap`` bound to an identity.
"""
from __future__ import annotations

import ast
import contextlib
import datetime as _dt
import difflib
import io
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import onnx
import torch
from torch import nn

from ..model.jsonio import atomic_write_bytes, save_npz
from ..model.prepare import PrepareReport, PrepareRow, TensorInfo
from . import graph_edit as ge
from .errors import PrepareError, TapError
from .loader import ModelSource, model_source
from .manifest import (Manifest, OutputEntry, TapEntry, add_output, numpy_dtype_name,
                       producer_index, write_manifest)
from .marker import TAP_DOMAIN, CaptureMode, ExportMode, Site, short_path, tap_modules

log = logging.getLogger("leapp_lab.taps")

DEFAULT_DOMAINS = ("", "ai.onnx")
FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
               onnx.TensorProto.BFLOAT16}
ProgressFn = Callable[[str, float | None], None]


def _stderr_progress(stage: str, fraction: float | None) -> None:
    pct = "" if fraction is None else f" {100 * fraction:3.0f}%"
    print(f"[leapp-lab prepare]{pct} {stage}", file=sys.stderr, flush=True)


def _progress_fn(progress: Any) -> ProgressFn:
    if progress is None or progress is False:
        return lambda stage, fraction=None: log.debug("%s", stage)
    if progress is True or progress == "stderr":
        return _stderr_progress
    if callable(progress):
        return progress
    raise TypeError(f"progress must be a callable, 'stderr', True or False/None; got {progress!r}")


@dataclass
class _Eager:
    outputs: list[list[np.ndarray]]          # [sample][output]
    output_names: list[str]
    taps: list[dict[str, torch.Tensor]]      # [sample] name -> value
    sites: dict[str, Site]                   # every tap reached by any sample
    reached: list[set[str]]                  # [sample] names reached
    timings_ms: list[float]


# --------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------

def prepare(model: Any, onnx_out: str | os.PathLike, npz_out: str | os.PathLike,
            reference_out: str | os.PathLike, debug_taps: Iterable[str] | str = (),
            plugin_taps: bool = False, op_taps: bool = False, *, progress: Any = None,
            session_options: Any = None, save_report: bool = True,
            exporter: str = "dynamo") -> PrepareReport:
    """Export ``model`` (a MODEL.py path, module, namespace or dict) with debug taps.

    ``debug_taps``: tap names to expose, or ``"all"`` (``all`` anywhere in the list wins).
    ``plugin_taps``: tap every input and output of every custom-domain node.
    ``op_taps``: tap every intermediate float value of the graph.
    ``progress``: a callable ``(stage, fraction_or_None)``, ``"stderr"``/True, or None (quiet).
    ``session_options``: an ``onnxruntime.SessionOptions`` (custom-op libraries registered) for the
    onnxruntime reference run; default: MODEL.py's ``get_ort_session_options()`` if it has one.
    ``exporter``: ``"dynamo"`` (falls back to TorchScript when it fails) or ``"torchscript"``.
    Returns a PrepareReport, also saved to ``<onnx dir>/<onnx stem>.prepare/`` unless
    ``save_report`` is false. Raises PrepareError / TapError naming what to fix.
    """
    say = _progress_fn(progress)
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    if isinstance(debug_taps, str):
        debug_taps = [debug_taps]
    requested = [str(t) for t in debug_taps]
    expose_all = "all" in requested
    wanted = [] if expose_all else list(dict.fromkeys(requested))
    if exporter not in ("dynamo", "torchscript"):
        raise PrepareError(f"exporter must be 'dynamo' or 'torchscript', not {exporter!r}")

    paths = [Path(onnx_out).resolve(), Path(npz_out).resolve(), Path(reference_out).resolve()]
    if len(set(paths)) != 3:
        raise PrepareError(f"--onnx-out, --npz-out and --reference-out must be three different files; "
                           f"got {onnx_out}, {npz_out}, {reference_out}")
    say("loading the model", 0.0)
    src = model_source(model)
    net = src.make_model()
    tap_modules(net)  # duplicate Tap("x") modules: both construction sites
    samples = src.get_samples()
    timings["load"] = time.perf_counter() - t_start

    say(f"running torch eager on {len(samples)} sample(s)", 0.05)
    t = time.perf_counter()
    eager = _eager_runs(net, samples, None if expose_all else frozenset(wanted), src)
    timings["eager"] = time.perf_counter() - t

    if wanted:
        _check_requested_reached(wanted, eager, src, net)
    _check_dtypes(eager)
    expose: frozenset[str] | None
    if expose_all:
        expose = None if eager.sites else frozenset()
    else:
        expose = frozenset(wanted)

    say("exporting to ONNX (torch.export + dynamo exporter)", 0.15)
    t = time.perf_counter()
    proto, program, used_exporter, fallback_reason, export_hits = _export(
        net, samples[0], eager.output_names, expose, exporter, src, say)
    timings["export"] = time.perf_counter() - t
    say(f"exported with the {used_exporter} exporter", 0.6)

    warnings: list[str] = []
    if fallback_reason:
        warnings.append(f"the dynamo exporter failed, used the TorchScript exporter: {fallback_reason}")

    builder = _TapBuilder(proto, src, eager, program, samples)
    markers = ge.remove_tap_markers(proto)

    exposed_manual = _manual_taps(markers, wanted, expose_all, export_hits, eager, used_exporter)
    if expose_all and used_exporter != "dynamo" and eager.sites:
        warnings.append(f"the TorchScript exporter cannot carry tap markers: {len(eager.sites)} "
                        f"tap(s) not exposed ({', '.join(sorted(eager.sites))})")
    if expose_all:
        warnings += _dropped_under_all(markers, export_hits)
        warnings += [f"tap {n!r} (tap() at {site}) ran eagerly but not while the first sample was "
                     f"exported (branch not taken during export); it is not exposed"
                     for n, site in eager.sites.items() if n not in export_hits and export_hits]
    builder.add_manual(exposed_manual)
    if plugin_taps:
        builder.add_plugin()
    if op_taps:
        builder.add_op()
    untapped = onnx.ModelProto()  # markers gone, clashing names renamed, no tap outputs yet
    untapped.CopyFrom(proto)

    if builder.needs_fx():
        say("computing torch references from the exported program's FX graph", 0.7)
        t = time.perf_counter()
        builder.fx_references()
        timings["fx_reference"] = time.perf_counter() - t
    if builder.needs_ort():
        say("computing onnxruntime fp32 references for values torch does not name", 0.8)
        t = time.perf_counter()
        opts = session_options
        if opts is None and src.ort_session_options is not None:
            opts = src.ort_session_options()
        builder.ort_references(untapped, opts)
        timings["ort_reference"] = time.perf_counter() - t

    say("writing files", 0.9)
    manifest = builder.finish()
    stamped = bool(manifest.taps)
    if stamped:
        write_manifest(proto, manifest)

    inputs = builder.input_arrays()
    reference = builder.reference_arrays()
    reference["benchmark_timings_ms"] = np.asarray(eager.timings_ms, dtype=np.float64)
    onnx_out, npz_out, reference_out = Path(onnx_out), Path(npz_out), Path(reference_out)
    save_npz(npz_out, inputs)
    save_npz(reference_out, reference)
    atomic_write_bytes(onnx_out, proto.SerializeToString())
    timings["total"] = time.perf_counter() - t_start

    rows = [PrepareRow(name=o.name, kind="output", order=o.order, tensor=o.name,
                       producer_op=builder.op_of(o.name), producer_node=builder.node_of(o.name),
                       reference_source="torch", source=o.source, scope=builder.scope_of(o.name),
                       dtype=str(reference[o.name].dtype), shape=list(reference[o.name].shape[1:]))
            for o in manifest.outputs]
    rows += [PrepareRow(**{k: getattr(tp, k) for k in PrepareRow.__dataclass_fields__})
             for tp in manifest.taps]
    by_name = {r.name: r for r in rows}
    rows = [by_name[e.name] for e in manifest.rows()]  # model order
    warnings += builder.warnings
    report = PrepareReport(
        model=src.label, onnx=str(onnx_out), npz=str(npz_out), reference=str(reference_out),
        exporter=used_exporter, fallback_reason=fallback_reason, samples=len(samples),
        requested_taps=requested, plugin_taps=bool(plugin_taps), op_taps=bool(op_taps),
        inputs=[TensorInfo(k, str(v.dtype), list(v.shape[1:])) for k, v in inputs.items()],
        rows=rows, manifest_stamped=stamped, warnings=warnings,
        timings_s={k: round(v, 4) for k, v in timings.items()},
        benchmark_ms=float(np.mean(eager.timings_ms)) if eager.timings_ms else None,
        created=_dt.datetime.now().isoformat(timespec="seconds"), versions=_versions())
    if save_report:
        report.save(onnx_out.parent / f"{onnx_out.stem}.prepare")
    say(f"done: {len(manifest.outputs)} output(s), {len(manifest.taps)} tap(s)", 1.0)
    return report


def _versions() -> dict[str, str]:
    import onnxruntime
    return {"torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__}


# --------------------------------------------------------------------------------------------
# eager runs
# --------------------------------------------------------------------------------------------

def _tensor_leaves(obj: Any, label: str) -> tuple[list[torch.Tensor], list[str]]:
    """Flatten forward outputs; names from a returned dict's keys, else output_0, output_1, ..."""
    from torch.utils import _pytree as pytree
    leaves, _ = pytree.tree_flatten_with_path(obj)
    tensors, names = [], []
    top_dict = isinstance(obj, dict)
    for path, leaf in leaves:
        if not isinstance(leaf, torch.Tensor):
            continue
        if top_dict:
            parts = []
            for k in path:
                key = getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))
                parts.append(str(key))
            names.append(".".join(parts))
        else:
            names.append(f"output_{len(tensors)}")
        tensors.append(leaf)
    if not tensors:
        raise PrepareError(f"{label}: the model's forward returned no tensors")
    return tensors, names


_NO_NUMPY = {torch.bfloat16} | {getattr(torch, n) for n in (
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz") if hasattr(torch, n)}


def _to_numpy(t: torch.Tensor, what: str) -> np.ndarray:
    if t.dtype in _NO_NUMPY:
        raise TapError(f"{what} has dtype {str(t.dtype).replace('torch.', '')}, which numpy cannot "
                       f"hold; cast it to float32 before tap() (x.float()) or return it as float32")
    return t.detach().to("cpu").contiguous().numpy().copy()


def _eager_runs(net: nn.Module, samples: list[tuple], expose: frozenset[str] | None,
                src: ModelSource) -> _Eager:
    outputs, taps, reached, timings = [], [], [], []
    sites: dict[str, Site] = {}
    names: list[str] | None = None
    with torch.no_grad():
        for i, s in enumerate(samples):
            with CaptureMode(expose=expose) as cm:
                try:
                    out = net(*s)
                except TapError:
                    raise
                except Exception as exc:
                    if str(exc).startswith(("tap(", "Tap(")):   # misuse of tap(): its own message
                        raise PrepareError(f"{src.label}: {type(exc).__name__}: {_first_line(exc)}") from exc
                    raise PrepareError(f"{src.label}: the model's forward raised on sample {i}"
                                       f"{_user_frame(exc, src)}: {type(exc).__name__}: {_first_line(exc)}; "
                                       f"check get_fwd_args()/get_samples() against forward()") from exc
            t0 = time.perf_counter()  # timed after the capture run, which warmed the model up
            net(*s)
            timings.append(1000.0 * (time.perf_counter() - t0))
            tensors, n = _tensor_leaves(out, src.label)
            if names is None:
                names = n
            elif n != names:
                raise PrepareError(f"{src.label}: sample {i} returns outputs {n}, sample 0 {names}; "
                                   f"every sample must return the same structure")
            arrs = []
            for name, tsr in zip(n, tensors):
                if tsr.dtype in _NO_NUMPY:
                    tsr = tsr.float()
                arrs.append(_to_numpy(tsr, f"output {name!r}"))
            outputs.append(arrs)
            taps.append(cm.values)
            reached.append(set(cm.hits))
            for k, v in cm.hits.items():
                sites.setdefault(k, v)
    return _Eager(outputs, names or [], taps, sites, reached, timings)


# --------------------------------------------------------------------------------------------
# requested manual taps
# --------------------------------------------------------------------------------------------

def declared_taps(files: Iterable[str]) -> dict[str, Site]:
    """tap names written literally in the source files: ``tap(x, "n")``, ``tap(x, name="n")``, ``Tap("n")``."""
    found: dict[str, Site] = {}
    for f in files:
        try:
            tree = ast.parse(Path(f).read_text(encoding="utf-8"), filename=f)
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            fname = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
            arg = None
            if fname == "tap":
                if len(node.args) >= 2:
                    arg = node.args[1]
                arg = next((k.value for k in node.keywords if k.arg == "name"), arg)
            elif fname == "Tap":
                if node.args:
                    arg = node.args[0]
                arg = next((k.value for k in node.keywords if k.arg == "name"), arg)
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.setdefault(arg.value, Site(f, node.lineno))
    return found


def _source_files(src: ModelSource, net: nn.Module) -> list[str]:
    import inspect
    files = []
    if src.base_dir is not None and os.path.isfile(src.label):
        files.append(str(Path(src.label).resolve()))
    torch_dir = os.path.dirname(torch.__file__)
    for m in net.modules():
        try:
            f = inspect.getsourcefile(type(m))
        except (TypeError, OSError):
            continue
        if f and not f.startswith(torch_dir) and f not in files:
            files.append(f)
    return files


def _check_requested_reached(wanted: list[str], eager: _Eager, src: ModelSource, net: nn.Module) -> None:
    missing = [w for w in wanted if w not in eager.sites]
    if not missing:
        _check_every_sample(wanted, eager)
        return
    declared = declared_taps(_source_files(src, net))
    for name in missing:
        if name in declared:
            raise TapError(
                f"debug tap {name!r}: branch not taken — the tap() at "
                f"{_short(declared[name], src)} was reached by none of the {len(eager.reached)} "
                f"sample(s) of {src.label}; feed inputs that take that branch (get_samples()), or "
                f"move the tap to a tensor every input reaches")
        known = sorted(set(eager.sites) | set(declared))
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = (f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else
                f"; the model's taps are {known}" if known else "; the model has no tap() markers")
        raise TapError(f"debug tap {name!r}: no such tap() in {src.label}{hint}")
    _check_every_sample(wanted, eager)


def _check_dtypes(eager: _Eager) -> None:
    for values in eager.taps:
        for name, v in values.items():
            if v.dtype in _NO_NUMPY:
                raise TapError(
                    f"debug tap {name!r} (tap() at {eager.sites[name]}) has dtype "
                    f"{str(v.dtype).replace('torch.', '')}, which "
                    f"numpy cannot hold, so it cannot be compared; cast it to float32 before tap() "
                    f"(tap(x.float(), {name!r})) or tap a float32 tensor")


def _check_every_sample(wanted: list[str], eager: _Eager) -> None:
    for name in wanted:
        for i, r in enumerate(eager.reached):
            if name not in r:
                raise TapError(
                    f"debug tap {name!r}: branch not taken on sample {i} (the tap() at "
                    f"{eager.sites[name]} ran on other samples only); a tap needs a value on every "
                    f"sample — split the samples, or tap a tensor every sample reaches")


def _short(site: Site | str | None, src: ModelSource) -> str | None:
    if site is None:
        return None
    if isinstance(site, str):
        f, _, line = site.rpartition(":")
        return f"{short_path(f, src.base_dir)}:{line}" if f else site
    return f"{short_path(site.file, src.base_dir)}:{site.line}"


def _manual_taps(markers: list[ge.Marker], wanted: list[str], expose_all: bool,
                 export_hits: dict[str, Site], eager: _Eager, used_exporter: str) -> list[ge.Marker]:
    by_name = {m.name: m for m in markers}
    for name in wanted:
        if name in by_name:
            continue
        if used_exporter != "dynamo":
            raise TapError(f"debug tap {name!r}: the TorchScript exporter (the dynamo exporter "
                           f"failed) cannot carry tap markers; fix the dynamo export to use taps")
        if name in export_hits:
            raise TapError(
                f"debug tap {name!r}: optimised away — the tap() at {export_hits[name]} ran during "
                f"export but its tensor did not survive into the ONNX graph (its value is unused, "
                f"so the exporter dropped it as dead code, or it was folded into a constant); use "
                f"the returned value (x = tap(x, {name!r})) or move the tap to a tensor that "
                f"survives, e.g. a module output")
        raise TapError(
            f"debug tap {name!r}: branch not taken during export — the tap() at "
            f"{eager.sites.get(name)} ran eagerly but not while torch.export traced the first "
            f"sample (get_fwd_args()); make the first sample take that branch")
    if expose_all:
        # "all": every marker that survived; the caller warns about the ones the export dropped
        return markers
    return [by_name[n] for n in wanted]


def _dropped_under_all(markers: list[ge.Marker], export_hits: dict[str, Site]) -> list[str]:
    kept = {m.name for m in markers}
    return [f"tap {n!r} (tap() at {site}) was optimised away by the exporter (its value is unused "
            f"or constant) and is not exposed; use the value tap() returns"
            for n, site in export_hits.items() if n not in kept]


# --------------------------------------------------------------------------------------------
# export
# --------------------------------------------------------------------------------------------

def _user_frame(exc: BaseException, src: ModelSource) -> str:
    """' at FILE:LINE' of the deepest traceback frame in the user's code (under the model's folder)."""
    import traceback
    base = src.base_dir.resolve() if src.base_dir is not None else None
    for f in reversed(traceback.extract_tb(exc.__traceback__)):
        fp = Path(f.filename).resolve()
        if base is not None and base in fp.parents and "site-packages" not in fp.parts:
            return f" at {fp.relative_to(base)}:{f.lineno}"
    return ""


def _export(net: nn.Module, args: tuple, output_names: list[str], expose: frozenset[str] | None,
            exporter: str, src: ModelSource, say: ProgressFn | None = None):
    hits: dict[str, Site] = {}
    if args and isinstance(args[-1], dict):
        # torch.onnx.export reads a trailing dict in args as keyword arguments; the documented way
        # to pass a dict as the last positional argument is to append an empty dict.
        args = (*args, {})
    reason = None
    if exporter == "dynamo":
        mode = ExportMode(expose=expose) if (expose is None or expose) else None
        try:
            with (mode if mode is not None else contextlib.nullcontext()):
                with _quiet(say):
                    table = src.translation_table() if src.translation_table else None
                    program = torch.onnx.export(net, args, dynamo=True, verbose=None,
                                                output_names=output_names, optimize=True,
                                                custom_translation_table=table)
            if mode is not None:
                hits = dict(mode.hits)
            return program.model_proto, program.exported_program, "dynamo", None, hits
        except TapError:
            raise
        except Exception as exc:  # the exporter raises many types; keep the root cause as reason
            root = _root_cause(exc)
            reason = f"{type(root).__name__}: {_first_line(root)}"
            log.warning("dynamo export of %s failed (%s); falling back to the TorchScript exporter",
                        src.label, reason)
    buf = io.BytesIO()
    try:
        with _quiet():
            torch.onnx.export(net, args, buf, dynamo=False, output_names=output_names,
                              input_names=_input_names(net, args))
    except Exception as exc:
        msg = f"{src.label}: ONNX export failed: {type(exc).__name__}: {_first_line(exc)}"
        if reason:
            msg += f" (the dynamo exporter failed first: {reason})"
        raise PrepareError(msg) from exc
    return onnx.load_from_string(buf.getvalue()), None, "torchscript", reason, hits


_ANSI = __import__("re").compile(r"\x1b\[[0-9;]*m")


def _first_line(exc: BaseException) -> str:
    text = _ANSI.sub("", str(exc)).strip().splitlines()
    return text[0][:300] if text else ""


def _root_cause(exc: BaseException) -> BaseException:
    seen = {id(exc)}
    while True:
        nxt = exc.__cause__ or exc.__context__
        if nxt is None or id(nxt) in seen:
            return exc
        seen.add(id(nxt))
        exc = nxt


def _input_names(net: nn.Module, args: tuple) -> list[str] | None:
    """Forward parameter names for the TorchScript exporter (dynamo uses them by itself)."""
    import inspect
    try:
        params = list(inspect.signature(net.forward).parameters)
    except (TypeError, ValueError):
        return None
    if len(params) < len(args) or not all(isinstance(a, torch.Tensor) for a in args):
        return None
    return params[:len(args)]


_EXPORT_STEPS = {"Obtain model graph": 0.2, "Run decompositions": 0.35,
                 "Translate the graph": 0.45, "Optimize the ONNX graph": 0.55}


class _ExporterLines(io.TextIOBase):
    """stdout while exporting: the dynamo exporter's step lines become progress, the rest a log."""

    def __init__(self, say: ProgressFn | None):
        self.say, self.buf, self.lines = say, "", []

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.buf += text
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            self._line(line)
        return len(text)

    def _line(self, line: str) -> None:
        self.lines.append(line)
        clean = _ANSI.sub("", line).strip()
        if self.say and clean.startswith("[torch.onnx]") and not clean.endswith("✅"):
            step = clean[len("[torch.onnx]"):].strip().rstrip(".")
            frac = next((f for k, f in _EXPORT_STEPS.items() if step.startswith(k)), None)
            self.say(f"export: {step[:100]}", frac)


@contextlib.contextmanager
def _quiet(say: ProgressFn | None = None):
    """The exporter prints its steps and warnings to stdout: turn steps into progress, log the rest."""
    import warnings as _warnings

    sink = _ExporterLines(say)
    # the exporter's own chatter (missing torchvision ops, pytree deprecations) is not the user's
    reg = logging.getLogger("torch.onnx._internal.exporter._registration")
    level = reg.level
    reg.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(sink), _warnings.catch_warnings():
            _warnings.simplefilter("ignore", FutureWarning)
            _warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        reg.setLevel(level)
    if sink.buf:
        sink._line(sink.buf)
    if sink.lines:
        log.debug("exporter output:\n%s", "\n".join(sink.lines))


# --------------------------------------------------------------------------------------------
# taps and their references
# --------------------------------------------------------------------------------------------

class _TapBuilder:
    def __init__(self, proto: onnx.ModelProto, src: ModelSource, eager: _Eager, program: Any,
                 samples: list[tuple]):
        self.proto, self.src, self.eager, self.program, self.samples = proto, src, eager, program, samples
        self.taps: list[TapEntry] = []
        self.refs: dict[str, list[np.ndarray]] = {}   # tap name -> per-sample arrays
        self.warnings: list[str] = []
        self._input_names: list[str] | None = None

    # graph lookups (on the marker-free graph) ---------------------------------------------
    def _index(self) -> None:
        g = self.proto.graph
        self.prod = producer_index(g)
        self.inits = {i.name for i in g.initializer}
        self.graph_inputs = [i.name for i in g.input if i.name not in self.inits]
        self.types = ge.value_types(self.proto)

    def op_of(self, value: str) -> str | None:
        i = self.prod.get(value)
        return self.proto.graph.node[i].op_type if i is not None else None

    def node_of(self, value: str) -> str | None:
        i = self.prod.get(value)
        return self.proto.graph.node[i].name if i is not None else None

    def source_of(self, value: str) -> str | None:
        i = self.prod.get(value)
        if i is None:
            return None
        meta = ge.node_meta(self.proto.graph.node[i])
        return self._pick_frame(meta.get("pkg.torch.onnx.stack_trace"))

    def scope_of(self, value: str) -> str | None:
        """The module path of the producing node, from the exporter's name-scope metadata."""
        i = self.prod.get(value)
        if i is None:
            return None
        raw = ge.node_meta(self.proto.graph.node[i]).get("pkg.torch.onnx.name_scopes")
        try:
            scopes = ast.literal_eval(raw) if raw else []
        except (ValueError, SyntaxError):
            return None
        scopes = [x for x in scopes[:-1] if isinstance(x, str) and x]
        return scopes[-1] if scopes else None

    def _pick_frame(self, stack: str | None) -> str | None:
        torch_dir = os.path.dirname(torch.__file__)
        here = os.path.dirname(os.path.abspath(__file__))
        user = [(f, n) for f, n in ge.frames(stack)
                if not f.startswith(torch_dir) and not f.startswith(here)]
        if not user:
            return None
        f, n = user[-1]
        return f"{short_path(f, self.src.base_dir)}:{n}"

    def _entry(self, name: str, kind: str, tensor: str, source: str | None) -> TapEntry:
        et, shape = self.types.get(tensor, (0, None))
        i = self.prod.get(tensor, -1)
        node = self.proto.graph.node[i] if i >= 0 else None
        return TapEntry(name=name, kind=kind, order=i, tensor=tensor,
                        producer_op=node.op_type if node is not None else (
                            "input" if tensor in self.graph_inputs else "initializer"
                            if tensor in self.inits else None),
                        producer_node=node.name if node is not None else None,
                        source=source, producer_source=self.source_of(tensor),
                        scope=self.scope_of(tensor),
                        dtype=numpy_dtype_name(et), shape=shape)

    def _taken(self) -> tuple[set[str], set[str]]:
        return {t.name for t in self.taps}, {t.tensor for t in self.taps}

    # manual --------------------------------------------------------------------------------
    def add_manual(self, markers: list[ge.Marker]) -> None:
        self._index()
        g = self.proto.graph
        outputs = {o.name for o in g.output}
        for m in markers:
            existing = ge.value_names(g)
            if m.name in existing and m.name != m.tensor:
                if m.name in outputs or m.name in self.graph_inputs or m.name in self.inits:
                    raise TapError(f"debug tap {m.name!r} (at {m.site}): the name is already an "
                                   f"ONNX graph input, output or weight; rename the tap")
                new = _fresh(f"{m.name}__value", existing)
                ge.rename_value(g, m.name, new)
                for other in markers:
                    if other.tensor == m.name:
                        other.tensor = new
                self._index()
        self._index()
        for m in markers:
            values = [s.get(m.name) for s in self.eager.taps]
            site = self.eager.sites.get(m.name)
            if site is None:  # "all": a tap the export reached but the eager runs did not
                raise TapError(f"debug tap {m.name!r}: reached while exporting but by no eager sample")
            if any(v is None for v in values):
                i = next(i for i, v in enumerate(values) if v is None)
                raise TapError(f"debug tap {m.name!r}: branch not taken on sample {i} (tap() at {site})")
            arrs = [_to_numpy(v, f"debug tap {m.name!r} (tap() at {site})") for v in values]
            e = self._entry(m.name, "manual", m.tensor, _short(site, self.src))
            e.reference_source = "torch"
            if e.dtype is None:
                e.dtype = str(arrs[0].dtype)
            if e.shape is None:
                e.shape = list(arrs[0].shape)
            self.taps.append(e)
            self.refs[m.name] = arrs

    # plugin --------------------------------------------------------------------------------
    def add_plugin(self) -> None:
        g = self.proto.graph
        names, tensors = self._taken()
        existing = ge.value_names(g)
        for node in g.node:
            if node.domain in DEFAULT_DOMAINS:
                continue
            meta = ge.node_meta(node)
            src = self._pick_frame(meta.get("pkg.torch.onnx.stack_trace"))
            ports = [(f"in{i}", v) for i, v in enumerate(node.input)] + \
                    [(f"out{i}", v) for i, v in enumerate(node.output)]
            for role, value in ports:
                if not value:
                    continue
                name = _fresh(f"{node.name or node.op_type}__{role}", existing | names)
                e = self._entry(name, "plugin", value, src)
                e.producer_source = self.source_of(value)
                self.taps.append(e)
                names.add(name)

    # op --------------------------------------------------------------------------------------
    def add_op(self) -> None:
        g = self.proto.graph
        names, tensors = self._taken()
        outputs = {o.name for o in g.output}
        for node in g.node:
            if node.op_type == "Constant":
                continue
            for value in node.output:
                if not value or value in outputs or value in tensors or value in names:
                    continue
                et, _ = self.types.get(value, (0, None))
                if et not in FLOAT_TYPES:
                    continue
                e = self._entry(value, "op", value, self.source_of(value))
                if et == onnx.TensorProto.BFLOAT16:
                    e.uncompared_reason = "bfloat16, which numpy cannot hold"
                self.taps.append(e)
                names.add(value)
                tensors.add(value)

    # references ------------------------------------------------------------------------------
    def _pending(self) -> list[TapEntry]:
        return [t for t in self.taps if t.name not in self.refs and t.uncompared_reason is None]

    def needs_fx(self) -> bool:
        return any(True for _ in self._pending())

    def needs_ort(self) -> bool:
        return any(True for _ in self._pending())

    def input_arrays(self) -> dict[str, np.ndarray]:
        names = self.graph_inputs
        per_sample = [_flat_tensor_args(s) for s in self.samples]
        if per_sample and len(per_sample[0]) != len(names):
            raise PrepareError(
                f"{self.src.label}: the ONNX graph has inputs {names} but the forward arguments hold "
                f"{len(per_sample[0])} tensor(s); non-tensor arguments are baked into the graph")
        out = {}
        for j, n in enumerate(names):
            arrs = [_to_numpy(p[j], f"input {n!r}") for p in per_sample]
            _check_same_shape(arrs, f"input {n!r}", self.src.label)
            out[n] = np.stack(arrs)
        return out

    def fx_references(self) -> None:
        """Torch values of the exported program's FX nodes whose names the ONNX values carry."""
        if self.program is None:
            return
        pending = {t.tensor for t in self._pending()}
        from torch.export.graph_signature import InputKind
        ep = self.program
        sig = ep.graph_signature
        consts = getattr(ep, "constants", {})
        values: list[dict[str, torch.Tensor]] = []

        marker_op = getattr(getattr(torch.ops, "onnx_symbolic", None), "_symbolic", None)
        marker_op = getattr(marker_op, "default", None)

        class _Recorder(torch.fx.Interpreter):
            def call_function(inner, target, args, kwargs):  # noqa: N805
                # a tap marker is an identity in torch (its eager kernel returns a dummy tensor)
                if target is marker_op and kwargs.get("domain") == TAP_DOMAIN:
                    return args[0][0]
                return super().call_function(target, args, kwargs)

            def run_node(inner, n):  # noqa: N805
                r = super().run_node(n)
                if n.name in pending and isinstance(r, torch.Tensor):
                    inner.seen[n.name] = r.detach().clone()
                return r

        with torch.no_grad():
            for s in self.samples:
                user = iter(_flat_tensor_args(s))
                args = []
                for spec in sig.input_specs:
                    if spec.kind == InputKind.USER_INPUT:
                        args.append(next(user, None))
                    elif spec.target in ep.state_dict:
                        args.append(ep.state_dict[spec.target])
                    else:
                        args.append(consts[spec.target])
                rec = _Recorder(ep.graph_module)
                rec.seen = {}
                rec.run(*args)
                values.append(rec.seen)
        # graph inputs are torch values too
        inputs = self.input_arrays()
        for t in self._pending():
            if t.tensor in inputs:
                self.refs[t.name] = list(inputs[t.tensor])
                t.reference_source = "torch"
                continue
            if all(t.tensor in v for v in values):
                arrs = [v[t.tensor] for v in values]
                if arrs[0].dtype in _NO_NUMPY:
                    t.uncompared_reason = f"{arrs[0].dtype}, which numpy cannot hold"
                    continue
                np_arrs = [_to_numpy(a, t.name) for a in arrs]
                if t.shape is not None and list(np_arrs[0].shape) != list(t.shape):
                    continue  # same name, different value: leave it to onnxruntime
                self.refs[t.name] = np_arrs
                t.reference_source = "torch"
                if t.shape is None:
                    t.shape = list(np_arrs[0].shape)
                if t.dtype is None:
                    t.dtype = str(np_arrs[0].dtype)

    def ort_references(self, untapped: onnx.ModelProto, session_options: Any) -> None:
        """Recompute the remaining values with onnxruntime fp32 on the untapped graph."""
        import onnxruntime as ort
        pending = self._pending()
        if not pending:
            return
        m = onnx.ModelProto()
        m.CopyFrom(untapped)
        have = {o.name for o in m.graph.output}
        for t in pending:
            if t.tensor not in have:
                add_output(m.graph, t.tensor, t.tensor, t.dtype, t.shape)
                have.add(t.tensor)
        opts = session_options if session_options is not None else ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        try:
            sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:
            custom = sorted({f"{n.domain}::{n.op_type}" for n in m.graph.node
                             if n.domain not in DEFAULT_DOMAINS})
            why = (f"no torch value has this name, and onnxruntime cannot run the graph "
                   f"({_first_line(exc)[:200]})")
            if custom:
                why += (f"; custom ops {custom} need a kernel: define get_ort_session_options() in "
                        f"the model file or pass session_options=")
            for t in pending:
                t.uncompared_reason = why
            self.warnings.append(f"{len(pending)} tap(s) left uncompared: {why}")
            return
        inputs = self.input_arrays()
        wanted = sorted({t.tensor for t in pending})
        results: list[dict[str, np.ndarray]] = []
        for i in range(len(self.samples)):
            feed = {k: v[i] for k, v in inputs.items()}
            outs = sess.run(wanted, feed)
            results.append(dict(zip(wanted, outs)))
        for t in pending:
            self.refs[t.name] = [r[t.tensor] for r in results]
            t.reference_source = "onnxruntime"
            if t.shape is None:
                t.shape = list(results[0][t.tensor].shape)
            if t.dtype is None:
                t.dtype = str(results[0][t.tensor].dtype)

    # final ----------------------------------------------------------------------------------
    def finish(self) -> Manifest:
        g = self.proto.graph
        self._index()
        for t in self._pending():
            t.uncompared_reason = "no torch value has this name and no onnxruntime reference was computed"
        for t in self.taps:
            if t.reference_source is None and t.uncompared_reason is None:
                t.uncompared_reason = "no reference"
        for t in self.taps:
            add_output(g, t.name, t.tensor, t.dtype, t.shape)
        self.taps.sort(key=lambda t: t.order)
        outs = [OutputEntry(o.name, self.prod.get(o.name, -1), self.source_of(o.name))
                for o in g.output if o.name in self.eager.output_names]
        return Manifest(inputs=list(self.graph_inputs), outputs=outs, taps=list(self.taps))

    def reference_arrays(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        onnx_outputs = [o.name for o in self.proto.graph.output]
        for j, name in enumerate(self.eager.output_names):
            if name not in onnx_outputs:
                raise PrepareError(f"{self.src.label}: output {name!r} is not an output of the "
                                   f"exported graph {onnx_outputs}")
            arrs = [s[j] for s in self.eager.outputs]
            _check_same_shape(arrs, f"output {name!r}", self.src.label)
            out[name] = np.stack(arrs)
        for t in self.taps:
            if t.name in self.refs and t.reference_source is not None:
                arrs = self.refs[t.name]
                _check_same_shape(arrs, f"tap {t.name!r}", self.src.label)
                out[t.name] = np.stack(arrs)
        return out


def _flat_tensor_args(sample: Sequence[Any]) -> list[torch.Tensor]:
    from torch.utils import _pytree as pytree
    return [x for x in pytree.tree_leaves(tuple(sample)) if isinstance(x, torch.Tensor)]


def _check_same_shape(arrs: list[np.ndarray], what: str, label: str) -> None:
    for i, a in enumerate(arrs[1:], 1):
        if a.shape != arrs[0].shape or a.dtype != arrs[0].dtype:
            raise PrepareError(f"{label}: {what} is {a.dtype}{list(a.shape)} on sample {i} but "
                               f"{arrs[0].dtype}{list(arrs[0].shape)} on sample 0; the exported graph "
                               f"has static shapes, so every sample must match")


def _fresh(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    i = 1
    while f"{base}_{i}" in taken:
        i += 1
    return f"{base}_{i}"

"""onnxruntime CPU engines: ``ort`` (fp32), ``ort-fp16`` (fp16 emulated), ``ort-int8`` (static QDQ).

How an engine is built (and why: the observer effect). Taps added as outputs *before* conversion
change the engine: measured here, 4 tap outputs on an int8 QDQ model turned 5 of 6 QLinearConv into
fp32 Conv, because onnxruntime's QDQ fusion refuses tensors with a second consumer. So:

1. convert the **untapped** model (manifest tap outputs stripped): fp32 as is, fp16 by rounding
   weights and round-tripping activations through float16, int8 by ``quantize_static`` (QDQ);
2. let onnxruntime optimise it once, offline (``ORT_ENABLE_EXTENDED``: fusions such as QLinearConv,
   FusedConv), and save that graph: this is the engine (``engine.onnx``), run with optimisations
   off so that nothing changes after this point;
3. expose the taps on that engine graph: a tensor that still exists is exposed directly; a tensor
   that only exists quantized (int8) is exposed through an extra DequantizeLinear of its quantized
   value (the value the next layer really sees); a tensor the fusions removed is *unbound*;
4. run the untapped engine too and record whether outputs and kernels agree (build.json).
"""
from __future__ import annotations

import collections
import dataclasses
import re
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from leapp_lab.taps.graph_edit import rename_value, value_types
from leapp_lab.taps.manifest import IDENTITY_PREFIX as TAP_NODE_PREFIX
from leapp_lab.taps.manifest import TapEntry

from .base import Built, CompileError, Engine, ProgressFn, Runner

_DEFAULT_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")


# -- sessions ---------------------------------------------------------------------------------
def session_options(optimize: bool, optimized_path: Path | None = None):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED if optimize
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    if optimized_path is not None:
        so.optimized_model_filepath = str(optimized_path)
    try:  # custom-domain kernels of onnxruntime-extensions (and @onnx_op Python ops of this process)
        from onnxruntime_extensions import get_library_path
        so.register_custom_ops_library(get_library_path())
    except Exception:  # noqa: BLE001 - optional; a custom op it would have served fails below, by name
        pass
    return so


def custom_ops(model: onnx.ModelProto) -> dict[str, str]:
    """``domain::OpType`` -> first node name, for every node outside the default ONNX domains."""
    out: dict[str, str] = {}
    for n in model.graph.node:
        if n.domain not in _DEFAULT_DOMAINS:
            out.setdefault(f"{n.domain}::{n.op_type}", n.name or "?")
    return out


def make_session(model: onnx.ModelProto | bytes | str | Path, *, optimize: bool,
                 optimized_path: Path | None = None, what: str = "model"):
    import onnxruntime as ort

    src = model.SerializeToString() if isinstance(model, onnx.ModelProto) else (
        str(model) if isinstance(model, Path) else model)
    try:
        return ort.InferenceSession(src, session_options(optimize, optimized_path),
                                    providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - rethrown with the op named
        msg = str(exc)
        proto = model if isinstance(model, onnx.ModelProto) else None
        if proto is None:
            try:
                proto = onnx.load_from_string(src) if isinstance(src, bytes) else onnx.load(src)
            except Exception:  # noqa: BLE001
                proto = None
        ops = custom_ops(proto) if proto is not None else {}
        named = [k for k in ops if k.split("::")[1] in msg] or list(ops)
        if ops and re.search(r"implementation|not a registered|No Op registered|custom", msg, re.I):
            raise CompileError(
                f"onnxruntime cannot run custom op {', '.join(named)} (node {ops[named[0]]!r}) in {what}: "
                f"no kernel is registered for it. Register one with onnxruntime-extensions "
                f"(@onnx_op in a module imported before compile) or build a TensorRT engine with its "
                f"plugin. onnxruntime said: {msg.strip().splitlines()[-1][:300]}") from None
        raise CompileError(f"onnxruntime cannot load {what}: {msg.strip()[:600]}") from None


def optimize_offline(model: onnx.ModelProto, out: Path) -> onnx.ModelProto:
    """onnxruntime's own graph optimisation, saved (the engine graph)."""
    make_session(model, optimize=True, optimized_path=out, what="the converted model")
    return onnx.load(str(out))


def count_ops(model: onnx.ModelProto) -> dict[str, int]:
    c = collections.Counter(
        (n.op_type if n.domain in _DEFAULT_DOMAINS else f"{n.domain}::{n.op_type}")
        for n in model.graph.node if not n.name.startswith(TAP_NODE_PREFIX))
    return dict(sorted(c.items()))


def session_kernels(model: onnx.ModelProto, workdir: Path, tag: str, optimize: bool) -> dict[str, int]:
    """Op counts of the graph onnxruntime really runs for ``model`` (its optimized_model_filepath)."""
    p = workdir / f".kernels-{tag}.onnx"
    make_session(model, optimize=optimize, optimized_path=p, what=f"the {tag} engine")
    return count_ops(onnx.load(str(p)))


class OrtRunner(Runner):
    name = "onnxruntime"

    def __init__(self, artifact: Path | onnx.ModelProto, optimize: bool = False):
        super().__init__()
        self.artifact = artifact
        self.optimize = optimize
        self.session = None

    def _activate_impl(self) -> None:
        self.session = make_session(self.artifact, optimize=self.optimize, what=str(
            self.artifact if isinstance(self.artifact, Path) else "the engine"))

    def _run_impl(self, feed, output_names):
        names = output_names or self.output_names
        try:
            vals = self.session.run(names, feed)
        except Exception as exc:  # noqa: BLE001
            raise CompileError(f"onnxruntime failed to run the engine: {str(exc).strip()[:600]}") from None
        return dict(zip(names, vals))

    def _deactivate_impl(self) -> None:
        self.session = None

    @property
    def input_names(self) -> list[str]:
        return [i.name for i in self.session.get_inputs()]

    @property
    def output_names(self) -> list[str]:
        return [o.name for o in self.session.get_outputs()]


# -- conversions ------------------------------------------------------------------------------
def convert_fp16_emulated(model: onnx.ModelProto) -> onnx.ModelProto:
    """fp32 graph that rounds like fp16: every float32 initializer rounded to float16 (and back),
    every float32 activation (graph inputs and node outputs) sent through Cast(fp16)->Cast(fp32).
    onnxruntime's CPU provider computes float16 graphs in fp32 (it inserts casts and folds weights
    back), so a real fp16 graph would not show fp16 activation rounding (notes JUPYTER_STACK §7)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    types = {name: et for name, (et, _) in value_types(m).items()}
    for init in g.initializer:
        if init.data_type == TensorProto.FLOAT:
            a = numpy_helper.to_array(init)
            with np.errstate(over="ignore"):
                r = a.astype(np.float16).astype(np.float32)
            init.CopyFrom(numpy_helper.from_array(r, init.name))
    init_names = {i.name for i in g.initializer}
    nodes = []
    # graph inputs: round once, consumers read the rounded copy
    rename: dict[str, str] = {}
    for inp in g.input:
        if inp.name in init_names or types.get(inp.name) != TensorProto.FLOAT:
            continue
        r = f"{inp.name}__fp16"
        nodes += [helper.make_node("Cast", [inp.name], [r + "_h"], to=TensorProto.FLOAT16,
                                   name=f"leapp_lab_fp16/{inp.name}/h"),
                  helper.make_node("Cast", [r + "_h"], [r], to=TensorProto.FLOAT,
                                   name=f"leapp_lab_fp16/{inp.name}/f")]
        rename[inp.name] = r
    for n in g.node:
        for i, name in enumerate(n.input):
            if name in rename:
                n.input[i] = rename[name]
        outs = list(n.output)
        casts = []
        for j, o in enumerate(outs):
            if not o or types.get(o) != TensorProto.FLOAT:
                continue
            raw = f"{o}__fp32"
            n.output[j] = raw
            casts += [helper.make_node("Cast", [raw], [o + "__h"], to=TensorProto.FLOAT16,
                                       name=f"leapp_lab_fp16/{o}/h"),
                      helper.make_node("Cast", [o + "__h"], [o], to=TensorProto.FLOAT,
                                       name=f"leapp_lab_fp16/{o}/f")]
        nodes.append(n)
        nodes += casts
    del g.node[:]
    g.node.extend(nodes)
    return m


def convert_int8_qdq(model: onnx.ModelProto, calibration: list[dict[str, np.ndarray]], workdir: Path,
                     log: Callable[[str], None], progress: ProgressFn | None = None) -> onnx.ModelProto:
    """Static int8 QDQ quantization (onnxruntime.quantization.quantize_static, MinMax) calibrated on
    the prepared inputs (every sample of model.npz)."""
    import logging

    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                          QuantType, quantize_static)

    workdir = Path(workdir).resolve()
    src = workdir / ".int8-src.onnx"
    dst = workdir / ".int8-qdq.onnx"
    onnx.save(model, str(src))

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.i = 0

        def get_next(self):
            if self.i >= len(calibration):
                return None
            feed = calibration[self.i]
            self.i += 1
            if progress:
                progress("calibrate", self.i, len(calibration))
            return feed

    from onnxruntime.quantization import calibrate as _cal

    def _calib_session(self):  # the calibrator's own session, with the custom-op library registered
        import onnxruntime as ort
        self.infer_session = ort.InferenceSession(self.augmented_model_path,
                                                  sess_options=session_options(False),
                                                  providers=self.execution_providers)

    orig_session = _cal.CalibraterBase.create_inference_session
    _cal.CalibraterBase.create_inference_session = _calib_session
    root = logging.getLogger()
    old = root.level
    root.setLevel(logging.ERROR)  # quantize_static logs a "consider pre-processing" warning each time
    try:
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            import os
            cwd = os.getcwd()
            os.chdir(tmp)  # the calibrator writes augmented_model.onnx into the cwd
            try:
                quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ,
                                activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                                calibrate_method=CalibrationMethod.MinMax, per_channel=False)
            finally:
                os.chdir(cwd)
    except CompileError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise CompileError(f"int8 quantization (onnxruntime.quantization.quantize_static) failed: "
                           f"{str(exc).strip()[:600]}") from None
    finally:
        root.setLevel(old)
        _cal.CalibraterBase.create_inference_session = orig_session
    log(f"int8: quantize_static QDQ (MinMax, QInt8) calibrated on {len(calibration)} samples")
    q = onnx.load(str(dst))
    for p in (src, dst):
        p.unlink(missing_ok=True)
    return q


# -- taps on the engine graph -----------------------------------------------------------------
_QUANT_INPUT_SLOTS = (0, 3)  # (data, scale, zero point) triples of QLinear*/QGemm/DequantizeLinear inputs


def bind_taps(engine: onnx.ModelProto, converted: onnx.ModelProto, taps: list[TapEntry]
              ) -> tuple[onnx.ModelProto, dict[str, tuple]]:
    """Expose ``taps`` as outputs of a copy of the engine graph. Returns (tapped, bindings) with
    bindings[name] = (status, bound_to, via, reason)."""
    m = onnx.ModelProto()
    m.CopyFrom(engine)
    g = m.graph
    produced = {o for n in g.node for o in n.output if o}
    available = produced | {i.name for i in g.input} | {i.name for i in g.initializer}
    outputs = {o.name for o in g.output}
    # int8: the (scale, zero point) that quantized each tensor in the converted graph
    qparams = {n.input[0]: (n.input[1], n.input[2] if len(n.input) > 2 else "")
               for n in converted.graph.node if n.op_type == "QuantizeLinear"}
    producers = {o: n for n in g.node for o in n.output if o}
    converted_inits = {i.name: i for i in converted.graph.initializer}
    engine_inits = {i.name: i for i in g.initializer}
    keys: dict[tuple, tuple | None] = {}

    def scale_key(inits: dict, name: str):
        k = (id(inits), name)
        if k not in keys:
            init = inits.get(name)
            arr = numpy_helper.to_array(init) if init is not None and _small(init) else None
            keys[k] = None if arr is None else (arr.dtype.str, arr.shape, arr.tobytes())
        return keys[k]

    conv_producer = {o: n.op_type for n in converted.graph.node for o in n.output if o}
    bindings: dict[str, tuple] = {}
    for t in taps:
        value = t.value
        if t.name in outputs:
            bindings[t.name] = ("bound", t.name, "direct", None)
            continue
        if value in outputs:
            # the tap shows a model output: an extra consumer of it (Identity) would make
            # onnxruntime duplicate a DequantizeLinear; copy the output's values instead
            bindings[t.name] = ("bound", value, "alias", None)
            continue
        # int8: consumers see the *quantized* value (the quantizer may even drop a Relu and let the
        # QuantizeLinear clip), so a quantized tensor is shown as DequantizeLinear of its int8 form
        q = qparams.get(value)
        found = None
        if q is not None:
            scale = q[0]
            # onnxruntime's constant sharing renames a scale (linear_9_scale -> val_181_scale):
            # match it by name or by value
            want = scale_key(converted_inits, scale)
            cands = {}
            for n in g.node:
                if n.op_type == "QuantizeLinear":  # its slot 0 is the float input
                    continue
                for s in _QUANT_INPUT_SLOTS:
                    if len(n.input) > s + 1 and (n.input[s + 1] == scale or (
                            want is not None and scale_key(engine_inits, n.input[s + 1]) == want)):
                        cands.setdefault(n.input[s], (n.input[s], n.input[s + 1],
                                                      n.input[s + 2] if len(n.input) > s + 2 else ""))
            # a scale is shared along data-movement ops (MaxPool, Reshape, Transpose ...) and by the
            # QuantizeLinear of their float outputs: those tensors hold *another* value (another
            # shape), so they are no candidates unless the tap's own value comes from such an op
            cands = {k: c for k, c in cands.items() if _may_hold(k, value, producers, conv_producer)}
            # one quantized tensor per scale, or the scale was shared (ConstantSharing) and the
            # match would be ambiguous: then fall back to the float value
            if len(cands) == 1:
                found = next(iter(cands.values()))
        if found:
            if t.name in available:  # the float value carries the tap's name: free the name
                rename_value(g, t.name, t.name + "__float")
                available.add(t.name + "__float")
                if found[0] == t.name:
                    found = (t.name + "__float",) + found[1:]
            ins = [found[0], found[1]] + ([found[2]] if found[2] else [])
            g.node.append(helper.make_node("DequantizeLinear", ins, [t.name], name=TAP_NODE_PREFIX + t.name))
            g.output.append(onnx.ValueInfoProto(name=t.name))
            outputs.add(t.name)
            bindings[t.name] = ("bound", found[0], "dequantize", None)
            continue
        if value in available:
            if value == t.name:
                g.output.append(onnx.ValueInfoProto(name=t.name))
            else:
                g.node.append(helper.make_node("Identity", [value], [t.name], name=TAP_NODE_PREFIX + t.name))
                g.output.append(onnx.ValueInfoProto(name=t.name))
            outputs.add(t.name)
            bindings[t.name] = ("bound", value, "direct", None)
            continue
        reason = (f"tensor {value!r} no longer exists in the engine: onnxruntime's graph optimisation "
                  f"fused it into {_fused_into(converted, value)}; move the tap to a tensor that survives "
                  f"(a module boundary, after the activation)")
        bindings[t.name] = ("unbound", None, None, reason)
    return m, bindings


def _small(init: onnx.TensorProto) -> bool:
    n = 1
    for d in init.dims:
        n *= d
    return n <= 4096


# ops that move or select int8 values and keep their input's (scale, zero point)
_SCALE_SHARING_OPS = frozenset({"MaxPool", "GlobalMaxPool", "Reshape", "Transpose", "Squeeze", "Unsqueeze",
                                "Flatten", "Gather", "Slice", "Split", "Resize", "DepthToSpace",
                                "SpaceToDepth", "Expand", "Tile", "Identity"})


def _may_hold(tensor: str, value: str, producers: dict, conv_producer: dict) -> bool:
    """Could the quantized engine tensor ``tensor`` hold float ``value`` of the converted graph?"""
    n = producers.get(tensor)
    if n is None:
        return True
    if n.op_type == "QuantizeLinear":
        return n.input[0] == value
    if n.op_type in _SCALE_SHARING_OPS:
        return conv_producer.get(value) == n.op_type
    return True


def _quantized_form(converted: onnx.ModelProto, value: str):
    """The QuantizeLinear node of ``value`` in the converted (QDQ) graph, or None."""
    for n in converted.graph.node:
        if n.op_type == "QuantizeLinear" and n.input[0] == value:
            return n
    return None


def _fused_into(converted: onnx.ModelProto, value: str) -> str:
    for n in converted.graph.node:
        if value in n.output:
            cons = [c.op_type for c in converted.graph.node if value in c.input]
            return f"a fused kernel ({n.op_type}" + (f" -> {', '.join(cons)}" if cons else "") + ")"
    return "a fused kernel"


# -- the engines ------------------------------------------------------------------------------
class OrtEngine(Engine):
    name = "ort"
    precision = "fp32"

    def convert(self, model: onnx.ModelProto, calibration, workdir: Path, log, progress) -> onnx.ModelProto:
        return model

    def build(self, untapped, taps, calibration, workdir: Path, log, progress=None, naive=None) -> Built:
        t0 = time.perf_counter()
        converted = self.convert(untapped, calibration, workdir, log, progress)
        log(f"{self.name}: converted in {time.perf_counter() - t0:.2f}s "
            f"({sum(count_ops(converted).values())} nodes)")
        engine_untapped = optimize_offline(converted, workdir / "engine.untapped.onnx")
        log(f"{self.name}: onnxruntime optimised graph: {count_ops(engine_untapped)}")
        tapped, bindings = bind_taps(engine_untapped, converted, taps)
        lost = [t for t in taps if bindings[t.name][0] == "unbound"]
        if lost:
            tapped, bindings = self._unfuse(converted, taps, lost, workdir, log) or (tapped, bindings)
        art = workdir / "engine.onnx"
        onnx.save(tapped, str(art))
        k_untapped = session_kernels(engine_untapped, workdir, "untapped", optimize=False)
        k_tapped = session_kernels(tapped, workdir, "tapped", optimize=False)
        naive_k = None
        if naive is not None and taps:
            # what tapping *before* conversion would have built (not run, kernels only)
            naive_conv = self.convert(naive, calibration, workdir, lambda s: None, None)
            naive_k = session_kernels(naive_conv, workdir, "naive", optimize=True)
        for p in workdir.glob(".kernels-*.onnx"):
            p.unlink()
        return Built(art, workdir / "engine.untapped.onnx", bindings, k_tapped, k_untapped, naive_k,
                     custom_ops(untapped))

    def runner(self, artifact: Path) -> Runner:
        return OrtRunner(artifact, optimize=False)

    def _unfuse(self, converted, taps, lost, workdir: Path, log):
        """Taps whose tensors onnxruntime fused away: optimise the converted graph again with those
        tensors as outputs (which keeps that fusion from happening), then bind every tap on it. The
        tapped engine then differs from the untapped one; the observer-effect record shows how.
        None when no lost tensor exists in the converted graph (the first binding stands)."""
        values = {o for n in converted.graph.node for o in n.output if o}
        keep = [t for t in lost if t.value in values]
        if not keep:
            return None
        c2 = onnx.ModelProto()
        c2.CopyFrom(converted)
        have = {o.name for o in c2.graph.output}
        extra = [t.value for t in keep if t.value not in have]
        # int8: a quantized value is consumed as DequantizeLinear(QuantizeLinear(value)), and the
        # float tensor of that name may be the pre-activation (the quantizer folds a Relu into the
        # QuantizeLinear): expose the dequantized form, an extra output the tap aliases
        dq_of = {}
        for t in keep:
            q = _quantized_form(converted, t.value)
            if q is not None and len(q.output) and q.output[0]:
                name = t.value + "__tap_dq"
                c2.graph.node.append(helper.make_node("DequantizeLinear", [q.output[0], *q.input[1:]], [name],
                                                      name=TAP_NODE_PREFIX + name))
                c2.graph.output.append(onnx.ValueInfoProto(name=name))
                dq_of[t.name] = name
        extra = [v for v in extra if not any(dq_of.get(t.name) and t.value == v for t in keep)]
        for v in extra:
            c2.graph.output.append(onnx.ValueInfoProto(name=v))
        e2 = optimize_offline(c2, workdir / ".engine.unfused.onnx")
        (workdir / ".engine.unfused.onnx").unlink(missing_ok=True)
        outs = [o for o in e2.graph.output if o.name not in set(extra)]
        del e2.graph.output[:]
        e2.graph.output.extend(outs)
        bind_as = [dataclasses.replace(t, tensor=dq_of[t.name]) if t.name in dq_of else t for t in taps]
        tapped, b2 = bind_taps(e2, converted, bind_as)
        for t in keep:
            st, bound_to, via, reason = b2[t.name]
            if st == "bound":
                b2[t.name] = ("bound", bound_to, "unfused",
                              f"onnxruntime fuses {t.value!r} away ({_fused_into(converted, t.value)}); "
                              "exposing it keeps that fusion from happening, so the tapped engine differs "
                              "from the untapped one (see the observer effect)")
        log(f"{self.name}: {len(keep)} taps needed an unfused engine: {', '.join(t.name for t in keep)}")
        return tapped, b2


class OrtFp16Engine(OrtEngine):
    name = "ort-fp16"
    precision = "fp16"

    def convert(self, model, calibration, workdir, log, progress):
        m = convert_fp16_emulated(model)
        log("fp16 emulation: weights rounded to float16; Cast(float16)->Cast(float32) on every float "
            "activation (onnxruntime CPU computes float16 graphs in fp32, so this is how fp16 rounding "
            "shows)")
        return m


class OrtInt8Engine(OrtEngine):
    name = "ort-int8"
    precision = "int8"
    needs_calibration = True

    def convert(self, model, calibration, workdir, log, progress):
        return convert_int8_qdq(model, calibration, workdir, log, progress)

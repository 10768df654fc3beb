"""onnxruntime CPU engines: ``ort`` (fp32), ``ort-fp16`` (the typed fp16 ONNX), ``ort-int8`` (static QDQ).

How an engine is built (and why: the observer effect). Taps added as outputs *before* conversion
change the engine: measured here, 4 tap outputs on an int8 QDQ model turned 5 of 6 QLinearConv into
fp32 Conv, because onnxruntime's QDQ fusion refuses tensors with a second consumer. So:

1. convert the **untapped** model (manifest tap outputs stripped): fp32 as is, fp16 into the typed
   fp16 ONNX (typed_onnx.py: the file TensorRT builds too), int8 by ``quantize_static`` (QDQ);
2. let onnxruntime optimise it once, offline (``ORT_ENABLE_EXTENDED``: fusions such as QLinearConv,
   FusedConv), and save that graph: this is the engine (``engine.onnx``), run with optimisations
   off so that nothing changes after this point. fp16 skips this step: onnxruntime's optimised
   graph of a float16 model is a float32 one (it folds the weights back), and the engine must stay
   the typed file;
3. expose the taps on that engine graph: a tensor that still exists is exposed directly; a tensor
   that only exists quantized (int8) is exposed through an extra DequantizeLinear of its quantized
   value (the value the next layer really sees); a tensor the fusions removed is *unbound*;
4. run the untapped engine too and record whether outputs and kernels agree (build.json).
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import onnx
from onnx import helper

from leapp_lab.model.finding import plural
from leapp_lab.onnxio.manifest import IDENTITY_PREFIX as TAP_NODE_PREFIX
from leapp_lab.onnxio.weights import inline_weights

from .base import Built, Engine, Runner
from .ort_precision import convert_int8_qdq
from .ort_session import OrtRunner, count_ops, custom_ops, make_session, optimize_offline, session_kernels
from .ort_tapcheck import chain_names, chain_values, refusals
from .ort_taps import _fused_into, _quantized_form, bind_taps
from .typed_onnx import describe, to_fp16


#: where an onnxruntime build keeps its engine's weights (external data of engine.onnx and
#: engine.untapped.onnx); an engine that had to be optimised again with taps kept has its own
ENGINE_WEIGHTS = "engine.weights"
TAPPED_WEIGHTS = "engine.tapped.weights"


def _refuse(tapped: onnx.ModelProto, bound: list, bad: dict[str, str]):
    """Unbind the taps of ``bad`` (name -> reason): their outputs and exposure nodes leave the graph,
    so no row is ever scored with a value that is not theirs."""
    g = tapped.graph
    keep_out = [o for o in g.output if o.name not in bad]
    del g.output[:]
    g.output.extend(keep_out)
    drop = {TAP_NODE_PREFIX + k for k in bad}
    keep_nodes = [n for n in g.node if n.name not in drop]
    del g.node[:]
    g.node.extend(keep_nodes)
    return tapped, [t.bind("unbound", reason=f"binding refused: {bad[t.name]}") if t.name in bad else t
                    for t in bound]


class OrtEngine(Engine):
    name = "ort"
    precision = "fp32"
    weightless = True

    def convert(self, model: onnx.ModelProto, calibration, workdir: Path, log, progress) -> onnx.ModelProto:
        return model

    def build(self, untapped, taps, calibration, workdir: Path, log, progress=None, naive=None) -> Built:
        t0 = time.perf_counter()
        converted = self.convert(untapped, calibration, workdir, log, progress)
        log(f"{self.name}: converted in {time.perf_counter() - t0:.2f}s "
            f"({sum(count_ops(converted).values())} nodes)")
        # the engine's weights go to one file that the tapped and untapped graphs share: the
        # graphs are edited and saved without ever holding a weight
        engine_untapped = self.engine_graph(converted, workdir / "engine.untapped.onnx", ENGINE_WEIGHTS)
        log(f"{self.name}: onnxruntime optimised graph: {count_ops(engine_untapped)}")
        tapped, bound = bind_taps(engine_untapped, converted, taps)
        lost = [t for t in bound if t.binding == "unbound"]
        if lost:
            tapped, bound = self._unfuse(converted, engine_untapped, taps, lost, workdir, log) or (tapped, bound)
        art = workdir / "engine.onnx"
        # the untapped engine's session is not kept, and made before the tapped one: compile runs
        # it only after the tapped one is closed (the observer check); two open sessions were the
        # largest part of compile's peak
        untapped_art = workdir / "engine.untapped.onnx"
        k_untapped = session_kernels(untapped_art, workdir, "untapped", optimize=False)
        for attempt in range(3):
            onnx.save(tapped, str(art))
            # the sessions that count the kernels are the ones compile then runs (runner() below)
            k_tapped, s_tapped = session_kernels(art, workdir, "tapped", optimize=False, keep=True)
            if self.precision != "int8" or not calibration or attempt == 2:
                break
            bad = self._check_bindings(converted, s_tapped, bound, calibration[0])
            if not bad:
                break
            log(f"{self.name}: {plural(len(bad), 'tap')} bound by a shared int8 scale to another tensor: "
                + "; ".join(f"{k}: {v}" for k, v in bad.items()))
            del s_tapped
            redo = (self._unfuse(converted, engine_untapped, taps,
                                 lost + [t for t in bound if t.name in bad
                                         and all(t.name != u.name for u in lost)], workdir, log)
                    if attempt == 0 else None)
            if redo is not None:
                tapped, bound = redo
                continue
            tapped, bound = _refuse(tapped, bound, bad)
        self._sessions = {str(art): s_tapped}
        naive_k = None
        if naive is not None and taps:
            # what tapping *before* conversion would have built (not run, kernels only)
            naive_conv = self.convert(naive, calibration, workdir, lambda s: None, None)
            naive_k = session_kernels(naive_conv, workdir, "naive", optimize=True, weights_dir=self.weights_dir)
        for p in workdir.glob(".kernels-*"):
            p.unlink()
        return Built(art, untapped_art, bound, k_tapped, k_untapped, naive_k, custom_ops(untapped),
                     engine_onnx=art)

    def engine_graph(self, converted: onnx.ModelProto, out: Path, data: str | None = None) -> onnx.ModelProto:
        """The graph the engine runs, saved at ``out``: onnxruntime's offline optimisation, its
        weights in ``data`` beside it (the graph returned references them there, unread)."""
        return optimize_offline(converted, out, data=data, weights_dir=self.weights_dir)

    def _check_bindings(self, converted, session, bound, feed) -> dict[str, str]:
        """Each bound tap of ``bound`` whose engine value on ``feed`` is not its value in the QDQ
        chain (ort_tapcheck), with the reason."""
        chain = chain_names(converted, bound)
        if not chain:
            return {}
        # an alias-like binding (the unfused engine's ``<tensor>__tap_dq``) is read under bound_to
        outs = {o.name for o in session.get_outputs()}
        where = {t.name: (t.name if t.name in outs else t.bound_to) for t in bound if t.name in chain}
        where = {k: v for k, v in where.items() if v in outs}
        got = session.run(list(where.values()), feed)
        engine_vals = {k: got[i] for i, k in enumerate(where)}
        chain_vals = chain_values(converted, list(chain.values()), feed, make_session)
        return refusals(bound, engine_vals, chain, chain_vals)

    def runner(self, artifact: Path) -> Runner:
        made = getattr(self, "_sessions", {}).pop(str(artifact), None)
        return OrtRunner(artifact, optimize=False, session=made)

    def _unfuse(self, converted, engine_untapped, taps, lost, workdir: Path, log):
        """Taps whose tensors onnxruntime fused away: optimise the converted graph again with those
        tensors as outputs (which keeps that fusion from happening), then bind every tap on it. The
        tapped engine then differs from the untapped one (via ``unfused``); the observer-effect
        record shows how. Where it runs the same kernels (op counts equal: int8 tensors that exist
        only quantized, read through an extra DequantizeLinear), those taps are ``dequantize`` (or
        ``direct``) and claim no engine change. None when no lost tensor exists in the converted
        graph (the first binding stands)."""
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
        e2 = self.engine_graph(c2, workdir / ".engine.unfused.onnx", TAPPED_WEIGHTS)
        (workdir / ".engine.unfused.onnx").unlink(missing_ok=True)
        outs = [o for o in e2.graph.output if o.name not in set(extra)]
        del e2.graph.output[:]
        e2.graph.output.extend(outs)
        # the same op counts as the untapped engine: exposing them changed no kernel (an extra
        # DequantizeLinear of a quantized tensor the fused kernels already produce)
        same = count_ops(e2) == count_ops(engine_untapped)
        bind_as = [dataclasses.replace(t, tensor=dq_of[t.name]) if t.name in dq_of else t for t in taps]
        tapped, b2 = bind_taps(e2, converted, bind_as)
        kept = {t.name: t for t in keep}
        for i, b in enumerate(b2):
            t = kept.get(b.name)
            if t is None:
                continue
            # the entry keeps the manifest's tensor (bind_as may have pointed it at the dq copy)
            if b.binding != "bound":
                b2[i] = t.bind(b.binding, b.bound_to, b.via, b.binding_reason)
            elif same:
                b2[i] = t.bind("bound", b.bound_to, "dequantize" if t.name in dq_of else "direct")
            else:
                b2[i] = t.bind("bound", b.bound_to, "unfused",
                               f"onnxruntime fuses {t.value!r} away ({_fused_into(converted, t.value)}); "
                               "exposing it keeps that fusion from happening, so the tapped engine differs "
                               "from the untapped one (see the observer effect)")
        names = ", ".join(t.name for t in keep)
        log(f"{self.name}: {plural(len(keep), 'tap')} read through an extra DequantizeLinear (no kernel changed): {names}"
            if same else f"{self.name}: {plural(len(keep), 'tap')} needed an unfused engine: {names}")
        return tapped, b2


class OrtFp16Engine(OrtEngine):
    """The typed fp16 ONNX (float16 weights and activations, Casts around the ``keep_fp32`` nodes),
    run by onnxruntime as it stands. onnxruntime's CPU provider has few float16 kernels: it computes
    most nodes in float32 between Casts it inserts and drops the Cast pairs it inserted itself, so
    activations are rounded to float16 where the graph's own Casts are (its outputs, the kept
    nodes), not after every node as a GPU's fp16 kernels round them (docs/verify.md)."""
    name = "ort-fp16"
    precision = "fp16"
    weightless = False          # its conversion rounds the weights themselves

    def convert(self, model, calibration, workdir, log, progress):
        m, notes = to_fp16(model, self.keep_fp32)
        log("fp16: typed ONNX by onnxconverter-common (float16.convert_float_to_float16, inputs and "
            f"outputs kept float32): {describe(m)}"
            + (f"; {len(self.keep_fp32)} nodes kept in fp32 (node block list, Casts around them)"
               if self.keep_fp32 else ""))
        for note in notes:
            log(f"fp16: {note} (a weight beyond float16's range)")
        return m

    def engine_graph(self, converted, out, data=None):
        onnx.save(converted, str(out))
        return converted


class OrtInt8Engine(OrtEngine):
    name = "ort-int8"
    precision = "int8"
    quantizer = "ort"

    def check_available(self) -> None:
        if self.quantizer == "modelopt":
            from .ort_modelopt import check_available
            check_available()

    def convert(self, model, calibration, workdir, log, progress):
        # the quantizers read the model through onnx: the weights go back in (int8's converted
        # graph holds them anyway, at a quarter of the size)
        model = inline_weights(model, self.weights_dir or workdir)
        if self.quantizer == "modelopt":
            from .ort_modelopt import convert_int8_modelopt
            return convert_int8_modelopt(model, calibration, workdir, log, progress, keep_fp32=self.keep_fp32)
        return convert_int8_qdq(model, calibration, workdir, log, progress, keep_fp32=self.keep_fp32)

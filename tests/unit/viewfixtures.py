"""Hand-built trace and verify reports for the view tests (no torch, LEAPP or onnxruntime).

Numbers come from ``leapp_lab.numerics.metrics.diff_stats`` on small numpy arrays, as the real runs
do; names include markup so that every test also exercises escaping.
"""
from __future__ import annotations

import numpy as np

from leapp_lab.numerics.metrics import diff_stats, diff_sums
from leapp_lab.model.arraysummary import array_summary
from leapp_lab.model.trace import (Edge, FxGraph, FxNode, GraphReport, Hazard, LogRecord, NodeReport,
                                   PortInfo, SampleCheck, TraceReport)
from leapp_lab.model.verify import DivergenceRule, InputSummary, SampleMetrics, VerifyReport, VerifyRow

EVIL = '<script>alert("x")</script>&\'"'


def _check(node, port, sample, rec, exp, rtol=1e-3, atol=1e-5):
    st = diff_stats(exp, rec, rtol=rtol)
    passed = bool(np.allclose(exp, rec, rtol=rtol, atol=atol))
    return SampleCheck(
        node=node, port=port, sample=sample, passed=passed, rtol=rtol, atol=atol, shape=list(rec.shape),
        exported_shape=list(exp.shape), dtype=str(rec.dtype), exported_dtype=str(exp.dtype),
        recorded_range=[float(rec.min()), float(rec.max())], exported_range=[float(exp.min()), float(exp.max())],
        stats={"max": st.max_abs, "mean": st.mean_abs, "p50": st.percentile(50), "p99": st.percentile(99)},
        fx_stats={"max": st.max_abs}, export_vs_fx_max=0.0, min_atol=st.min_atol, hist=st.hist)


def trace_report(evil: bool = False) -> TraceReport:
    """Two nodes: ``scale`` freezes a constant (sample 0 passes, 1 and 2 fail), ``head`` passes."""
    rng = np.random.default_rng(0)
    scale = f"scale{EVIL}" if evil else "scale"
    checks, arrays = [], {}
    for s in range(3):
        x = rng.normal(size=(2, 3)).astype(np.float32) * (s + 1)
        rec = x * np.abs(x).max()
        exp = x * 1.7 if s else rec.copy()
        checks.append(_check(scale, "y", s, rec, exp))
        arrays[f"{scale}/obs/{s}/input"] = x
        out = np.tanh(rec)
        checks.append(_check("head", "out", s, out, out + np.float32(1e-7) * s))
        arrays[f"head/y/{s}/input"] = rec
    fx = FxGraph(code="\n\ndef forward(self, obs):\n    mul = torch.mul(obs, 1.7);  obs = None\n    return mul\n",
                 nodes=[FxNode("placeholder", "obs", "obs", users=["mul"]),
                        FxNode("call_function", "mul", "torch.mul", args=["%obs", "1.7"], users=["output"],
                               literals=[1.7], suspect=True),
                        FxNode("output", "output", "output", args=["mul"])])
    nodes = [NodeReport(name=scale, index=0, backend="jit-script", artifact="scale.pt", verdict="fail", samples=3,
                        ports=[PortInfo("obs", "in", "float32", [2, 3]), PortInfo("y", "out", "float32", [2, 3])], fx=fx),
             NodeReport(name="head", index=1, backend="onnx-dynamo", artifact="head.onnx", verdict="pass", samples=3,
                        ports=[PortInfo("y", "in", "float32", [2, 3], source=f"{scale}/y"),
                               PortInfo("h", "in", "float32", [2, 3], role="state", source="head/h_out", feedback=True),
                               PortInfo("out", "out", "float32", [2, 3]),
                               PortInfo("h_out", "out", "float32", [2, 3], role="state")])]
    g = GraphReport(
        name="frozen", status="compiled", verdict="fail", nodes=nodes,
        edges=[Edge(f"{scale}/y", "head/y"), Edge("head/h_out", "head/h", kind="feedback")],
        graph_inputs=[f"{scale}/obs"], graph_outputs=["head/out"], checks=checks,
        hazards=[Hazard("frozen-constant", scale, "y", [1, 2], f"sample 0 passes but 1, 2 fail {EVIL if evil else ''}")],
        log=[LogRecord("SECTION", 25, "COMPILE", "COMPILE"), LogRecord("INFO", 20, "compiling scale", "COMPILE"),
             LogRecord("WARNING", 30, f"item() called {EVIL if evil else ''}", "COMPILE"),
             LogRecord("DEBUG", 10, "detail", "VALIDATE"), LogRecord("ERROR", 40, "validation failed", "VALIDATE")])
    r = TraceReport(graphs=[g], created="2026-01-01T00:00:00", leapp_version="0.7.2")
    r._arrays = arrays
    return r


def verify_report(tmp_path=None, evil: bool = False) -> VerifyReport:
    """Four rows in model order: tap_a passes, tap_b is the first divergent, output diverges too,
    tap_c has no reference. Two samples each; sample 1 diverges more than sample 0."""
    rng = np.random.default_rng(1)
    names = [("tap_a", "manual", 2, 0.0), (f"tap_b{EVIL}" if evil else "tap_b", "op", 5, 0.05),
             ("output_0", "output", 9, 0.2)]
    rows = []
    prev = None
    for name, kind, order, noise in names:
        ref = rng.normal(size=(2, 4, 8))
        eng = ref + noise * (1 + np.arange(2)[:, None, None]) * rng.normal(size=ref.shape)
        samples = [SampleMetrics(sample=i).fill(diff_sums(eng[i], ref[i], rtol=1e-3)) for i in range(2)]
        row = VerifyRow(name=name, kind=kind, order=order, status="compared", source=f"model.py:{order * 3}",
                        reference_source="torch", producer_op="Gemm", diverged=noise > 0,
                        first_divergent=name.startswith("tap_b"),
                        shape_reference=[2, 4, 8], shape_engine=[2, 4, 8], dtype_reference="float32",
                        dtype_engine="float32", samples=samples).fill(diff_sums(eng, ref, rtol=1e-3))
        row.reason = ", ".join(DivergenceRule().reasons(row)) or None
        row.growth = (row.nrmse / prev) if prev else None
        prev = row.nrmse or prev
        rows.append(row)
    rows.insert(2, VerifyRow(name="tap_c", kind="plugin", order=7, status="no-reference", reason="missing-reference",
                             note="custom op boundary without a torch reference", reference_source=None))
    ref_path = str(tmp_path / "model.reference.npz") if tmp_path is not None else ""
    x = rng.normal(size=(2, 3, 5)).astype(np.float32)       # what each sample fed the engine
    inputs = [InputSummary(name="x", sample=i, file="model.npz", **array_summary(x[i])) for i in range(2)]
    first = next(r.name for r in rows if r.first_divergent)
    return VerifyReport(reference=ref_path, build="build/model.ort-int8", engine="ort-int8",
                        build_name="model.ort-int8", samples=2, rows=rows, rule=DivergenceRule(text=""),
                        first_divergent=first, worst_tap="output_0", largest_jump=first,
                        warnings=["1 outputs are missing in the reference"], created="2026-01-01T00:00:00",
                        inputs=inputs)


def verify_report_after(tmp_path=None) -> VerifyReport:
    """``verify_report()`` after a change (run B of a diff): tap_a now diverges (pass → fail), tap_b
    no longer does (fail → pass), output_0 still does, tap_c is gone and tap_d is new. Two samples."""
    rng = np.random.default_rng(2)
    rows = []
    for name, kind, order, noise in (("tap_a", "manual", 2, 0.08), ("tap_b", "op", 5, 0.0),
                                     ("tap_d", "manual", 6, 0.001), ("output_0", "output", 9, 0.1)):
        ref = rng.normal(size=(2, 4, 8))
        eng = ref + noise * (1 + np.arange(2)[:, None, None]) * rng.normal(size=ref.shape)
        samples = [SampleMetrics(sample=i).fill(diff_sums(eng[i], ref[i], rtol=1e-3)) for i in range(2)]
        rows.append(VerifyRow(name=name, kind=kind, order=order, status="compared", source=f"model.py:{order * 3}",
                              reference_source="torch", producer_op="Gemm", diverged=noise > 0.01,
                              first_divergent=name == "tap_a", shape_reference=[2, 4, 8],
                              shape_engine=[2, 4, 8], dtype_reference="float32", dtype_engine="float32",
                              samples=samples).fill(diff_sums(eng, ref, rtol=1e-3)))
    ref_path = str(tmp_path / "model.reference.npz") if tmp_path is not None else ""
    return VerifyReport(reference=ref_path, build="build/model.ort-fp16", engine="ort-fp16",
                        build_name="model.ort-fp16", samples=2, rows=rows, rule=DivergenceRule(text=""),
                        first_divergent="tap_a", worst_tap="tap_a", created="2026-01-02T00:00:00")


def with_local(r: VerifyReport, local: dict[str, float], rule: float = 0.01) -> VerifyReport:
    """``r`` as a ``verify --local`` report: each named row's local NRMSE, locally diverged above
    ``rule`` (the rows not named keep none)."""
    r.local = True
    for row in r.rows:
        if row.name in local:
            row.local_nrmse = local[row.name]
            row.locally_diverged = local[row.name] > rule
    return r

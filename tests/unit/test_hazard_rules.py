"""The hazard rules on constructed GraphReports (no LEAPP): each rule, its edges, its precedence.

Verdicts and min_atol are computed here with plain numpy (torch.allclose's formula), independently
of leapp_lab, the way the trace capture fills them.
"""
from __future__ import annotations

import numpy as np
import pytest

from leapp_lab.model.trace import (FxGraph, FxNode, GraphReport, LogRecord, NodeReport, PortInfo,
                                   SampleCheck)
from leapp_lab.trace.hazards import diagnose

RTOL, ATOL = 1e-3, 1e-5
LEVELNO = {"DEBUG": 10, "INFO": 20, "SECTION": 25, "WARNING": 30, "ERROR": 40, "FATAL": 41}


class G:
    """A tiny graph builder: nodes with input/output ports, samples, log records."""

    def __init__(self, name="g", status="compiled", rtol=RTOL, atol=ATOL):
        self.graph = GraphReport(name=name, status=status)
        self.arrays: dict[str, np.ndarray] = {}
        self.rtol, self.atol = rtol, atol

    def node(self, name, inputs=("obs",), outputs=("y",), samples=3, dropped=()):
        ports = [PortInfo(n, "in") for n in inputs] + [PortInfo(n, "out") for n in outputs]
        self.graph.nodes.append(NodeReport(name=name, index=len(self.graph.nodes), samples=samples,
                                           dropped_inputs=list(dropped), ports=ports))
        return self

    def inp(self, node, port, k, value):
        self.arrays[f"{node}/{port}/{k}/input"] = np.asarray(value, dtype=np.float32)
        return self

    def out(self, node, port, k, rec, exp=None, fx=None, passed="auto", stats=True):
        rec = np.asarray(rec, dtype=np.float32)
        exp = rec.copy() if exp is None else np.asarray(exp, dtype=np.float32)
        fx = rec.copy() if fx is None else np.asarray(fx, dtype=np.float32)
        r, e, f = (np.asarray(a, dtype=np.float64) for a in (rec, exp, fx))
        if passed == "auto":
            passed = bool(np.all(np.abs(e - r) <= self.atol + self.rtol * np.abs(r)))
        c = SampleCheck(node=node, port=port, sample=k, passed=passed, rtol=self.rtol, atol=self.atol)
        c.min_atol = float(max(0.0, np.max(np.abs(e - r) - self.rtol * np.abs(r))))
        c.stats = {"max": float(np.max(np.abs(e - r)))}
        c.fx_stats = {"max": float(np.max(np.abs(f - r)))}
        c.export_vs_fx_max = float(np.max(np.abs(e - f)))
        c.recorded_range = [float(r.min()), float(r.max())]
        c.fx_range = [float(f.min()), float(f.max())]
        self.graph.checks.append(c)
        if stats:
            self.arrays.update({f"{node}/{port}/{k}/recorded": rec, f"{node}/{port}/{k}/exported": exp,
                                f"{node}/{port}/{k}/fx": fx})
        return self

    def log(self, level, message):
        self.graph.log.append(LogRecord(level, LEVELNO[level], message))
        return self

    def run(self):
        return diagnose(self.graph, self.arrays)


def kinds(hz):
    return sorted((h.kind, h.node, h.port, tuple(h.samples)) for h in hz)


def varying(g, node="n", n=3, port="obs"):
    for k in range(n):
        g.inp(node, port, k, [k + 1.0, -2.0 * k, 0.5])
    return g


# -- frozen-constant -----------------------------------------------------------------------------

def test_frozen_constant_sample0_passes_later_fail_export_equals_fx():
    g = varying(G().node("n"))
    g.out("n", "y", 0, [1.0, 2.0])
    g.out("n", "y", 1, [2.0, 4.0], exp=[1.0, 2.0], fx=[1.0, 2.0])
    g.out("n", "y", 2, [3.0, 6.0], exp=[1.5, 3.0], fx=[1.5, 3.0])
    assert kinds(g.run()) == [("frozen-constant", "n", "y", (1, 2))]


def test_frozen_needs_sample0_to_pass():
    g = varying(G().node("n"))
    g.out("n", "y", 0, [1.0, 2.0], exp=[0.0, 0.0], fx=[1.0, 2.0])
    g.out("n", "y", 1, [2.0, 4.0], exp=[1.0, 2.0], fx=[1.0, 2.0])
    g.out("n", "y", 2, [3.0, 6.0])
    hz = g.run()
    assert "frozen-constant" not in {h.kind for h in hz}
    # sample 0: fx == recorded, exported differs -> export-mismatch there
    assert kinds(hz) == [("export-mismatch", "n", "y", (0,))]


def test_frozen_constant_suppresses_tolerance_only():
    # the frozen value is only 2e-5 off: within 10x atol, but the pattern says "frozen"
    g = varying(G(rtol=0.0).node("n"))
    g.out("n", "y", 0, [1.0, 2.0])
    g.out("n", "y", 1, [1.0, 2.00002], exp=[1.0, 2.0], fx=[1.0, 2.0])
    g.out("n", "y", 2, [1.0, 2.00003], exp=[1.0, 2.0], fx=[1.0, 2.0])
    hz = g.run()
    assert kinds(hz) == [("frozen-constant", "n", "y", (1, 2))]


# -- export-mismatch / tolerance-only ---------------------------------------------------------------

def test_export_mismatch_when_fx_matches_python_and_export_does_not():
    g = varying(G().node("n"))
    for k in range(3):
        g.out("n", "y", k, [-2.0 - k, 1.0], exp=[-1.0 - k, 1.0])
    hz = g.run()
    assert kinds(hz) == [("export-mismatch", "n", "y", (0, 1, 2))]
    assert "'n'" in hz[0].message and "'y'" in hz[0].message and "samples 0, 1, 2" in hz[0].message


def test_tolerance_only_suppresses_export_mismatch():
    g = varying(G(rtol=0.0, atol=1e-8).node("n"))
    for k in range(3):
        g.out("n", "y", k, [1e-7, 2e-7 * k], exp=[1.5e-7, 2e-7 * k])   # 5e-8 off: 5x atol
    hz = g.run()
    assert kinds(hz) == [("tolerance-only", "n", "y", (0, 1, 2))]
    assert "5e-08" in hz[0].message


def test_tolerance_only_boundary_is_ten_times_atol():
    # 10x atol passes, 20x does not (then it is a real export mismatch)
    for off, expect in ((1e-4, "tolerance-only"), (2.1e-4, "export-mismatch")):
        g = varying(G(rtol=0.0, atol=1e-5).node("n"))
        for k in range(3):
            g.out("n", "y", k, [float(k), 0.0], exp=[float(k), off * 0.95])
        assert [h.kind for h in g.run()] == [expect], off


def test_tolerance_only_needs_every_sample_within_noise():
    g = varying(G(rtol=0.0, atol=1e-8).node("n"))
    g.out("n", "y", 0, [1e-7], exp=[1.3e-7])
    g.out("n", "y", 1, [2e-7], exp=[2.3e-7])
    g.out("n", "y", 2, [1e-7], exp=[5e-7])      # 40x atol: not noise
    assert kinds(g.run()) == [("export-mismatch", "n", "y", (0, 1, 2))]


def test_nan_is_never_tolerance_noise():
    g = varying(G(rtol=0.0, atol=1e-8).node("n"))
    g.out("n", "y", 0, [1e-7, 1.0], exp=[1.3e-7, 1.0])
    g.out("n", "y", 1, [2e-7, 1.0], exp=[2.3e-7, np.nan], passed=False)
    g.out("n", "y", 2, [3e-7, np.nan], exp=[3.3e-7, np.nan], passed=False)
    # stored min_atol ignores the NaN pairs; the rule must not call this noise
    g.graph.checks[1].min_atol = g.graph.checks[2].min_atol = 3e-8
    g.graph.checks[1].nonfinite_exported = g.graph.checks[2].nonfinite_exported = 1
    g.graph.checks[2].nonfinite_recorded = 1
    assert "tolerance-only" not in {h.kind for h in g.run()}
    g.arrays.clear()   # from the stats alone, too
    assert "tolerance-only" not in {h.kind for h in g.run()}


def test_passing_noise_is_no_hazard():
    g = varying(G().node("n"))
    for k in range(3):
        g.out("n", "y", k, [1.0 + k, 2.0], exp=[1.0 + k + 1e-7, 2.0])
    assert g.run() == []


# -- mutated-after-trace ----------------------------------------------------------------------------

def test_mutated_after_trace_fx_differs_from_recorded_at_sample0():
    g = varying(G().node("n"))
    for k in range(3):
        g.out("n", "y", k, [1.0 + k, 2.0], exp=[0.5 + k, 2.0], fx=[0.5 + k, 2.0])
    hz = g.run()
    assert kinds(hz) == [("mutated-after-trace", "n", "y", (0, 1, 2))]
    assert "sample 0" in hz[0].message


def test_fx_differing_only_later_is_not_mutation():
    g = varying(G().node("n"))
    g.out("n", "y", 0, [1.0, 2.0])
    g.out("n", "y", 1, [2.0, 2.0], exp=[1.0, 2.0], fx=[1.0, 2.0])
    g.out("n", "y", 2, [3.0, 2.0])
    assert kinds(g.run()) == [("frozen-constant", "n", "y", (1,))]


# -- unfilled-cache -------------------------------------------------------------------------------

def _module_state_graph(h_noise0=0.0):
    """annotate.module()-style node: samples 1, 2 of state 'h' are zero placeholders."""
    g = G().node("rnn", inputs=("obs", "h"), outputs=("act", "h_out"))
    for k in range(3):
        g.inp("rnn", "obs", k, [k + 0.3, 1.0 - k])
        g.inp("rnn", "h", k, [0.0, 0.0] if k != 1 else [0.0, 0.0])
    g.out("rnn", "act", 0, [0.4, 0.6])
    g.out("rnn", "h_out", 0, [0.2, 0.3], exp=[0.2 + h_noise0, 0.3])
    # act was recorded with the real state: FX/export (fed h = 0) disagree, like a frozen value
    g.out("rnn", "act", 1, [0.9, 0.1], exp=[0.5, 0.2], fx=[0.5, 0.2])
    g.out("rnn", "act", 2, [0.7, 0.3], exp=[0.1, 0.8], fx=[0.1, 0.8])
    g.out("rnn", "h_out", 1, [0.0, 0.0], exp=[0.25, 0.1], fx=[0.25, 0.1])
    g.out("rnn", "h_out", 2, [0.0, 0.0], exp=[0.05, 0.4], fx=[0.05, 0.4])
    return g


def test_unfilled_cache_marks_placeholders_and_silences_the_node_on_those_samples():
    g = _module_state_graph()
    hz = g.run()
    assert kinds(hz) == [("unfilled-cache", "rnn", "h_out", (1, 2))]
    flags = {(c.port, c.sample): c.placeholder for c in g.graph.checks}
    assert flags == {("act", 0): False, ("h_out", 0): False, ("act", 1): False, ("act", 2): False,
                     ("h_out", 1): True, ("h_out", 2): True}
    assert "'h'" in hz[0].message          # the all-zero state input is named
    # idempotent
    assert kinds(diagnose(g.graph, g.arrays)) == kinds(hz)


def test_unfilled_cache_from_value_ranges_without_arrays():
    g = _module_state_graph()
    g.arrays.clear()
    assert kinds(g.run()) == [("unfilled-cache", "rnn", "h_out", (1, 2))]


def test_unfilled_cache_suppresses_tolerance_only_on_the_same_port():
    # sample 0 of h_out fails by 5x atol: on its own that would be tolerance-only
    g = _module_state_graph(h_noise0=5e-5)
    assert kinds(g.run()) == [("unfilled-cache", "rnn", "h_out", (1, 2))]


def test_legitimate_zeros_are_not_placeholders():
    # a zero-initialised state, and an output that is really zero (FX replay agrees)
    g = G().node("enc", inputs=("obs", "h"), outputs=("latent", "h"))
    for k in range(3):
        g.inp("enc", "obs", k, [k - 1.0, 0.5 * k])
        g.inp("enc", "h", k, [0.0, 0.0] if k == 0 else [0.1 * k, 0.2])
        g.out("enc", "latent", k, [0.0, 0.0] if k == 1 else [0.3 * k, 0.1])   # relu-like zero
        g.out("enc", "h", k, [0.1 * (k + 1), 0.2])
    assert g.run() == []
    assert not any(c.placeholder for c in g.graph.checks)


def test_a_frozen_value_that_happens_to_be_zero_is_not_a_placeholder():
    # y = x * mask.item(): the live mask is 0 on sample 2, the trace froze mask = 1
    g = varying(G().node("n"))
    g.out("n", "y", 0, [1.0, 2.0])
    g.out("n", "y", 1, [2.0, 4.0])
    g.out("n", "y", 2, [0.0, 0.0], exp=[3.0, 6.0], fx=[3.0, 6.0])
    assert kinds(g.run()) == [("frozen-constant", "n", "y", (2,))]
    # the same output declared as state (annotate.module / state_tensors) is a placeholder
    g.graph.nodes[0].ports[-1].role = "state"
    assert kinds(g.run()) == [("unfilled-cache", "n", "y", (2,))]


def test_samples_beyond_what_leapp_recorded_are_placeholders():
    g = G().node("n", samples=2)
    for k in range(3):
        g.inp("n", "obs", k, [k + 1.0])
    g.out("n", "y", 0, [1.0])
    g.out("n", "y", 1, [2.0])
    g.out("n", "y", 2, [0.0], exp=[0.0], fx=[0.0])
    assert kinds(g.run()) == [("unfilled-cache", "n", "y", (2,))]


# -- single-sample / identical-samples / constant-output -----------------------------------------

def test_single_sample():
    g = G().node("n", samples=1).inp("n", "obs", 0, [1.0]).out("n", "y", 0, [2.0])
    hz = g.run()
    assert kinds(hz) == [("single-sample", "n", None, (0,))]
    assert "'n'" in hz[0].message


def test_identical_samples_and_no_constant_output_for_them():
    g = G().node("n")
    for k in range(3):
        g.inp("n", "obs", k, [1.0, 2.0]).out("n", "y", k, [3.0])
    assert kinds(g.run()) == [("identical-samples", "n", None, (0, 1, 2))]


def test_identical_pair_among_varying_samples():
    g = G().node("n")
    for k, v in enumerate(([1.0], [2.0], [1.0])):
        g.inp("n", "obs", k, v).out("n", "y", k, [v[0] * 2])
    assert kinds(g.run()) == [("identical-samples", "n", None, (0, 2))]


def test_constant_output_needs_varying_inputs_and_exact_equality():
    g = varying(G().node("n", outputs=("arm", "grip")))
    for k in range(3):
        g.out("n", "arm", k, [0.1 * k, 0.2])
        g.out("n", "grip", k, [0.5])
    assert kinds(g.run()) == [("constant-output", "n", "grip", (0, 1, 2))]


def test_saturated_output_that_still_varies_is_not_constant():
    g = varying(G().node("n"))
    g.out("n", "y", 0, [-1.0, -1.0, -1.0, -1.0])
    g.out("n", "y", 1, [-0.953, 1.0, -1.0, 1.0])
    g.out("n", "y", 2, [1.0, 1.0, -1.0, 1.0])
    assert g.run() == []


# -- log-based: trace-loss / trace-refused / dropped-input ----------------------------------------

DBG = ("while tracing for {node} detected method_descriptor or builtin_function_or_method {m} but "
       "failed to find equivalent torch function. downstream _rewrite_method_descriptors should "
       "handle this by converting to call_method")


def test_trace_loss_filters_harmless_methods():
    g = varying(G().node("pol").node("norm"), node="pol")
    for m in ("dim", "size", "view", "linear", "__len__"):
        g.log("DEBUG", DBG.format(node="pol", m=m))
    assert g.run() == []
    for m in ("item", "__float__", "__int__", "tolist"):
        g.log("DEBUG", DBG.format(node="norm", m=m))
    g.log("DEBUG", DBG.format(node="norm", m="item"))
    hz = g.run()
    assert kinds(hz) == [("trace-loss", "norm", None, ())]
    for text in (".item()", "float()", "int()", ".tolist()", "(2x)"):
        assert text in hz[0].message


def test_trace_loss_boolean_context_and_numpy_attributed_to_their_nodes():
    g = G().node("a").node("b")
    g.log("INFO", "Node context initialized: a")
    g.log("ERROR", "Attempted to use TracedTensor 'gt' from node 'a' in a boolean context "
                   "(if/while/and/or/not) during tracing.\n\nThis typically happens ...")
    g.log("DEBUG", "Compiled graph module for a:\ngraph():\n    return x")
    g.log("INFO", "Node context initialized: b")
    g.log("WARNING", "No torch equivalent for numpy function median. Operation will not be traced.")
    g.log("WARNING", "No torch equivalent for numpy ufunc frexp. Operation will not be traced.")
    g.log("DEBUG", "Compiled graph module for b:\ngraph():\n    return x")
    hz = g.run()
    assert kinds(hz) == [("trace-loss", "a", None, ()), ("trace-loss", "b", None, ())]
    assert "'gt'" in hz[0].message and "boolean context" in hz[0].message
    assert "median" in hz[1].message and "frexp" in hz[1].message


def test_trace_loss_names_the_suspect_literal():
    g = G().node("norm")
    g.graph.nodes[0].fx = FxGraph(nodes=[FxNode("call_function", "div", "torch.div", ["%obs", "2.11"],
                                                literals=[2.11], suspect=True)])
    g.log("DEBUG", DBG.format(node="norm", m="item"))
    (h,) = g.run()
    assert "div = torch.div(%obs, 2.11)" in h.message


def test_dropped_input():
    g = varying(G().node("policy", inputs=("obs",), dropped=("goal",)), node="policy")
    for k in range(3):
        g.out("policy", "y", k, [k * 1.0])
    hz = g.run()
    assert kinds(hz) == [("dropped-input", "policy", "goal", ())]
    assert "'goal'" in hz[0].message


def test_trace_refused_fatal_swallowed_by_the_script():
    g = varying(G().node("n"))
    for k in range(3):
        g.out("n", "y", k, [k * 1.0])
    msg = "Error: Reentering n with new i/o obs \nbut the description has changed"
    g.log("FATAL", msg)
    (h,) = g.run()
    assert (h.kind, h.node, h.samples) == ("trace-refused", None, [])
    assert h.message.startswith(msg)


@pytest.mark.parametrize("status", ["refused", "error"])
def test_trace_refused_by_status_and_no_sample_hazards(status):
    g = G(status=status).node("n", samples=1)
    g.graph.error = "Exception: The following nodes were created but never completed: n"
    g.inp("n", "obs", 0, [1.0]).out("n", "y", 0, [1.0], exp=[5.0])
    hz = g.run()
    assert kinds(hz) == [("trace-refused", None, None, ())]
    assert g.graph.error in hz[0].message


# TorchScript's compile errors start with a newline: LEAPP's "Error compiling model X: " line holds
# no cause, the cause and the rejected call (<--- HERE) come on the lines after it.
_JIT_FATAL = ("Error compiling model fusion: \nArguments for call are not valid.\nThe following "
              "variants are available:\n  aten::norm.Scalar(Tensor self, Scalar p=2) -> Tensor:\n\n"
              "The original call is:\n  File \"<eval_with_key>.1\", line 11\n"
              "    norm = matmul.norm(p = 'fro', dim = -1);  matmul = None\n           ~~~~ <--- HERE\n")


def test_export_refusal_names_the_node_its_backend_the_cause_and_the_exporters_to_try():
    from leapp_lab.deep.exporters import narrow_error
    from leapp_lab.model.trace import TraceReport
    g = G(status="refused").node("fusion", samples=3)
    g.graph.nodes[0].backend, g.graph.nodes[0].verdict = "jit-script", "error"
    g.graph.error = g.graph.nodes[0].error = "RuntimeError: " + _JIT_FATAL
    g.log("FATAL", _JIT_FATAL)
    (h,) = g.run()
    assert h.kind == "trace-refused"
    assert "LEAPP could not export node 'fusion' with jit-script" in h.message
    assert "--exporters fusion" in h.message and "re-entries must keep" not in h.message
    g.graph.hazards = [h]
    rep = TraceReport(graphs=[g.graph])
    site = "(at norm = matmul.norm(p = 'fro', dim = -1))"
    assert rep.finding.startswith(
        "Graph 'g' was not compiled: LEAPP could not export node 'fusion' with jit-script: "
        f"Arguments for call are not valid {site}. Fix: replace the call the exporter rejects in node "
        f"'fusion' with ops jit-script supports, or wrap that call with leapp.FunctionPatch")
    # no exporter matrix ran: another exporter is something to try, never a recommendation
    assert "`leapp-lab run SCRIPT --exporters fusion`" in rep.finding
    text = str(rep)
    assert "error: RuntimeError: Error compiling model fusion: Arguments for call are not valid." in text
    assert "\n  aten::norm" not in text            # the hazard's continuation lines stay indented
    assert narrow_error(g.graph.error) == f"Arguments for call are not valid. {site}"


def test_an_exporter_failure_quotes_the_exception_and_recommends_only_an_exporter_that_passed():
    from leapp_lab.model.exporters import ExporterAttempt, ExporterMatrix
    from leapp_lab.model.messages import exporter_cause
    from leapp_lab.model.trace import TraceReport
    # torch.onnx's boilerplate around the real exception, and a pass quoted by its object repr
    dynamo = ("ConversionError: Error compiling model policy: Failed to convert the exported program to an "
              "ONNX model. This is step 3/3 of exporting the model to ONNX. Next steps:\n- If there is a "
              "missing ONNX function, implement it.\n## Exception summary\n<class 'torch.onnx._internal."
              "exporter._errors.DispatchError'>: No ONNX function found for <OpOverload(op='aten._linalg_eigh',"
              " overload='default')>. Failure message: No decompositions registered\n")
    assert exporter_cause(dynamo) == ("DispatchError: No ONNX function found for aten._linalg_eigh. Failure "
                                      "message: No decompositions registered", "aten._linalg_eigh")
    cause, op = exporter_cause("RuntimeError: Error compiling model p: An error occurred when running the "
                               "<onnx_ir.passes.PassManager object at 0x7f3ab2c0> pass after []")
    assert cause == "An error occurred when running the PassManager pass after []" and op is None
    g = G(status="refused").node("policy", samples=3)
    g.graph.nodes[0].backend, g.graph.nodes[0].verdict = "onnx-dynamo", "error"
    g.graph.error = dynamo
    rep = TraceReport(graphs=[g.graph])
    f = rep.finding
    assert "No ONNX function found for aten._linalg_eigh" in f and "Next steps" not in f and "0x" not in f
    assert "replace aten._linalg_eigh in node 'policy'" in f and "export_with" not in f
    attempts = [ExporterAttempt("policy", b, outcome=o) for b, o in
                (("onnx", "export-error"), ("onnx-torchscript", "export-error"), ("jit", "pass"))]
    g.graph.sections["exporters"] = ExporterMatrix(status="ok", nodes=["policy"], attempts=attempts)
    assert "Fix: export node 'policy' with jit (export_with=\"jit\")" in rep.finding
    attempts[2].outcome = "export-error"
    f = rep.finding
    assert "no other exporter exported and validated it either" in f and "export_with" not in f


def test_strict_validation_fatal_is_not_a_refusal():
    g = varying(G().node("n"))
    for k in range(3):
        g.out("n", "y", k, [k * 1.0])
    g.log("FATAL", "Model validation failed for 1 node(s): ['n']")
    assert g.run() == []


# -- without arrays: the rules fall back on the stored statistics --------------------------------------

def test_rules_work_from_stats_when_arrays_are_missing():
    g = G().node("n")
    g.out("n", "y", 0, [1.0, 2.0], stats=False)
    g.out("n", "y", 1, [2.0, 4.0], exp=[1.0, 2.0], fx=[1.0, 2.0], stats=False)
    g.out("n", "y", 2, [3.0, 6.0], exp=[1.5, 3.0], fx=[1.5, 3.0], stats=False)
    assert kinds(g.run()) == [("frozen-constant", "n", "y", (1, 2))]


def test_trace_loss_numpy_scalar_and_torchscript_charged_to_the_node_being_traced():
    g = G().node("a")
    g.log("INFO", "Node context initialized: a")
    g.log("WARNING", "TracedNpArray 'mean_1'.item() called during tracing. The value is frozen.")
    g.log("WARNING", "Detected pre-compiled TorchScript ScriptFunction(s) in scope: ['f (global)']  \n"
                     "ScriptFunction.__call__ bypasses TracedTensor tracing")
    g.log("DEBUG", "Compiled graph module for a:\ngraph():\n    return x")
    (h,) = g.run()
    assert (h.kind, h.node) == ("trace-loss", "a")
    assert "NumPy .item() on the traced array 'mean_1'" in h.message
    assert "in scope (['f (global)']) bypass tracing" in h.message


def test_the_finding_of_a_cell_that_raised_says_fix_once():
    # the cell raised half-way: "Fix the exception ...", not "Fix: Fix the exception ..."
    from leapp_lab.model.trace import TraceReport
    g = G(status="error").node("n", samples=1)
    g.graph.error = "ValueError: sensor glitch at step 1"
    g.graph.hazards = g.run()
    finding = TraceReport(graphs=[g.graph]).finding
    assert finding.startswith("Graph 'g' was not compiled: the traced code raised: ValueError: sensor glitch")
    assert " Fix the exception the traced code raised" in finding and "Fix: Fix" not in finding, finding


def test_a_trace_whose_replay_could_not_run_is_no_pass():
    # every check validates, but --replay's step_fn raised: the finding says so (red), not "no hazard"
    from leapp_lab.model.sections import make
    from leapp_lab.model.trace import TraceReport
    g = G().node("n")
    for k in range(3):
        g.inp("n", "obs", k, [k + 1.0]).out("n", "y", k, [2 * k + 2.0])
    g.graph.hazards = g.run()
    rep = TraceReport(graphs=[g.graph])
    assert rep.finding_record().status == "pass", rep.finding
    g.graph.sections["replay"] = make("replay", "failed", "the fresh replay (step_fn) raised KeyError: 'pol' (at x.py:2)")
    f = rep.finding_record()
    assert f.status == "fail" and f.text.startswith("Every node/port/sample of graph 'g' validates (3 checks), but the "
                                                    "replay of graph 'g' could not run: the fresh replay (step_fn) raised KeyError"), f.text


class PassError(RuntimeError):
    pass


class RewritePass:         # reprs as '<test_hazard_rules.RewritePass object at 0x…>', as onnxscript's do
    pass


class PassManager:
    pass


def test_a_pass_manager_failure_is_named_by_the_pass_and_the_exception_that_started_it():
    """dynamo's PassError quotes '<onnx_ir.passes.PassManager object at 0x…>': the chained
    traceback's first exception and the innermost pass say what went wrong."""
    import traceback

    from leapp_lab.model.messages import root_exception
    from leapp_lab.model.trace import TraceReport

    def inner():
        raise TypeError("TracedTensor.numpy() got an unexpected keyword argument 'force'")

    try:
        try:
            try:
                inner()
            except TypeError as e:
                raise PassError(f"An error occurred when running the '{RewritePass()!r}' pass after []") from e
        except PassError as e:
            raise PassError(f"An error occurred when running the '{PassManager()!r}' pass after []") from e
    except PassError as e:
        chain = "".join(traceback.format_exception(e))
        outer = f"PassError: Error compiling model policy: {e}"
    assert root_exception(chain) == ("TypeError: TracedTensor.numpy() got an unexpected keyword argument "
                                      "'force'", "RewritePass")
    assert root_exception("PassError: no traceback here") is None
    g = G(status="refused").node("policy", samples=3)
    g.graph.nodes[0].backend, g.graph.nodes[0].verdict = "onnx-dynamo", "error"
    g.graph.error = outer
    rep = TraceReport(graphs=[g.graph], script_error=chain)
    f = rep.finding
    assert "TypeError: TracedTensor.numpy() got an unexpected keyword argument 'force' (in the exporter's " \
           "RewritePass)" in f, f
    assert "object at 0x" not in f and "state_tensors" in f and "eval mode" in f

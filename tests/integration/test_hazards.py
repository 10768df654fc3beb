"""Every hazard kind from a real LEAPP pipeline with that bug; clean pipelines raise none.

Each pipeline in tests/pipelines/ is traced once (session fixture) through ``leapp_lab.trace`` with
its own OPTIONS, and must produce exactly its EXPECTED hazards: kind, node, port and samples, no
more, no fewer (precedence and suppression included). The tests then check, from the stored arrays
with plain numpy, that the evidence behind each hazard is really there.
"""
from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

PIPELINES = Path(__file__).resolve().parents[1] / "pipelines"
NAMES = sorted(p.stem for p in PIPELINES.glob("*.py") if not p.stem.startswith("_"))


def load_pipeline(name: str):
    spec = importlib.util.spec_from_file_location(f"hazard_pipeline_{name}", PIPELINES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def traced(tmp_path_factory):
    """{pipeline name: (module, TraceReport)}; each pipeline traced once."""
    import leapp_lab

    out = tmp_path_factory.mktemp("hazard_pipelines")
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in NAMES:
            mod = load_pipeline(name)
            session = leapp_lab.trace(mod.NAME, save_path=str(out), **mod.OPTIONS)
            try:
                with session:
                    mod.body()
            except Exception as exc:   # crash_midtrace: the body's own exception propagates
                raises = getattr(mod, "RAISES", None)    # a pipeline LEAPP refuses to compile
                assert name == "crash_midtrace" or (raises and raises in str(exc)), f"{name} raised {exc!r}"
            assert session.report is not None, name
            results[name] = (mod, session.report)
    return results


def found(report):
    return sorted((h.kind, h.node, h.port, list(h.samples)) for h in report.graph.hazards)


def expected(mod):
    return sorted((k, n, p, list(s)) for k, n, p, s in mod.EXPECTED)


@pytest.mark.parametrize("name", NAMES)
def test_pipeline_raises_exactly_its_hazards(traced, name):
    mod, report = traced[name]
    assert found(report) == expected(mod)
    for h in report.graph.hazards:
        # the message names what it is about
        if h.node:
            assert repr(h.node) in h.message, h.message
        if h.port:
            assert repr(h.port) in h.message, h.message
        if h.samples and h.kind != "single-sample":
            assert ", ".join(map(str, h.samples)) in h.message, h.message


def test_every_kind_is_produced_by_some_pipeline(traced):
    from leapp_lab.model.trace import HAZARD_KINDS

    kinds = {h.kind for _, r in traced.values() for h in r.graph.hazards}
    assert kinds == set(HAZARD_KINDS)


def test_clean_pipelines_have_several_varying_samples_and_pass(traced):
    for name in ("clean_mlp", "clean_recurrent", "clean_tanh"):
        _, report = traced[name]
        g = report.graph
        assert g.verdict == "pass", name
        assert all(n.samples >= 3 for n in g.nodes), name
        assert all(c.passed for c in g.checks) and not any(c.placeholder for c in g.checks)


def test_clean_recurrent_state_is_legitimately_zero_at_sample_0(traced):
    _, report = traced["clean_recurrent"]
    a = report.arrays()
    assert not np.any(a["encoder/h/0/input"])            # zero-initialised ...
    assert np.any(a["encoder/h/1/input"])                # ... then really recorded
    assert np.array_equal(a["encoder/h/1/input"], a["encoder/h/0/recorded"])


def test_clean_tanh_really_saturates(traced):
    _, report = traced["clean_tanh"]
    a = report.arrays()
    rec = np.stack([a[f"policy/action/{k}/recorded"] for k in range(3)])
    assert np.mean(np.abs(rec) == 1.0) > 0.5
    assert not np.array_equal(rec[0], rec[1])


def _arr(report, node, port, k, kind):
    return np.asarray(report.arrays()[f"{node}/{port}/{k}/{kind}"], dtype=np.float64)


def _close(a, b, rtol=1e-3, atol=1e-5):
    return bool(np.all(np.abs(a - b) <= atol + rtol * np.abs(b)))


@pytest.mark.parametrize("name", ["frozen_item", "bool_branch", "numpy_median"])
def test_frozen_constant_evidence(traced, name):
    mod, report = traced[name]
    (h,) = [h for h in report.graph.hazards if h.kind == "frozen-constant"]
    assert _close(_arr(report, h.node, h.port, 0, "exported"), _arr(report, h.node, h.port, 0, "recorded"))
    for k in h.samples:
        exp, fx, rec = (_arr(report, h.node, h.port, k, x) for x in ("exported", "fx", "recorded"))
        assert _close(exp, fx) and not _close(fx, rec)


def test_frozen_item_trace_loss_names_item_and_the_literal(traced):
    _, report = traced["frozen_item"]
    (h,) = [h for h in report.graph.hazards if h.kind == "trace-loss"]
    assert ".item()" in h.message and "torch.div" in h.message


def test_bool_and_numpy_trace_loss_messages(traced):
    (b,) = [h for h in traced["bool_branch"][1].graph.hazards if h.kind == "trace-loss"]
    assert "boolean context" in b.message
    (n,) = [h for h in traced["numpy_median"][1].graph.hazards if h.kind == "trace-loss"]
    assert "median" in n.message and "int()" in n.message


def test_harmless_debug_hints_do_not_count(traced):
    # LEAPP logs "failed to find equivalent torch function" for linear in this pipeline too
    _, report = traced["mutated_normalizer"]
    assert any("builtin_function_or_method linear" in r.message for r in report.graph.log)
    assert "trace-loss" not in {h.kind for h in report.graph.hazards}


def test_mutated_after_trace_evidence(traced):
    _, report = traced["mutated_normalizer"]
    fx, rec = _arr(report, "policy", "action", 0, "fx"), _arr(report, "policy", "action", 0, "recorded")
    assert not _close(fx, rec)
    assert _close(_arr(report, "policy", "action", 0, "exported"), fx)


def test_unfilled_cache_placeholders(traced):
    _, report = traced["module_state"]
    g = report.graph
    flags = {(c.port, c.sample): c.placeholder for c in g.checks}
    assert flags == {("act", 0): False, ("h", 0): False, ("act", 1): False, ("h", 1): True,
                     ("act", 2): False, ("h", 2): True}
    for k in (1, 2):
        assert not np.any(_arr(report, "rnn", "h", k, "recorded"))
        assert np.any(_arr(report, "rnn", "h", k, "fx"))
        assert not np.any(_arr(report, "rnn", "h", k, "input"))
    # LEAPP itself fails the node on those samples: the verdicts exist, the hazards ignore them
    assert {c.sample for c in g.checks if c.passed is False} == {1, 2}
    # the flag survives the saved report
    import leapp_lab
    again = leapp_lab.load(report.path)
    assert [c.placeholder for c in again.graph.checks] == [c.placeholder for c in g.checks]
    assert found(again) == found(report)


def test_export_mismatch_evidence(traced):
    _, report = traced["floor_div_export"]
    for k in range(3):
        rec, fx, exp = (_arr(report, "quantize", "bins", k, x) for x in ("recorded", "fx", "exported"))
        assert np.array_equal(fx, rec)
        assert np.max(np.abs(exp - rec)) == 1.0            # truncation instead of floor: one bin
        assert np.all((exp != rec) == ((exp - rec) == 1.0))


def test_tolerance_only_evidence(traced):
    _, report = traced["log1p_noise"]
    for c in report.graph.checks:
        rec, exp = _arr(report, "feat", "y", c.sample, "recorded"), _arr(report, "feat", "y", c.sample, "exported")
        need = np.max(np.abs(exp - rec) - c.rtol * np.abs(rec))
        assert c.passed is False and 1e-8 < need <= 1e-7


def test_identical_and_constant_evidence(traced):
    _, rep = traced["repeated_input"]
    ins = [_arr(rep, "policy", "obs", k, "input") for k in range(3)]
    assert np.array_equal(ins[0], ins[1]) and np.array_equal(ins[0], ins[2])
    _, rep = traced["constant_gripper"]
    ins = [_arr(rep, "policy", "obs", k, "input") for k in range(3)]
    assert not np.array_equal(ins[0], ins[1])
    assert all(np.all(_arr(rep, "policy", "gripper", k, "recorded") == 0.5) for k in range(3))


def test_dropped_input_is_not_in_the_export(traced):
    _, report = traced["unused_input"]
    node = report.graph.node("policy")
    assert node.dropped_inputs == ["goal"]
    assert [p.name for p in node.inputs()] == ["obs"]


def test_trace_refused_carries_leapps_message(traced):
    _, report = traced["shape_change"]
    fatal = [r.message for r in report.graph.log if r.level == "FATAL"]
    assert fatal and "Reentering policy" in fatal[0]
    (h,) = report.graph.hazards
    assert h.message.startswith(fatal[0].strip())
    _, report = traced["crash_midtrace"]
    assert report.graph.status == "error"
    (h,) = report.graph.hazards
    assert "lidar frame missing at step 1" in h.message


@pytest.mark.parametrize("name,rc", [("frozen_item", 1), ("shape_change", 1), ("crash_midtrace", 2)])
def test_attach_mode_reports_the_same_hazards(tmp_path, name, rc):
    """The pipelines' own __main__ (plain leapp.start/stop/compile_graph) under `leapp-lab run`."""
    import json
    import subprocess
    import sys

    out_json = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "leapp_lab.cli", "run", str(PIPELINES / f"{name}.py"),
                           "--json", str(out_json), "--", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == rc, proc.stdout[-2000:] + proc.stderr[-2000:]
    graphs = json.loads(out_json.read_text())["graphs"]
    got = sorted((h["kind"], h["node"], h["port"], h["samples"]) for g in graphs for h in g["hazards"])
    assert got == expected(load_pipeline(name))


def test_a_declared_static_output_is_marked_static_and_never_constant_output(traced):
    _, report = traced["static_gains"]
    g = report.graph
    ports = {p.name: p for p in g.nodes[0].outputs()}
    assert ports["joint_pos_kp_gains"].static and not ports["action"].static
    a = report.arrays()
    # the evidence that would have raised constant-output is there: equal on every sample
    assert all(np.array_equal(a["policy/joint_pos_kp_gains/0/recorded"],
                              a[f"policy/joint_pos_kp_gains/{k}/recorded"]) for k in (1, 2))
    assert g.hazards == [] and g.verdict == "pass"

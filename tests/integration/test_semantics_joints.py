"""Errors by meaning (issue 20, part 5) on a real LEAPP pipeline whose ports declare semantics.

``tests/pipelines/joint_semantics.py``: a joint policy; ``action`` names six joints (unit rad),
``chunk`` is a 3-step action chunk along a ``TemporalAxis``; a value frozen at trace time perturbs
the *left knee* only (and only step 2 of the chunk). The per-element breakdown of every failing
sample must name ``left_knee`` / ``t+2/left_knee`` as the worst element, with numbers recomputed
here from the stored arrays in float64, in the report, its JSON (``leapp-lab run --json``), the text,
the view dict and the replay rows."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import leapp_lab
from leapp_lab.cli import main
from deep_pipelines import PIPELINES, load_pipeline, trace
from tests import oracle

JOINTS = ["left_hip", "left_knee", "left_ankle", "right_hip", "right_knee", "right_ankle"]


@pytest.fixture(scope="module")
def joint(tmp_path_factory):
    return trace(load_pipeline("joint_semantics"), tmp_path_factory.mktemp("joint"))


def test_ports_keep_their_declared_meaning(joint):
    g = joint.graph
    node = g.node("policy")
    sems = {p.name: p.semantics for p in node.ports}
    assert sems["q"].kind == "state/joint/position" and sems["q"].element_names == [JOINTS]
    assert (sems["action"].kind, sems["action"].unit) == ("target/joint/position", "rad")
    assert sems["chunk"].element_names == ["__temporal_axis__", JOINTS]
    assert sems["chunk"].temporal_period_ms == 20.0


def test_the_perturbed_joint_is_the_worst_element(joint):
    g = joint.graph
    arrays = joint.graph_arrays(g)
    failing = [c for c in g.checks if c.passed is False]
    assert {(c.port, c.sample) for c in failing} == {(p, k) for p in ("action", "chunk") for k in (1, 2, 3)}
    for c in failing:
        e = np.asarray(arrays[f"policy/{c.port}/{c.sample}/exported"], np.float64)
        r = np.asarray(arrays[f"policy/{c.port}/{c.sample}/recorded"], np.float64)
        if c.port == "action":
            names = JOINTS
            d, rr = (e - r).reshape(-1, 6), r.reshape(-1, 6)
            assert c.worst_element == "left_knee"
        else:
            names = [f"t+{t}/{j}" for t in range(3) for j in JOINTS]
            d, rr = (e - r).reshape(-1, 18), r.reshape(-1, 18)
            assert c.worst_element == "t+2/left_knee"
        assert [x.name for x in c.elements] == names
        for i, x in enumerate(c.elements):
            assert x.max_abs == pytest.approx(float(np.max(np.abs(d[:, i]))), rel=1e-12, abs=0)
            want = oracle.nrmse(e.reshape(rr.shape)[:, i], rr[:, i])
            assert x.nrmse == pytest.approx(float(want), rel=1e-9)
        # the worst element carries the whole port's max |diff|
        assert max(x.max_abs for x in c.elements) == pytest.approx(c.stats["max"], rel=1e-12)
    # sample 0 validates: whatever element is "worst" there differs by rounding only
    for c in (x for x in g.checks if x.sample == 0):
        assert c.passed and all(x.max_abs <= c.atol for x in c.elements)
    assert "worst_element" in g.validation.to_dataframe().columns


def test_text_and_view_name_the_worst_joint_and_its_meaning(joint):
    text = str(joint)
    assert "worst element left_knee (max |diff|" in text and "target/joint/position, rad" in text
    assert "worst element t+2/left_knee" in text
    from leapp_lab.views.viewdict import build_view
    view = build_view(joint)
    row = next(r for r in view["table"]["rows"] if r["id"] == "policy/action/2")
    assert row["cells"]["worst_element"] == "left_knee" and row["sub"] == "target/joint/position, rad"
    keys = row["reason"].split(", ")
    assert view["table"]["reasons"][keys[-1]] == "worst element left_knee (target/joint/position, rad)"
    el = row["samples"][0]["elements"]
    assert el["names"] == JOINTS and el["worst"] == "left_knee"
    assert el["max_abs"][1] == max(el["max_abs"])
    ports = {p["name"]: p for p in view["nodes"]["policy"]["ports"]}
    assert "time (20 ms)" in ports["chunk"]["meaning"] and "left_knee" in ports["chunk"]["meaning"]


def test_replay_rows_break_down_by_element(joint):
    res = leapp_lab.replay(joint)
    run = res.closed_loop
    bad = [r for r in run.rows if r.passed is False]
    assert bad and {r.worst_element for r in bad if r.output == "policy/action"} == {"left_knee"}
    out = {o.output: o for o in run.outputs}
    assert out["policy/chunk"].worst_element == "t+2/left_knee"
    assert out["policy/action"].elements[1].max_abs == pytest.approx(out["policy/action"].max_abs, rel=1e-12)


def test_parity_rows_and_outputs_name_the_perturbed_joint(joint):
    """Parity (fresh inputs) breaks every check and every output down by element: the export froze
    the knee's offset, so on fresh observations only the left knee (step 2 of the chunk) differs."""
    mod = load_pipeline("joint_semantics")
    par = leapp_lab.parity(joint, mod.Original(), n=4)
    worst = {"policy/action": "left_knee", "policy/chunk": "t+2/left_knee"}
    assert {c.port for c in par.checks if c.passed is False} == {"action", "chunk"}
    for c in par.checks:
        assert [e.name for e in c.elements][:6] == (JOINTS if c.port == "action" else [f"t+0/{j}" for j in JOINTS])
        if c.passed is False:
            assert c.worst_element == worst[f"policy/{c.port}"]
            others = [e.max_abs for e in c.elements if e.name != c.worst_element]
            assert max(others) < 1e-5 < c.elements[[e.name for e in c.elements].index(c.worst_element)].max_abs
    for o in par.outputs:
        assert o.worst_element == worst[o.output]
    df = par.to_dataframe()
    assert set(df.loc[df["passed"] == False, "worst_element"]) == {"left_knee", "t+2/left_knee"}  # noqa: E712
    d = json.loads(json.dumps(par.to_dict()))
    assert d["outputs"][0]["elements"][1]["name"] == "left_knee"


def test_run_json_holds_elements_and_worst_element(tmp_path):
    js = tmp_path / "run.json"
    rc = main(["run", str(PIPELINES / "joint_semantics.py"), "--json", str(js), "--quiet", "--no-fail",
               "--", str(tmp_path / "out")])
    assert rc == 0
    g = json.loads(js.read_text())["graphs"][0]
    c = next(x for x in g["checks"] if (x["port"], x["sample"]) == ("action", 1))
    assert c["worst_element"] == "left_knee"
    assert [e["name"] for e in c["elements"]] == JOINTS
    assert set(c["elements"][0]) == {"name", "max_abs", "nrmse"}
    port = next(p for p in g["nodes"][0]["ports"] if p["name"] == "chunk")
    assert port["semantics"]["temporal_period_ms"] == 20.0


def test_verify_of_the_prepared_node_breaks_outputs_down_by_joint(joint, tmp_path, capsys):
    """verify outputs of a prepared node (Deliver 5): ``prepare --from-trace`` keeps LEAPP's artifact
    (which froze the knee's offset) and the recorded outputs as the reference; compiled for ``ort``,
    verify's output rows name the perturbed joint, numbers recomputed from the two npz files."""
    d = tmp_path
    rep = leapp_lab.prepare(joint, d / "policy.onnx", d / "policy.npz", d / "policy.reference.npz", node="policy")
    assert rep.from_trace.semantics["action"].element_names == [JOINTS]
    assert main(["compile", str(d / "policy.onnx"), "--engine", "ort", "--npz", str(d / "policy.npz"),
                 "--out", str(d / "build"), "--quiet"]) == 0
    js = d / "verify.json"
    rc = main(["verify", str(d / "policy.reference.npz"), str(d / "build"), "--json", str(js),
               "--out", str(d / "runs")])
    assert rc == 0
    text = capsys.readouterr().out
    rows = {r["name"]: r for r in json.loads(js.read_text())["rows"]}
    assert rows["action"]["worst_element"] == "left_knee" and rows["chunk"]["worst_element"] == "t+2/left_knee"
    eng = load_npz_file(d / "build" / "sample_outputs.npz")
    ref = load_npz_file(d / "policy.reference.npz")
    for port, names in (("action", JOINTS), ("chunk", [f"t+{t}/{j}" for t in range(3) for j in JOINTS])):
        e = np.asarray(eng[port], np.float64).reshape(-1, len(names))
        r = np.asarray(ref[port], np.float64).reshape(-1, len(names))
        got = rows[port]["elements"]
        assert [x["name"] for x in got] == names
        for i, x in enumerate(got):
            assert x["max_abs"] == pytest.approx(float(np.max(np.abs(e[:, i] - r[:, i]))), rel=1e-12)
            want = oracle.nrmse(e[:, i], r[:, i])
            assert x["nrmse"] == pytest.approx(float(want), rel=1e-9)
    # the text names it with the port's meaning; the report reloads it; the view draws it
    assert "action: worst element left_knee (max |diff|" in text and "target/joint/position, rad)" in text
    v = leapp_lab.load(sorted((d / "runs" / "runs").iterdir())[-1])
    act = v.row("action")
    assert act.worst_element == "left_knee" and act.meaning == "target/joint/position, rad"
    assert "worst_element" in v.to_dataframe().columns
    from leapp_lab.views.viewdict import build_view
    view = build_view(v)
    row = next(x for x in view["table"]["rows"] if x["id"] == "action")
    assert row["cells"]["worst_element"] == "left_knee"
    assert view["table"]["reasons"][row["reason"].split(", ")[-1]] == \
        "worst element left_knee (target/joint/position, rad)"
    el = row["samples"][0]["elements"]
    assert el["names"] == JOINTS and el["worst"] == "left_knee" and el["max_abs"][1] == max(el["max_abs"])


def load_npz_file(p):
    from leapp_lab.model.jsonio import load_npz
    return load_npz(p)

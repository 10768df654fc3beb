"""Errors by meaning (leapp_lab/model/semantics.py): element names from LEAPP's axis items, the
per-element numbers against an independent float64 formula, the worst element, index fallback."""
import json
import math

import numpy as np
import pytest

from leapp_lab.model.semantics import (MAX_INDEX_ELEMENTS, ElementSums, PortSemantics, breakdown,
                                       element_layout, worst_text)
from leapp_lab.model.trace import GraphReport, NodeReport, PortInfo, SampleCheck

JOINTS = ["hip", "knee", "ankle"]


def test_from_leapp_keeps_kind_names_period_and_unit():
    class Kind:                       # an Input/OutputKindEnum member: its value is kept
        value = "target/joint/position"
    sem = PortSemantics.from_leapp({"kind": Kind(), "element_names": ["__temporal_axis__", JOINTS],
                                    "temporal_period_ms": 20, "unit": "rad", "frame": "base"})
    assert sem.kind == "target/joint/position" and sem.unit == "rad" and sem.temporal_period_ms == 20.0
    assert sem.element_names == ["__temporal_axis__", JOINTS] and sem.extra == {"frame": "base"}
    assert sem.label() == "target/joint/position, rad"
    assert PortSemantics.from_leapp({}) is None and PortSemantics.from_leapp(None) is None
    assert PortSemantics.from_dict(json.loads(json.dumps(sem.to_dict()))) == sem


def test_layout_names_trailing_axes_temporal_and_unnamed():
    flat = element_layout(PortSemantics(element_names=[JOINTS]), [1, 3])
    assert flat.names == JOINTS and flat.axes == 1 and flat.source == "semantics"
    chunk = element_layout(PortSemantics(element_names=["__temporal_axis__", JOINTS]), [1, 2, 3])
    assert chunk.names == ["t+0/hip", "t+0/knee", "t+0/ankle", "t+1/hip", "t+1/knee", "t+1/ankle"]
    unnamed = element_layout(PortSemantics(element_names=[None, ["l", "r"]]), [2, 2])
    assert unnamed.names == ["0/l", "0/r", "1/l", "1/r"]
    wrong = element_layout(PortSemantics(element_names=[["a", "b"]]), [1, 3])
    assert wrong.names == ["0", "1", "2"] and "2 names for 3 elements" in wrong.note


def test_index_fallback_only_for_small_ports():
    assert element_layout(None, [1, 6]).names == [f"[{i}]" for i in range(6)]
    assert element_layout(None, [2, 2]).names == ["[0,0]", "[0,1]", "[1,0]", "[1,1]"]
    assert element_layout(None, [1, MAX_INDEX_ELEMENTS]) is not None
    assert element_layout(None, [1, MAX_INDEX_ELEMENTS + 1]) is None
    assert element_layout(None, [1, 1]) is None and element_layout(None, []) is None


def test_element_numbers_match_an_independent_formula_pooled_over_leading_axes():
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(4, 2, 3)).astype(np.float32)
    val = ref + rng.normal(scale=1e-3, size=ref.shape).astype(np.float32)
    val[:, 1, 1] += 0.25                 # t+1/knee is off
    lay = element_layout(PortSemantics(element_names=["__temporal_axis__", JOINTS]), ref.shape)
    s = ElementSums(lay)
    assert s.add(val[:2], ref[:2]) and s.add(val[2:], ref[2:])     # merged over two records
    got = {e.name: e for e in s.errors()}
    for t in range(2):
        for j, name in enumerate(JOINTS):
            d = [float(val[b, t, j]) - float(ref[b, t, j]) for b in range(4)]
            r = [float(ref[b, t, j]) for b in range(4)]
            e = got[f"t+{t}/{name}"]
            assert e.max_abs == pytest.approx(max(abs(x) for x in d), rel=1e-12)
            want = math.sqrt(sum(x * x for x in d) / 4) / math.sqrt(sum(x * x for x in r) / 4)
            assert e.nrmse == pytest.approx(want, rel=1e-9)
    assert s.worst() == "t+1/knee"


def test_worst_is_none_when_nothing_differs_and_nonfinite_counts_first():
    a = np.ones((1, 3), np.float32)
    els, worst = breakdown(PortSemantics(element_names=[JOINTS]), a, a.copy())
    assert [e.max_abs for e in els] == [0.0, 0.0, 0.0] and worst is None
    b = a.copy()
    b[0, 0] += 5.0
    b[0, 2] = np.nan                     # one-sided NaN: LEAPP fails it whatever the tolerance
    _, worst = breakdown(PortSemantics(element_names=[JOINTS]), b, a)
    assert worst == "ankle"
    assert breakdown(None, a, np.ones((1, 4), np.float32)) == ([], None)   # shapes differ


def test_worst_text_names_element_number_and_meaning():
    els, worst = breakdown(PortSemantics(kind="target/joint/position", unit="rad", element_names=[JOINTS]),
                           np.array([[0.0, 0.5, 0.0]]), np.zeros((1, 3)))
    text = worst_text(worst, PortSemantics(kind="target/joint/position", unit="rad"), els)
    assert text == "worst element knee (max |diff| 0.5; target/joint/position, rad)"


def test_report_json_round_trip_and_old_reports_load():
    sem = PortSemantics(kind="k", element_names=[JOINTS])
    c = SampleCheck("n", "y", 1, False, 1e-3, 1e-5)
    c.elements, c.worst_element = breakdown(sem, np.array([[0.0, 1.0, 0.0]]), np.zeros((1, 3)))
    g = GraphReport("g", nodes=[NodeReport("n", 0, ports=[PortInfo("y", "out", semantics=sem)])], checks=[c])
    back = GraphReport.from_dict(json.loads(json.dumps(g.to_dict())))
    assert back.checks[0].worst_element == "knee"
    assert [e.to_dict() for e in back.checks[0].elements][1] == {"name": "knee", "max_abs": 1.0, "nrmse": None}
    assert back.semantics_of("n/y") == sem and back.semantics_of("n/x") is None
    d = g.to_dict()
    for p in d["nodes"][0]["ports"]:
        p.pop("semantics")
    d["checks"][0].pop("elements")
    d["checks"][0].pop("worst_element")
    old = GraphReport.from_dict(d)         # a report.json written before semantics were kept
    assert old.checks[0].elements == [] and old.checks[0].worst_element is None
    assert old.semantics_of("n/y") is None

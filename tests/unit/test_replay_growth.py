"""The fitted growth per step of a replay's error and its trend (leapp_lab/deep/growth.py), and the
view of an engine replay (views/deep_view.py, text_deep.py) from a hand-made section."""
import math

import numpy as np
import pytest

from leapp_lab.deep.growth import fit_growth, trend_text
from leapp_lab.model.replay import EngineNode, EngineReplay, ReplayOutput, ReplayResult, ReplayRow, ReplayRun

ATOL = 1e-5


def test_growth_is_the_least_squares_factor_per_step():
    rng = np.random.default_rng(0)
    errs = [1e-3 * 1.15 ** k * math.exp(rng.normal(scale=0.05)) for k in range(12)]
    g, trend = fit_growth(list(enumerate(errs)), [], ATOL)
    b = np.polyfit(np.arange(12.0), np.log(errs), 1)[0]
    assert g == pytest.approx(math.exp(b), rel=1e-12) and trend == "grows"


def test_trends_saturates_damped_steady_and_noise():
    sat = [(k, 1e-3 * min(1.4 ** k, 40.0)) for k in range(20)]
    assert fit_growth(sat, [], ATOL)[1] == "saturates"
    assert fit_growth([(k, 1e-2 * 0.8 ** k) for k in range(10)], [], ATOL)[1] == "damped"
    assert fit_growth([(k, 3e-3) for k in range(10)], [], ATOL) == (1.0, "steady")
    # rounding noise below 10 % of atol fits no growth, however it wanders
    noise = [(k, 1e-8 * (1 + 9 * (k % 2))) for k in range(10)]
    assert fit_growth(noise, [], ATOL) == (1.0, "steady")
    assert fit_growth([(0, 1e-3), (1, 2e-3)], [], ATOL) == (None, None)
    assert trend_text(None, None).startswith("no fit")


def test_growth_never_spans_an_episode_reset():
    # each episode grows x1.2 per step; across the reset the error drops back
    pts = [(k, 1e-3 * 1.2 ** (k % 8)) for k in range(16)]
    g, trend = fit_growth(pts, [8], ATOL)
    assert g == pytest.approx(1.2, rel=1e-9) and trend == "grows"
    g_all, _ = fit_growth(pts, [], ATOL)
    assert g_all < 1.2                       # a fit across the reset would understate it


def _engine_section():
    rows = [ReplayRow(k, "policy/action", 1e-3 * (k + 1), 0.01 * (k + 1), 1.0, k < 2, False,
                      fp32_max_abs=1e-3 * (k + 1), own_error=1e-3, inherited_error=1e-3 * k) for k in range(4)]
    run = ReplayRun(tier="a", status="diverged", steps=4, rows=rows,
                    outputs=[ReplayOutput("policy/action", steps=4, max_abs=4e-3, max_step=3, first_fail=2,
                                          first_fail_step=2, growth_per_step=1.5, trend="grows",
                                          own_error_max=1e-3, inherited_error_max=3e-3)],
                    first_divergent={"step": 2, "output": "policy/action"}, notes=["state-carried"])
    eng = EngineReplay("ort-int8", status="diverged", closed_loop=run, max_nrmse=0.01,
                       nodes=[EngineNode("policy", "ort-int8", source="built here")])
    return ReplayResult(status="ok", tier="a", closed_loop=ReplayRun(tier="a", steps=4), engines=[eng])


def test_engine_runs_in_the_view_dict_and_the_text():
    from types import SimpleNamespace

    from leapp_lab.views.deep_view import _replay
    from leapp_lab.views.text_deep import _replay as text
    sec = _engine_section()
    e = _replay(sec, "g", SimpleNamespace(semantics_of=lambda o: None))
    keys = [r["key"] for r in e["runs"]]
    assert keys == ["g:a", "g:ort-int8:a"]
    run = e["runs"][1]
    assert run["engine"] == "ort-int8" and run["split"][0]["own"] == [1e-3] * 4
    assert run["split"][0]["inherited"] == [0.0, 1e-3, 2e-3, 3e-3]
    assert run["rows"][3]["cells"]["inherited_error"] == 3e-3 and run["rows"][3]["status"] == "fail"
    assert e["engines"][0]["nodes"][0]["runs_on"] == "ort-int8"
    lines = "\n".join(text(sec))
    assert "on ort-int8: DIVERGED (policy on ort-int8)" in lines
    assert "beyond nrmse 0.01 from step 2 on policy/action" in lines and "state-carried" in lines


def test_engine_notes_without_feedback_blame_upstream_not_the_state():
    """A feedback-free graph (normalizer -> actor -> scaler) carries nothing from step to step: an
    output downstream of the drifting node inherits its error from upstream, not through a state,
    and a trend fitted over independent steps means nothing."""
    from types import SimpleNamespace

    from leapp_lab.deep.engine_replay import _explain

    def notes(feedback):
        run = _engine_section().engines[0].closed_loop
        run.notes = []
        _explain(run, SimpleNamespace(fp32=SimpleNamespace(feedback=feedback)), "ort-int8", 0.01)
        return "\n".join(run.notes)

    alone = notes([])
    assert "upstream-carried" in alone and "inherited from upstream nodes up to 0.003" in alone
    assert "state" not in alone.split("\n")[0] and "grows" not in alone and "has no feedback" in alone
    looped = notes([("policy/action", "policy/prev_action")])
    assert "carried by the state (state-carried)" in looped and "error grows (×1.5/step fitted)" in looped


def test_engine_notes_across_tiers_reach_the_text():
    """The engine's own notes (fresh vs recorded own error: the int8 calibration range) were in the
    view and replay.json but never in ``leapp-lab run``'s text."""
    from leapp_lab.views.text_deep import _replay as text
    sec = _engine_section()
    sec.engines[0].notes = ["policy/action: on fresh observations a step's own error reaches 0.13, 17.3× "
                            "its largest on the recorded ones: calibrate on data that covers deployment"]
    lines = text(sec)
    i = lines.index("      " + sec.engines[0].notes[0])
    assert i > next(k for k, s in enumerate(lines) if "on ort-int8: DIVERGED" in s)


def test_calibration_note_is_int8_only_and_quiet_taps_read_as_within():
    """``rnn12`` on ort-fp16: a 3.3× larger own error on fresh inputs was told to 'calibrate on data
    that covers deployment' (fp16 has no calibration); taps that never left the rule printed
    'first beyond nrmse 0.01 at none; local (from the fp32 state): none'."""
    from leapp_lab.deep.engine_replay import _compare_tiers
    from leapp_lab.model.replay import TapsOverTime
    from leapp_lab.views.text_deep import taps_line

    def note(engine):
        a = ReplayRun(tier="a", outputs=[ReplayOutput("policy/action", own_error_max=1e-3)])
        b = ReplayRun(tier="b", outputs=[ReplayOutput("policy/action", own_error_max=1e-2)])
        res = EngineReplay(engine, closed_loop=a, fresh=b)
        _compare_tiers(res)
        return res.notes
    assert "calibrate" in note("ort-int8")[0] and note("ort-fp16") == []
    quiet = taps_line(TapsOverTime("policy", tier="a", taps=["h"], steps=[0, 1], max_nrmse=0.01))
    assert quiet.endswith("1 tap): every tap within nrmse 0.01 at every step, from its own state and from "
                          "the fp32 state") and "none" not in quiet


def test_pipeline_on_an_engine_with_a_node_unbuilt_is_not_called_clean():
    """``run --engine ort-int8 --taps h2``: the normalizer (no tap h2) failed to build, every
    cumulative value below it was '–', and the line still said 'first divergent node none'."""
    from types import SimpleNamespace

    from leapp_lab.model.trace import NodeEngine, PipelineEngine, PipelinePort
    from leapp_lab.views.text_nodes import render_node_engines
    pe = PipelineEngine("ort-int8", nodes=[PipelinePort("normalizer", "features"),
                                           PipelinePort("actor", "joint_targets", local_nrmse=0.0064)])
    nodes = [SimpleNamespace(name="normalizer", engines=[NodeEngine("ort-int8", error="no tap h2")]),
             SimpleNamespace(name="actor", engines=[NodeEngine("ort-int8", build="/b", status="ok")])]
    text = "\n".join(render_node_engines(SimpleNamespace(nodes=nodes, pipeline_engines=[pe])))
    assert "first divergent node unknown: normalizer has no ort-int8 build (see above)" in text
    pe.nodes.insert(0, PipelinePort("encoder", "z", nrmse=0.001, local_nrmse=0.001, diverged=False))
    text = "\n".join(render_node_engines(SimpleNamespace(nodes=nodes, pipeline_engines=[pe])))
    assert ("first divergent node none among the nodes that ran; unknown from normalizer on: normalizer has "
            "no ort-int8 build (see above)") in text
    pe.nodes = [PipelinePort("actor", "joint_targets", nrmse=0.0064, local_nrmse=0.0064)]
    assert "first divergent node none\n" in "\n".join(render_node_engines(SimpleNamespace(nodes=nodes[1:],
                                                                                          pipeline_engines=[pe])))


def test_a_torchscript_node_with_taps_runs_as_exported_in_an_engine_replay(monkeypatch):
    """A jit encoder with taps ran on ort-int8 in the replay (through its tapped re-export) while the
    same node without taps ran as exported: taps decided where a node runs."""
    from types import SimpleNamespace

    from leapp_lab.steps import replay_engines

    def probe(*a, **k):
        raise AssertionError("a jit node is not probed on the engine")
    monkeypatch.setattr(replay_engines, "_tap_probe", probe)
    enc = SimpleNamespace(name="encoder", backend="jit-script", artifact="encoder.pt", taps=[SimpleNamespace(name="h")])
    runners, infos, _ = replay_engines.node_runners(SimpleNamespace(nodes=[enc]), {}, "ort-int8", print, probes={})
    assert runners == {} and infos[0].runs_on == "fp32 export" and "taps are not followed" in infos[0].note


def test_only_the_diverging_ports_of_the_first_divergent_node_are_marked():
    """``gait.py`` on ort-int8: 'ctrl/gait 0%  <- first divergent' and 'ctrl/contact 0%  <- first
    divergent' beside the action port that diverged (text and the view's red rows)."""
    from types import SimpleNamespace

    from leapp_lab.model.trace import PipelineEngine, PipelinePort
    from leapp_lab.views.text_nodes import render_node_engines
    from leapp_lab.views.trace_layers import pipeline_view
    pe = PipelineEngine("ort-int8", first_divergent_node="ctrl", nodes=[
        PipelinePort("ctrl", "action", nrmse=0.012, local_nrmse=0.012, own_share=1.0, diverged=True),
        PipelinePort("ctrl", "gait", nrmse=0.0, local_nrmse=0.0, own_share=1.0, diverged=False)])
    g = SimpleNamespace(nodes=[], pipeline_engines=[pe])
    lines = render_node_engines(g)
    assert lines[-2].endswith("<- first divergent") and "first divergent" not in lines[-1]
    assert [r["first_divergent"] for r in pipeline_view([g], ["g"])[0]["nodes"]] == [True, False]


def test_an_engine_this_machine_lacks_is_unavailable_in_the_replay(monkeypatch):
    """``run --engine trt-fp16 --replay 3`` without a GPU: the replay said 'FAILED: building the
    pipeline for trt-fp16 raised EngineUnavailable' (docs: unavailable), and the pipeline line 'none
    among the nodes that ran' when no node ran."""
    from types import SimpleNamespace

    from leapp_lab.engines.base import EngineUnavailable
    from leapp_lab.model.trace import NodeEngine, PipelineEngine, PipelinePort
    from leapp_lab.steps import replay_engines
    from leapp_lab.views.text_nodes import render_node_engines

    def lacks(*a, **k):
        raise EngineUnavailable("TensorRT engines need the 'tensorrt' Python package")
    monkeypatch.setattr(replay_engines, "node_runners", lacks)
    res = ReplayResult(status="ok", tier="a")
    replay_engines.run_engines(None, {}, res, {}, ["trt-fp16"], steps=3, max_nrmse=0.01, teacher_forcing=True,
                               progress=None)
    assert res.engines[0].status == "unavailable" and "tensorrt" in res.engines[0].reason
    pe = PipelineEngine("trt-fp16", nodes=[PipelinePort("normalizer", "features"), PipelinePort("actor", "a")])
    nodes = [SimpleNamespace(name=n, engines=[NodeEngine("trt-fp16", status="unavailable")])
             for n in ("normalizer", "actor")]
    text = "\n".join(render_node_engines(SimpleNamespace(nodes=nodes, pipeline_engines=[pe])))
    assert "first divergent node unknown: normalizer, actor have no trt-fp16 build" in text


def test_a_replay_build_says_which_engine_and_node_its_progress_is_for():
    """``run --engine ort-int8 --replay 3``: the replay's own build of a node printed 'leapp-lab run:
    calibrate' five times and 'leapp-lab run: run' five times, naming neither engine nor node."""
    from leapp_lab.steps.replay_engines import _named
    got = []
    _named(lambda *a: got.append(a), "replay on ort-int8: node chunker")("calibrate", 2, 6)
    assert got == [("replay on ort-int8: node chunker: calibrate 2/6", 2, 6)] and _named(None, "x") is None

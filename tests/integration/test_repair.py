"""Precision repair on real builds: a sweep of real onnxruntime int8 / fp16 engines of a real exported
model, verified against torch; the same sweep in this process and on a 2-worker Dask LocalCluster."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import onnx
import pytest

import leapp_lab
from leapp_lab.model.build import BuildReport
from leapp_lab.model.repair import RepairReport
from leapp_lab.steps.repair_segments import keep_fp32, segments
from leapp_lab.onnxio.manifest import IDENTITY_PREFIX
from tests.models.repairs import TARGET, int8_repair, outlier_mlp
from tests import oracle

CLI = [sys.executable, "-m", "leapp_lab.cli"]


def nrmse(build: str | Path, reference: Path, name: str) -> float:
    """The oracle's nrmse of a build's outputs over every sample, from the arrays on disk."""
    return oracle.nrmse_of_files(Path(build) / "sample_outputs.npz", reference, name)


@pytest.fixture(scope="module")
def model():
    return outlier_mlp()


@pytest.fixture(scope="module")
def report(model):
    return int8_repair()


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    c = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0")
    yield c
    c.close()


# -- Must show: the repair meets the target with a minority of segments, verified ------------------
def test_int8_repair_meets_the_target_with_a_minority_of_segments_verified(report, model):
    out = "output_0"
    assert report.engine == "ort-int8" and report.target_nrmse == TARGET
    # the engine as built misses the target by far; the numbers are those of its kept build
    before = nrmse(report.baseline.build, model.reference, out)
    assert before > 10 * TARGET
    assert report.before == pytest.approx(before, rel=1e-9)
    # the final engine: its own build folder and verify run, both on disk, both under the target
    assert report.status == "met" and report.met and report.exit_code == 0 and bool(report)
    final = report.final
    assert Path(final.build).is_dir() and final.build != report.baseline.build
    after = nrmse(final.build, model.reference, out)
    assert after < TARGET and report.after == pytest.approx(after, rel=1e-9)
    v = leapp_lab.load(final.verify_run)
    assert v.kind == "verify" and Path(v.build) == Path(final.build)
    assert v.row(out).nrmse == pytest.approx(after, rel=1e-9)
    b = BuildReport.read(final.build)
    assert b.keep_fp32 == final.keep_fp32 == keep_fp32(report.segments, report.chosen)
    # a minority of segments kept in fp32
    assert 0 < len(report.chosen) < len(report.segments) / 2
    # the builds are counted: the baseline, every trial, the final one
    assert report.builds == 1 + len(report.trials) + 1
    assert len(report.ranking()) == len(report.segments) and [t.rank for t in report.ranking()] == \
        list(range(1, len(report.segments) + 1))
    text = str(report)
    assert f"{report.builds} builds" in text and "MET" in text
    # the sweep measured the same number for the chosen set as the final build: nothing unverified
    assert final.swept_error == pytest.approx(final.error, rel=1e-9)


def test_the_outlier_layer_ranks_first_and_the_ranking_is_by_output_error(report, model):
    rank = report.ranking()
    assert rank[0].added == "l2"       # the layer whose one huge channel per-tensor int8 crushes
    errors = [t.error for t in rank]
    assert errors == sorted(errors)
    for t in rank:
        assert t.gain == pytest.approx(report.before - t.error)
    assert report.chosen[0] == "l2"
    # the next choice is made on top of the first, not from round 1's ranking: its gain alone was
    # hidden behind the outlier's error
    if len(report.chosen) > 1:
        second = next(t for t in report.trials if t.round == 2 and t.chosen)
        assert second.segments == report.chosen[:2]
        assert second.error < rank[0].error


def test_the_same_sweep_through_a_two_worker_local_cluster_gives_the_same_ranking(report, model, cluster, tmp_path):
    d = leapp_lab.repair(model.reference, model.onnx, engine="ort-int8", target_nrmse=TARGET,
                         dask=cluster.scheduler_address, out=tmp_path)
    assert d.executor == "dask" and d.workers == 2 and d.address == cluster.scheduler_address
    assert [t.added for t in d.ranking()] == [t.added for t in report.ranking()]
    assert [t.error for t in d.ranking()] == pytest.approx([t.error for t in report.ranking()], rel=1e-9)
    assert d.chosen == report.chosen and d.met and d.builds == report.builds
    assert nrmse(d.final.build, model.reference, "output_0") < TARGET
    # repair paused the workers' statistical profiler for the sweep (3x faster builds) and restarted it
    import distributed
    with distributed.Client(cluster.scheduler_address) as c:
        running = c.run(lambda dask_worker: dask_worker.periodic_callbacks["profile"].is_running())
    assert len(running) == 2 and all(running.values())


def test_dask_address_from_the_environment(model, cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("LEAPP_LAB_DASK", cluster.scheduler_address)
    r = leapp_lab.repair(model.reference, model.onnx, engine="ort-int8", target_nrmse=10.0, out=tmp_path)
    assert r.executor == "dask" and r.status == "already-met" and r.builds == 1


# -- segments and keep_fp32 ------------------------------------------------------------------------
def test_segments_cut_the_model_at_its_taps_in_model_order(model):
    segs, warnings = segments(model.onnx, "ort-int8")
    m = onnx.load(str(model.onnx))
    real = [n.name for n in m.graph.node if not n.name.startswith(IDENTITY_PREFIX)]
    assert not warnings
    assert [s.name for s in segs] == ["l0", "l1", "l2", "l3", "l4", "output_0"]
    assert [n for s in segs for n in s.nodes] == real          # every node once, in model order
    assert all(s.ops == {"Gemm": 1, "Relu": 1} for s in segs[:-1]) and segs[-1].ops == {"Gemm": 1}
    # int8 keeps the readers of a segment's values too (a QDQ tensor is quantized when any node
    # touching it is); fp16 rounds at the producer, so the stretch alone
    idx = {n: i for i, n in enumerate(real)}
    for s in segs[:-1]:
        extra = [n for n in s.keep if n not in s.nodes]
        assert len(extra) == 1 and idx[extra[0]] == idx[s.nodes[-1]] + 1
    fp16, _ = segments(model.onnx, "ort-fp16")
    assert all(s.keep == s.nodes for s in fp16)


def test_keep_fp32_leaves_int8_nodes_unquantized_and_build_json_records_it(model, tmp_path):
    kept = ["node_linear_2", "node_relu_2", "node_linear_3"]
    plain = leapp_lab.compile(model.onnx, engine="ort-int8", out=tmp_path / "plain", naive_check=False)
    mixed = leapp_lab.compile(model.onnx, engine="ort-int8", out=tmp_path / "mixed", naive_check=False,
                              keep_fp32=kept)
    assert plain.keep_fp32 == [] and mixed.keep_fp32 == sorted(kept)
    assert BuildReport.read(tmp_path / "mixed").keep_fp32 == sorted(kept)

    def ops(folder):
        g = onnx.load(str(folder / "engine.untapped.onnx")).graph
        return {n.op_type for n in g.node if n.name.endswith(("node_linear_2", "node_linear_3"))}
    assert ops(tmp_path / "plain") == {"QGemm"}                # quantized
    assert ops(tmp_path / "mixed") <= {"Gemm", "FusedGemm"}    # float (FusedGemm: Gemm + its Relu)
    assert nrmse(tmp_path / "mixed", model.reference, "output_0") < \
        nrmse(tmp_path / "plain", model.reference, "output_0") / 10
    with pytest.raises(ValueError, match="node_nope"):
        leapp_lab.compile(model.onnx, engine="ort-int8", out=tmp_path / "bad", keep_fp32=["node_nope"])
    with pytest.raises(ValueError, match="reduced-precision"):
        leapp_lab.compile(model.onnx, engine="ort", out=tmp_path / "bad", keep_fp32=kept)
    assert not (tmp_path / "bad").exists()


def test_fp16_block_list_keeps_the_kept_nodes_float32_between_casts():
    from onnx import TensorProto, helper, numpy_helper

    from leapp_lab.engines.typed_onnx import cast_nodes_at, to_fp16
    w = numpy_helper.from_array(np.full((2, 2), 1 + 2 ** -13, np.float32), "w")   # not an fp16 value
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["a"], name="mm1"), helper.make_node("MatMul", ["a", "w"], ["b"], name="mm2"),
         helper.make_node("Relu", ["b"], ["c"], name="relu")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [2, 2])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    default, _ = to_fp16(m)
    assert {i.data_type for i in default.graph.initializer} == {TensorProto.FLOAT16}
    mixed, _ = to_fp16(m, {"mm2"})
    nodes = {n.name: n for n in mixed.graph.node}
    inits = {i.name: i for i in mixed.graph.initializer}
    # the weight both read: mm1 reads it in float16, the kept mm2 its own float32 copy, unrounded
    assert inits[nodes["mm1"].input[1]].data_type == TensorProto.FLOAT16
    kept_w = inits[nodes["mm2"].input[1]]
    assert kept_w.data_type == TensorProto.FLOAT and numpy_helper.to_array(kept_w)[0, 0] == np.float32(1 + 2 ** -13)
    # Casts around the kept node: its float16 input to float32, its float32 output back to float16
    casts = cast_nodes_at(mixed, "mm2")
    assert sorted(c.attribute[0].i for c in casts) == sorted([TensorProto.FLOAT, TensorProto.FLOAT16])
    assert list(nodes["mm2"].output) == ["b"] and list(nodes["relu"].input) == ["b__fp16"]
    import onnxruntime as ort
    x = np.full((2, 2), 3.0, np.float32)
    out = ort.InferenceSession(mixed.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.isfinite(out).all() and out.dtype == np.float32


# -- budget, fp16, not met -------------------------------------------------------------------------
def test_fp16_within_a_tiny_budget_reports_the_best_verified_set_and_no_success(model, tmp_path):
    r = leapp_lab.repair(model.reference, model.onnx, engine="ort-fp16", target_nrmse=1e-9, budget=3, jobs=1,
                         out=tmp_path)
    assert r.status == "not-met" and not r.met and r.exit_code == 1
    assert r.builds == 3 and len(r.trials) == 1 and len(r.chosen) == 1
    assert any("budget" in w for w in r.warnings)
    # the best set was still built and verified on its own, and the report says what it measured
    assert r.final is not None and not r.final.met
    assert r.after == pytest.approx(nrmse(r.final.build, model.reference, "output_0"), rel=1e-9)
    assert r.after < r.before
    assert "not met" in r.message and "NOT MET" in str(r)
    # the first candidate under a budget is the segment whose taps' error grew most in the baseline
    base = leapp_lab.load(r.baseline.verify_run)
    grow = {row.name: row.growth for row in base.rows if row.growth is not None}
    best = max(r.segments, key=lambda s: max([grow[t] for t in s.taps if t in grow], default=-1))
    assert r.trials[0].added == best.name


def test_already_met_builds_once_and_keeps_nothing_in_fp32(model, tmp_path):
    r = leapp_lab.repair(model.reference, model.onnx, engine="ort-int8", target_nrmse=10.0, jobs=1, out=tmp_path)
    assert r.status == "already-met" and r.exit_code == 0 and r.builds == 1 and r.chosen == []
    assert r.final is not None and r.final.build == r.baseline.build and not r.trials


# -- persistence and views -------------------------------------------------------------------------
def test_the_report_reloads_and_renders_from_its_run_folder(report):
    again = leapp_lab.load(report.path)
    assert isinstance(again, RepairReport)
    assert again.to_dict() == report.to_dict()
    df = again.to_dataframe()
    assert list(df["segment"]) == [t.added for t in again.ranking()]
    assert list(df["output_nrmse"]) == [t.error for t in again.ranking()]
    assert set(df.loc[df["chosen"], "segment"]) == set(again.chosen)
    from leapp_lab.views.viewdict import build_view
    v = build_view(again)
    json.dumps(v, allow_nan=False)
    rows = v["table"]["rows"]
    assert [x["id"] for x in rows] == list(df["segment"])
    assert {x["id"] for x in rows if x["status"] == "pass"} == set(again.chosen)
    assert rows[0]["cells"]["output_nrmse"] == again.ranking()[0].error         # passed through
    assert v["bars"]["y"] == [t.error for t in again.ranking()]
    assert v["bars"]["steps"]["y"][0] == again.before and v["bars"]["steps"]["y"][-1] == again.after
    assert again.to_html() == again.to_html()                                   # deterministic
    assert 'data-leapp-kind="repair"' in again.to_html()


# -- CLI and magic ---------------------------------------------------------------------------------
def _have_tensorrt() -> bool:
    from leapp_lab.engines import get_engine
    from leapp_lab.engines.base import EngineUnavailable
    try:
        get_engine("trt-fp16").check_available()
    except EngineUnavailable:
        return False
    return True


def test_cli_exit_codes_json_and_html(model, tmp_path):
    def cli(*args):
        return subprocess.run([*CLI, "repair", *map(str, args)], capture_output=True, text=True)

    j, h = tmp_path / "r.json", tmp_path / "r.html"
    p = cli(model.reference, model.onnx, "--target-nrmse", "10", "--jobs", "1", "--json", j, "--html", h,
            "--out", tmp_path / "ok", "--quiet")
    assert p.returncode == 0, p.stderr
    assert "MET (already)" in p.stdout
    r = leapp_lab.load(j)
    assert isinstance(r, RepairReport) and r.status == "already-met"
    assert 'data-leapp-kind="repair"' in h.read_text()
    p = cli(model.reference, model.onnx, "--budget", "3", "--jobs", "1", "--out", tmp_path / "budget")
    assert p.returncode == 1, p.stderr
    assert "NOT MET" in p.stdout and "[leapp-lab repair] round 1: 1/1 builds" in p.stderr


def test_cli_refuses_unusable_input_with_exit_2(model, tmp_path, capsys):
    from leapp_lab.cli import main

    def cli(*args):
        try:
            code = main(["repair", *map(str, args), "--out", str(tmp_path), "--quiet"])
        except SystemExit as exc:      # argparse
            code = exc.code
        return code, capsys.readouterr().err

    code, err = cli(tmp_path / "nope.npz", model.onnx)
    assert code == 2 and "nope.npz" in err
    code, err = cli(model.reference, model.onnx, "--target-nrmse", "-1")
    assert code == 2 and "target_nrmse" in err
    code, err = cli(model.reference, model.onnx, "--budget", "0")
    assert code == 2 and "budget" in err
    code, err = cli(model.reference, model.onnx, "--engine", "ort")
    assert code == 2 and "invalid choice" in err
    if not _have_tensorrt():
        code, err = cli(model.reference, model.onnx, "--engine", "trt-fp16")
        assert code == 2 and "TensorRT" in err
    assert not (tmp_path / "repair").exists() or not any((tmp_path / "repair").iterdir())


def test_magic_returns_and_shows_the_report(model, tmp_path):
    from IPython.core.interactiveshell import InteractiveShell
    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    try:
        buf = io.StringIO()
        with redirect_stdout(buf):
            assert sh.run_cell("%load_ext leapp_lab").error_in_exec is None
            res = sh.run_cell(f"r = %leapp_repair {model.reference} {model.onnx} --target-nrmse 10 --jobs 1 "
                              f"--out {tmp_path}\nr")
        assert res.error_in_exec is None and res.error_before_exec is None
        r = sh.user_ns["r"]
        assert isinstance(r, RepairReport) and r is sh.user_ns["_leapp"] and r.status == "already-met"
        assert "repair [" in buf.getvalue() and "MET (already)" in buf.getvalue()     # its text view
    finally:
        InteractiveShell.clear_instance()

"""prepare --from-trace: a node of a traced LEAPP pipeline becomes a tapped build (issue 19, D2).

Real LEAPP, real torch / onnxruntime. The traced pipelines are tests/node_pipelines/*.py (tiny,
module-scoped); every reference value is compared with what the trace recorded, exactly.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import leapp_lab
from leapp_lab.cli import main as cli_main
from leapp_lab.model.jsonio import load_npz

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from node_pipelines import tapped_policy, tapped_recurrent  # noqa: E402


def _sha(p) -> str:
    return hashlib.sha256(Path(p).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    """normalizer (onnx) + policy (onnx, taps hidden / body_act), 3 cached samples."""
    tmp = tmp_path_factory.mktemp("fromtrace")
    with leapp_lab.trace("tp", save_path=str(tmp), **tapped_policy.OPTIONS) as t:
        tapped_policy.body()
    return t.report


@pytest.fixture(scope="module")
def recurrent(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fromtrace_rec")
    with leapp_lab.trace("rec", save_path=str(tmp), **tapped_recurrent.OPTIONS) as t:
        tapped_recurrent.body()
    return t.report


@pytest.fixture(scope="module")
def tapped_build(policy, tmp_path_factory):
    d = tmp_path_factory.mktemp("tb")
    rep = leapp_lab.prepare(policy, d / "policy.onnx", d / "policy.npz", d / "policy.reference.npz",
                            node="policy", debug_taps="all")
    return d, rep


def _files(d: Path, stem: str = "policy") -> list[str]:
    return [str(d / f"{stem}.onnx"), str(d / f"{stem}.npz"), str(d / f"{stem}.reference.npz")]


def test_untapped_node_is_leapps_own_artifact(policy, tmp_path):
    g = policy.graph
    rep = leapp_lab.prepare(policy, *_files(tmp_path), node="policy")
    assert (tmp_path / "policy.onnx").read_bytes() == (Path(g.graph_dir) / "policy.onnx").read_bytes()
    o = rep.from_trace
    assert (o.onnx_source, o.graph, o.node, o.run) == ("leapp", "tp", "policy", g.run_dir)
    arrays = policy.arrays()
    npz, ref = load_npz(tmp_path / "policy.npz"), load_npz(tmp_path / "policy.reference.npz")
    assert list(npz) == ["obs_n"] and npz["obs_n"].shape == (3, 1, 6)
    for k in range(3):
        np.testing.assert_array_equal(npz["obs_n"][k], arrays[f"policy/obs_n/{k}/input"])
        np.testing.assert_array_equal(ref["action"][k], arrays[f"policy/action/{k}/recorded"])
    # the record reloads with its origin, and the report says where it came from
    back = leapp_lab.load(tmp_path / "policy.prepare")
    assert back.from_trace == o and "LEAPP's own artifact" in str(back)


def test_all_taps_of_a_node_without_taps_is_leapps_own_artifact(policy, tmp_path):
    """``--engine E --taps all`` prepares every node with 'all': a node that has no tap (the
    normalizer) was re-exported (an onnx-torchscript GRU node came back from the dynamo exporter,
    another graph than the one LEAPP shipped) instead of verifying LEAPP's artifact."""
    rep = leapp_lab.prepare(policy, *_files(tmp_path, "norm"), node="normalizer", debug_taps="all")
    assert rep.from_trace.onnx_source == "leapp"
    assert (tmp_path / "norm.onnx").read_bytes() == (Path(policy.graph.graph_dir) / "normalizer.onnx").read_bytes()


def test_a_build_older_than_a_from_trace_prepare_is_called_stale(policy, tmp_path):
    """prepare --from-trace wrote no cache.json, so verify of a build compiled before the last
    prepare (other taps, a later trace run: other weights and samples) compared an old engine with
    new references without a word; both its writers (re-export, LEAPP's artifact) now record."""
    files = _files(tmp_path)
    leapp_lab.prepare(policy, *files, node="policy", debug_taps="hidden")
    assert (tmp_path / "policy.prepare" / "cache.json").is_file()
    b = leapp_lab.compile(files[0], "ort")
    rep = leapp_lab.prepare(policy, *files, node="policy")          # LEAPP's artifact, no taps
    assert rep.from_trace.onnx_source == "leapp" and rep.cache is None
    v = leapp_lab.verify(files[2], b.path, save=False)
    assert v.warnings[0].startswith("stale build:") and "compile it again" in v.warnings[0]


def test_taps_rebuilt_where_they_fired_references_are_the_recorded_values(policy, tapped_build):
    d, rep = tapped_build
    o = rep.from_trace
    assert o.onnx_source == "re-export" and o.same_as_leapp is True
    assert [r.name for r in rep.taps] == ["hidden", "body_act"]
    assert rep.row("hidden").source.endswith("tapped_policy.py:27")
    ref = load_npz(d / "policy.reference.npz")
    vals = np.load(Path(policy.graph.run_dir) / "taps.npz", allow_pickle=False)
    arrays = policy.arrays()
    for k in range(3):
        np.testing.assert_array_equal(ref["hidden"][k], vals[f"policy/hidden/{k}"])
        np.testing.assert_array_equal(ref["body_act"][k], vals[f"policy/body_act/{k}"])
        np.testing.assert_array_equal(ref["action"][k], arrays[f"policy/action/{k}/recorded"])
    # compile + verify work unchanged: the fp32 engine reproduces every tap and the output
    b = leapp_lab.compile(d / "policy.onnx", "ort")
    v = leapp_lab.verify(d / "policy.reference.npz", b.path, save=False)
    assert [r.name for r in v.rows] == ["hidden", "body_act", "action"]
    assert all(r.nrmse < 1e-5 for r in v.rows) and v.first_divergent is None


def test_op_taps_come_from_the_traced_graph_in_torch(policy, tmp_path):
    rep = leapp_lab.prepare(policy, *_files(tmp_path), node="policy", op_taps=True)
    ops = {r.name: r.reference_source for r in rep.taps if r.kind == "op"}
    # values the traced graph names (its FX nodes) are torch's; the exporter's own (Elu -> val_N)
    # are recomputed by onnxruntime, as for any prepared model (docs/taps.md §5)
    assert {k: v for k, v in ops.items() if k in ("linear", "relu", "linear_1", "linear_2")} == {
        "linear": "torch", "relu": "torch", "linear_1": "torch", "linear_2": "torch"}
    assert rep.from_trace.same_as_leapp is True
    ref, npz = load_npz(tmp_path / "policy.reference.npz"), load_npz(tmp_path / "policy.npz")
    # the first Gemm's op tap is the first Linear of the actor, recomputed here in float64
    sess_in = npz["obs_n"].astype(np.float64)
    m = onnx.load(str(tmp_path / "policy.onnx"))
    first = next(n for n in m.graph.node if n.op_type == "Gemm")
    inits = {i.name: numpy_helper.to_array(i).astype(np.float64) for i in m.graph.initializer}
    w, b = inits[first.input[1]], inits[first.input[2]]
    trans_b = next((a.i for a in first.attribute if a.name == "transB"), 0)
    want = sess_in @ (w.T if trans_b else w) + b
    np.testing.assert_allclose(ref[first.output[0]], want, rtol=1e-5, atol=1e-6)


def test_stateful_node_npz_holds_the_state_inputs(recurrent, tmp_path):
    g = recurrent.graph
    rep = leapp_lab.prepare(recurrent, *_files(tmp_path, "actor"), debug_taps="pre")   # one exported node
    arrays = recurrent.arrays()
    npz, ref = load_npz(tmp_path / "actor.npz"), load_npz(tmp_path / "actor.reference.npz")
    assert sorted(npz) == ["h_in", "obs"] and npz["h_in"].shape == (4, 1, 8)
    assert sorted(k for k in ref if k != "benchmark_timings_ms") == ["action", "h_out", "pre"]
    for k in range(4):
        np.testing.assert_array_equal(npz["h_in"][k], arrays[f"actor/h_in/{k}/input"])
        np.testing.assert_array_equal(ref["h_out"][k], arrays[f"actor/h_out/{k}/recorded"])
        if k:
            np.testing.assert_array_equal(npz["h_in"][k], ref["h_out"][k - 1])   # the state chain
    assert not np.any(npz["h_in"][1:] == 0)          # real states, not LEAPP's zero placeholders
    m = onnx.load(str(tmp_path / "actor.onnx"))
    assert [i.name for i in m.graph.input] == ["obs", "h_in"]
    assert rep.from_trace.same_as_leapp is True and rep.from_trace.node == "actor"
    b = leapp_lab.compile(tmp_path / "actor.onnx", "ort")
    v = leapp_lab.verify(tmp_path / "actor.reference.npz", b.path, save=False, local=True)
    assert {r.name for r in v.rows} == {"pre", "action", "h_out"} and all(r.nrmse < 1e-5 for r in v.rows)


def test_int8_engine_names_the_layer_perturbed_in_the_engine_only(policy, tapped_build, tmp_path):
    """The body.0 Linear's weights get noise in a copy of the prepared ONNX only, then ort-int8:
    verify --local names the tap after that layer as the largest local error, and so does the
    node's Layers panel in the trace view; the output row's reference is the recorded Python
    value."""
    d, _ = tapped_build
    m = onnx.load(str(d / "policy.onnx"))
    elu = next(n for n in m.graph.node if n.op_type == "Elu")
    gemm = next(n for n in m.graph.node if elu.input[0] in n.output)
    init = next(i for i in m.graph.initializer if i.name == gemm.input[1])
    w = numpy_helper.to_array(init).copy()
    w += np.random.default_rng(0).standard_normal(w.shape).astype(np.float32) * np.float32(w.std() * 0.5)
    init.CopyFrom(numpy_helper.from_array(w, init.name))
    onnx.save(m, str(tmp_path / "node.onnx"))
    shutil.copy(d / "policy.npz", tmp_path / "node.npz")
    shutil.copy(d / "policy.reference.npz", tmp_path / "node.reference.npz")
    b = leapp_lab.compile(tmp_path / "node.onnx", "ort-int8", out=tmp_path / "node.ort-int8", naive_check=False)
    # the node's engine entry as --engine makes it (steps.node_engines.verify_node), on this build
    from leapp_lab.steps.node_engines import NodeBuild, verify_node
    entry = verify_node(NodeBuild("policy", "ort-int8", tmp_path, build=b), local=True)
    v = leapp_lab.load(entry.verify_run)
    assert v.worst_local == entry.worst_local == "body_act"
    worst = v.row("body_act")
    assert worst.local_nrmse > 5 * max(r.local_nrmse for r in v.rows if r.name != "body_act" and r.in_rule)
    ref = load_npz(d / "policy.reference.npz")
    arrays = policy.arrays()
    for k in range(3):
        np.testing.assert_array_equal(ref["action"][k], arrays[f"policy/action/{k}/recorded"])
    # the trace view's Layers panel of the node names that layer: the largest local error badge
    # goes to its row, whose flags say so
    from leapp_lab.views.viewdict import build_view
    rep = leapp_lab.load(policy.graph.run_dir)
    rep.graph.node("policy").engines = [entry]
    (panel,) = build_view(rep)["nodes"]["policy"]["layers"]
    assert panel["worst_local"] == "body_act" and panel["engine"] == "ort-int8"
    lv = panel["view"]
    badge = next(x for x in lv["badges"] if x["label"] == "largest local error")
    assert badge["value"] == badge["row"] == "body_act"
    row = next(r for r in lv["table"]["rows"] if r["id"] == "body_act")
    flags = row["info"][[c["key"] for c in lv["table"]["info_columns"]].index("flags")]
    assert "largest local error" in flags
    assert [r["id"] for r in lv["table"]["rows"]] == ["hidden", "body_act", "action"]


def test_fresh_process_from_the_run_folder_alone(policy, tmp_path):
    """A new interpreter, another working folder, nothing but the run folder's path: prepare,
    compile and verify."""
    run = policy.graph.run_dir
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cli = [sys.executable, "-m", "leapp_lab.cli"]
    out = tmp_path / "b"
    r = subprocess.run([*cli, "prepare", "--from-trace", run, "--node", "policy", "--onnx-out",
                        str(out / "p.onnx"), "--npz-out", str(out / "p.npz"), "--reference-out",
                        str(out / "p.reference.npz"), "--debug-taps", "hidden", "--quiet"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "re-export of the traced graph, same graph as LEAPP's artifact" in r.stdout
    r = subprocess.run([*cli, "compile", str(out / "p.onnx"), "--engine", "ort"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([*cli, "verify", str(out / "p.reference.npz"), str(out / "p.ort"), "--json",
                        str(tmp_path / "v.json")], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    rows = json.loads((tmp_path / "v.json").read_text())["rows"]
    assert [x["name"] for x in rows] == ["hidden", "action"] and all(x["nrmse"] < 1e-5 for x in rows)
    ref = load_npz(out / "p.reference.npz")
    vals = np.load(Path(run) / "taps.npz", allow_pickle=False)
    np.testing.assert_array_equal(ref["hidden"][2], vals["policy/hidden/2"])


# -- hostile input: exit 2, one line, nothing lost ----------------------------------------------

def _cli(capsys, *argv) -> tuple[int, str]:
    code = cli_main(["prepare", *argv])
    err = capsys.readouterr().err
    return code, err


def _outs(d: Path) -> list[str]:
    return ["--onnx-out", str(d / "x.onnx"), "--npz-out", str(d / "x.npz"), "--reference-out",
            str(d / "x.reference.npz"), "--quiet"]


def test_run_that_is_not_a_trace(policy, tapped_build, tmp_path, capsys):
    d, _ = tapped_build
    code, err = _cli(capsys, "--from-trace", str(d / "policy.prepare"), *_outs(tmp_path))
    assert code == 2 and "is a prepare report, not a trace" in err and len(err.strip().splitlines()) == 1
    code, err = _cli(capsys, "--from-trace", str(tmp_path), *_outs(tmp_path))
    assert code == 2 and "not a trace run" in err
    code, err = _cli(capsys, "--from-trace", str(tmp_path / "nope"), *_outs(tmp_path))
    assert code == 2 and "no such trace run folder" in err
    assert not list(tmp_path.glob("x.*"))


def test_node_missing_or_not_exported(policy, tmp_path, capsys):
    run = policy.graph.run_dir
    code, err = _cli(capsys, "--from-trace", run, "--node", "polcy", *_outs(tmp_path))
    assert code == 2 and "--node polcy: graph 'tp' has no such node" in err and "'policy'" in err
    code, err = _cli(capsys, "--from-trace", run, *_outs(tmp_path))   # two exported nodes
    assert code == 2 and "has 2 exported nodes (normalizer, policy); pass --node NODE" in err
    code, err = _cli(capsys, "--from-trace", run, "--node", "policy", "--debug-taps", "hiden", *_outs(tmp_path))
    assert code == 2 and "debug tap 'hiden'" in err and "did you mean 'hidden'" in err
    # a node LEAPP did not export (non_traced)
    with leapp_lab.trace("nt", save_path=str(tmp_path), non_traced=["policy"], max_cached_io=2) as t:
        tapped_policy.body(steps=2)
    code, err = _cli(capsys, "--from-trace", t.report.graph.run_dir, "--node", "policy", *_outs(tmp_path))
    assert code == 2 and "LEAPP did not export this node" in err and "exported nodes: normalizer" in err
    assert not list(tmp_path.glob("x.*"))


def test_trace_whose_samples_were_deleted(policy, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(policy.graph.run_dir, run)
    (run / "arrays.npz").unlink()
    code, err = _cli(capsys, "--from-trace", str(run), "--node", "policy", *_outs(tmp_path))
    assert code == 2 and "the trace's samples are gone (arrays.npz is missing)" in err
    assert not list(tmp_path.glob("x.*"))


def test_output_path_that_is_an_input_is_refused(policy, capsys, tmp_path):
    g = policy.graph
    run = Path(g.run_dir)
    leapp_onnx = Path(g.graph_dir) / "policy.onnx"
    guarded = {p: _sha(p) for p in (run / "arrays.npz", run / "taps.npz", run / "report.json", leapp_onnx)}
    for flag, target in (("--npz-out", run / "arrays.npz"), ("--reference-out", run / "taps.npz"),
                         ("--onnx-out", leapp_onnx), ("--onnx-out", run / "report.json")):
        argv = dict(zip(_outs(tmp_path)[0:6:2], _outs(tmp_path)[1:6:2]))
        argv[flag] = str(target)
        flat = [x for kv in argv.items() for x in kv]
        code, err = _cli(capsys, "--from-trace", str(run), "--node", "policy", "--debug-taps", "all",
                         *flat, "--quiet")
        assert code == 2 and str(target) in err, (flag, err)
    assert {p: _sha(p) for p in guarded} == guarded
    assert not list(tmp_path.glob("x.*"))


@pytest.mark.filterwarnings("error:The given NumPy array is not writable:UserWarning")
def test_expected_repair_and_diff_work_on_it(policy, tapped_build, tmp_path):
    """verify --expected re-runs the node's traced graph in fp16 from the run folder (no MODEL.py);
    repair and diff take the build like any other. torch's 'The given NumPy array is not writable'
    warning (--local's forced references, read-only from the npz) no longer reaches the terminal."""
    d, _ = tapped_build
    b8 = leapp_lab.compile(d / "policy.onnx", "ort-int8", out=tmp_path / "p.ort-int8")
    v = leapp_lab.verify(d / "policy.reference.npz", b8.path, out=tmp_path / "v8", local=True,
                         expected="fp16")
    assert v.expected is not None and not [w for w in v.warnings if "no expected" in w], v.warnings
    rows = {r.name: r for r in v.rows}
    assert all(rows[n].expected_nrmse is not None and 0 < rows[n].expected_nrmse < 0.01
               for n in ("hidden", "body_act", "action"))
    b16 = leapp_lab.compile(d / "policy.onnx", "ort-fp16", out=tmp_path / "p.ort-fp16")
    v16 = leapp_lab.verify(d / "policy.reference.npz", b16.path, out=tmp_path / "v16")
    c = leapp_lab.diff(v.path, v16.path)
    assert {r.name for r in c.rows} >= {"hidden", "body_act", "action"}
    rep = leapp_lab.repair(d / "policy.reference.npz", d / "policy.onnx", "ort-int8",
                           target_nrmse=0.5, jobs=1, out=tmp_path / "rep")
    assert rep.met


def test_magic_from_trace_variable(policy, tmp_path):
    """%leapp_prepare --from-trace VAR: VAR names the trace report (or session) in the namespace."""
    import io
    from contextlib import redirect_stdout

    from IPython.core.interactiveshell import InteractiveShell
    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    try:
        with redirect_stdout(io.StringIO()):
            assert sh.run_cell("%load_ext leapp_lab").error_in_exec is None
        sh.user_ns["tr"] = policy
        res = sh.run_cell(f"r = %leapp_prepare --from-trace tr --node policy --debug-taps hidden "
                          f"--onnx-out {tmp_path}/p.onnx --npz-out {tmp_path}/p.npz "
                          f"--reference-out {tmp_path}/p.reference.npz")
        assert res.error_in_exec is None, res.error_in_exec
        r = sh.user_ns["r"]
        assert r.from_trace.node == "policy" and [t.name for t in r.taps] == ["hidden"]
        res = sh.run_cell(f"%leapp_prepare --from-trace tr --node nope --onnx-out {tmp_path}/q.onnx "
                          f"--npz-out {tmp_path}/q.npz --reference-out {tmp_path}/q.reference.npz")
        assert "--node nope: graph 'tp' has no such node" in str(res.error_in_exec)
    finally:
        InteractiveShell.clear_instance()


def test_torchscript_and_pt2_nodes_are_reexported_to_onnx(tmp_path, capsys):
    for backend in ("jit", "pt2"):
        with leapp_lab.trace(f"g_{backend}", save_path=str(tmp_path), max_cached_io=2) as t:
            tapped_policy.body(steps=2, backends={"normalizer": backend, "policy": backend})
        g = t.report.graph
        assert g.node("policy").artifact.endswith(".pt" if backend == "jit" else ".pt2")
        d = tmp_path / backend
        rep = leapp_lab.prepare(t, *_files(d), node="policy", debug_taps="all")
        o = rep.from_trace
        assert o.onnx_source == "re-export" and o.same_as_leapp is None
        assert o.note.startswith(f"LEAPP exported this node with {g.node('policy').backend}: the ONNX is "
                                 f"a re-export of its traced graph")
        ref = load_npz(d / "policy.reference.npz")
        arrays = t.report.arrays()
        np.testing.assert_array_equal(ref["action"][1], arrays["policy/action/1/recorded"])
        b = leapp_lab.compile(d / "policy.onnx", "ort")
        v = leapp_lab.verify(d / "policy.reference.npz", b.path, save=False)
        assert [r.name for r in v.rows] == ["hidden", "body_act", "action"] and all(r.nrmse < 1e-5 for r in v.rows)
    # where the node cannot be re-exported, the reason: its saved graph is gone
    run = tmp_path / "copy"
    shutil.copytree(g.run_dir, run)
    (run / g.node("policy").saved_graph / "module.json").unlink()
    code, err = _cli(capsys, "--from-trace", str(run), "--node", "policy", *_outs(tmp_path))
    assert code == 2 and "node 'policy': its traced graph cannot be rebuilt" in err and "module.json" in err


def test_an_edited_artifact_entry_is_named_not_a_traceback(policy, tmp_path, capsys):
    # before: report.json's graph_dir / artifact / sha256 naming a file that is not ONNX (here a
    # garbage file; /etc/passwd by hand) ended in "internal error" and a protobuf DecodeError
    # traceback; an artifact named '../x' was read from outside graph_dir
    import json as _json
    gd = tmp_path / "g"                  # the graph folder the run sits in, as LEAPP lays it out
    run = gd / "leapp_lab" / "runs" / "r1"
    shutil.copytree(policy.graph.run_dir, run)
    shutil.copy(Path(policy.graph.graph_dir) / f"{policy.graph.name}.yaml", gd)
    junk = gd / "junk.onnx"
    junk.write_bytes(b"not an onnx model at all")
    doc = _json.loads((run / "report.json").read_text())
    node = next(n for n in doc["graphs"][0]["nodes"] if n["name"] == "policy")
    node["artifact"], node["sha256"] = junk.name, _sha(junk)
    (run / "report.json").write_text(_json.dumps(doc))
    code, err = _cli(capsys, "--from-trace", str(run), "--node", "policy", *_outs(tmp_path))
    assert code == 2 and "junk.onnx: LEAPP's artifact of node 'policy' is not a readable ONNX model" in err, err
    assert len(err.strip().splitlines()) == 1, err
    node["artifact"] = "../" + junk.name
    (run / "report.json").write_text(_json.dumps(doc))
    from leapp_lab.steps.prepare_node import traced_node
    tn = traced_node(str(run), "policy")
    assert tn.artifact() == (None, "the artifact '../junk.onnx' that report.json names is not a file "
                                   "name (the run was edited)")
    assert not list(tmp_path.glob("x.*"))

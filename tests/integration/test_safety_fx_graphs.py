"""A trace run folder is data: a crafted ``nodes/<i>/module.json`` runs nothing (docs/safety.md,
"A trace run folder never runs code").

One real traced pipeline (tests/node_pipelines/tapped_policy.py) and one build prepared from it
(prepare --from-trace, debug taps) are made once. Each payload of tests/fx_payloads.py (exec
through max(key=...), through operator.call, __import__ through a call_method 'get' on the builtins
dict) is then written into that run folder's node graph, and every command that rebuilds the node
from it is run: ``prepare --from-trace``, ``verify --expected fp16`` of the build, ``repair --rank
excess`` and ``leapp_lab.replay(RUN, engine=...)``. On the store before the schema each of them
ran the payload; now each refuses with one line naming the file, and the marker never appears.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import leapp_lab
from leapp_lab.model.errors import UnusableInput

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import fx_payloads  # noqa: E402
from node_pipelines import many_ops, tapped_policy  # noqa: E402
from safety_helpers import cli_many  # noqa: E402


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """(run folder, node graph folder, build folder, pristine module.json text)."""
    tmp = tmp_path_factory.mktemp("fxgraphs")
    with leapp_lab.trace("tp", save_path=str(tmp), **tapped_policy.OPTIONS) as t:
        tapped_policy.body()
    g = t.report.graph
    node = g.node("policy")
    d = tmp / "build"
    d.mkdir()
    leapp_lab.prepare(t.report, d / "policy.onnx", d / "policy.npz", d / "policy.reference.npz",
                      node="policy", debug_taps="all")
    leapp_lab.compile(d / "policy.onnx", "ort-fp16", out=d / "policy.ort-fp16")
    node_dir = Path(g.run_dir) / node.saved_graph
    return Path(g.run_dir), node_dir, d, (node_dir / "module.json").read_text()


@pytest.fixture
def crafted(traced, request, tmp_path):
    run, node_dir, build, pristine = traced
    marker = tmp_path / "MARKER"
    fx_payloads.craft(node_dir, request.param, marker)
    yield run, node_dir, build, marker
    (node_dir / "module.json").write_text(pristine)


def _one_line(r, *names) -> str:
    err = r.stderr.strip()
    assert r.returncode == 2, (r.args[0], r.returncode, r.stderr[-2000:], r.stdout[-2000:])
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for n in names:
        assert n in err, (n, err)
    return err


@pytest.mark.parametrize("crafted", sorted(fx_payloads.PAYLOADS), indirect=True)
def test_a_crafted_node_graph_runs_nothing_anywhere(crafted, tmp_path):
    run, node_dir, build, marker = crafted
    module_json = str(node_dir / "module.json")
    out = tmp_path / "out"
    results = cli_many([
        ["prepare", "--from-trace", run, "--node", "policy", "--debug-taps", "all",
         "--onnx-out", out / "x.onnx", "--npz-out", out / "x.npz", "--reference-out", out / "x.reference.npz",
         "--quiet"],
        ["verify", build / "policy.reference.npz", build / "policy.ort-fp16", "--expected", "fp16",
         "--out", tmp_path / "v"],
        ["repair", build / "policy.reference.npz", build / "policy.onnx", "--engine", "ort-fp16",
         "--rank", "excess", "--jobs", "1", "--out", tmp_path / "rep", "--quiet"],
    ], timeout=600)
    for r in results:
        _one_line(r, module_json, "builtins.getattr", "trace the pipeline again")
    assert not marker.exists()
    assert not out.exists() and not (tmp_path / "v").exists() and not (tmp_path / "rep" / "repair").exists()

    with pytest.raises(UnusableInput) as err:          # refused as input, not an engine that "failed"
        leapp_lab.replay(str(run), engine="ort-int8")
    assert module_json in str(err.value) and "builtins.getattr" in str(err.value)
    assert not marker.exists()
    assert json.loads((node_dir / "module.json").read_text())["nodes"][1]["name"] == "pw_cls"


def test_the_pristine_run_folder_still_prepares(traced, tmp_path):
    """The refusals above are the payload's: the same run folder, untouched, prepares again."""
    run, node_dir, build, pristine = traced
    (node_dir / "module.json").write_text(pristine)
    rep = leapp_lab.prepare(None, tmp_path / "p.onnx", tmp_path / "p.npz", tmp_path / "p.reference.npz",
                            from_trace=str(run), node="policy", debug_taps="all")
    assert rep.from_trace is not None and (tmp_path / "p.onnx").is_file()


def _malform(node_dir: Path, pristine: str, how: str) -> None:
    doc = json.loads(pristine)
    call = next(n for n in doc["nodes"] if n["op"] == "call_function")
    if how == "size":
        call["args"][-1] = {"size": "abc"}
    else:
        call["kwargs"] = {"dim": 1}
    (node_dir / "module.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("how, field", [("size", "args["), ("kwargs", "field 'kwargs'")])
def test_a_malformed_node_graph_is_one_line_exit_2(traced, tmp_path, how, field):
    """A size that is not a list of integers, keywords that are not [name, value] pairs: exit 2,
    one line naming the file and the field (they ended in a ValueError traceback, exit 3)."""
    run, node_dir, build, pristine = traced
    _malform(node_dir, pristine, how)
    try:
        out = tmp_path / "out"
        results = cli_many([
            ["prepare", "--from-trace", run, "--node", "policy", "--debug-taps", "all",
             "--onnx-out", out / "x.onnx", "--npz-out", out / "x.npz", "--reference-out",
             out / "x.reference.npz", "--quiet"],
            ["verify", build / "policy.reference.npz", build / "policy.ort-fp16", "--expected", "fp16",
             "--out", tmp_path / "v"]], timeout=600)
    finally:
        (node_dir / "module.json").write_text(pristine)
    for r in results:
        _one_line(r, str(node_dir / "module.json"), field)
    assert not out.exists() and not (tmp_path / "v").exists()


def test_leapps_graphs_of_many_ops_save_and_rebuild(tmp_path):
    """What LEAPP really traces (getitem on chunk / split tuples with int indices, __setitem__ as
    index_put, einsum's equation, dtype casts, NumPy mapped to torch) is inside the closed list:
    every node is saved, rebuilt from its module.json, and computes the outputs the trace recorded."""
    import numpy as np
    import torch

    from leapp_lab.fxio.node_model import node_model, output_arrays
    from leapp_lab.model.jsonio import load_npz
    with leapp_lab.trace(many_ops.NAME, save_path=str(tmp_path), **many_ops.OPTIONS) as t:
        many_ops.body()
    g = t.report.graph
    run = Path(g.run_dir)
    arrays = load_npz(run / "arrays.npz")
    for name in ("net", "np_ops"):
        nr = g.node(name)
        assert nr.saved_graph and not nr.saved_graph_error, (name, nr.saved_graph_error)
        nm = node_model(run, nr, arrays)
        want = output_arrays(nr, arrays, run)
        for k, sample in enumerate(nm.samples):
            with torch.no_grad():
                got = nm.gm(*sample)
            got = got if isinstance(got, (tuple, list)) else (got,)
            for port, v in zip(nm.output_names, got):
                np.testing.assert_allclose(v.numpy(), want[port][k], rtol=1e-5, atol=1e-6)

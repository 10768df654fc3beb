"""Reasons and non-finite rows through a real onnxruntime fp16 build whose engine overflowed, and the
Model Explorer node data read against the engine's own ONNX graph by Model Explorer's ONNX adapter."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import leapp_lab
import verify_models as vm
from leapp_lab.steps.verify import verify
from leapp_lab.model.jsonio import save_npz


@pytest.fixture(scope="module")
def overflowed(tmp_path_factory):
    """The fp16 build of TappedNet, its engine outputs edited as an overflow would leave them: conv3
    has a few inf values, fc2 is inf everywhere."""
    _, paths = vm.shared_net(tmp_path_factory)
    build = vm.shared_build(tmp_path_factory, "ort-fp16")
    copy = tmp_path_factory.mktemp("overflow") / Path(build.path).name
    shutil.copytree(build.path, copy)
    with np.load(copy / "sample_outputs.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["conv3"] = arrays["conv3"].copy()
    arrays["conv3"][0].flat[:3] = np.inf
    arrays["fc2"] = np.full_like(arrays["fc2"], np.inf)
    save_npz(copy / "sample_outputs.npz", arrays)
    return paths, copy, verify(paths["reference"], copy, out=copy.parent / "lab")


def test_overflow_rows_say_why_and_rank_worst(overflowed):
    _, _, rep = overflowed
    c3, f2 = rep.row("conv3"), rep.row("fc2")
    assert c3.nonfinite_engine == 3 and c3.diverged and "non-finite" in c3.reason.split(", ")
    assert f2.nrmse is None and f2.reason == "non-finite, nothing-compared"
    # worst: fc2 lost every value, more non-finite ones than any other row
    assert rep.worst_tap == "fc2" and f2.worst
    # earlier rows say why they diverge (or pass) in the rule's terms
    for r in rep.rows:
        if r.in_rule:
            assert (r.reason or "") == ", ".join(rep.rule.judge(r))
    reloaded = leapp_lab.load(rep.path)
    assert reloaded.row("conv3").reason == c3.reason


def test_model_explorer_files_match_the_engine_graph(overflowed, tmp_path):
    """Every key written names a node or an output tensor of the engine graph as Model Explorer's
    ONNX adapter reads it, under that graph's id."""
    adapter = pytest.importorskip("model_explorer_onnx.main",
                                  reason="model-explorer-onnx is in the dev extra (pip install -e '.[dev]')")
    _, build, rep = overflowed
    graphs = adapter.ONNXAdapter().convert(str(build / "engine.onnx"), {})["graphs"]
    main = graphs[0]
    ids = {n.id for n in main.nodes}
    tensors = {a.value for n in main.nodes for m in n.outputsMetadata for a in m.attrs if a.key == "__tensor_tag"}
    paths = rep.to_model_explorer(tmp_path, graph_id=main.id)
    doc = json.loads(paths[0].read_text())
    assert list(doc) == [main.id] == ["main_graph"]          # the default graph id is the exporter's
    results = doc[main.id]["results"]
    compared = [r for r in rep.rows if r.status == "compared" and r.nrmse is not None]
    for r in compared:
        key = r.bound_to or r.tensor or r.name
        assert key in tensors | ids, r.name
        assert results[key]["value"] == r.nrmse
        if r.kind == "output":
            assert results[f"[value] {r.name}"]["value"] == r.nrmse
    assert "fc2" not in results and set(results) <= tensors | ids

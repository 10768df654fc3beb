"""compile's cache (issue 23, Deliver 3): an unchanged ONNX + npz + engine + options reuses the build;
a changed ONNX, npz, engine or option builds again. Real onnxruntime builds of a shared prepared model.
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import onnx
import pytest

import leapp_lab
from leapp_lab.cli import main as cli_main
from leapp_lab.model.jsonio import load_npz, save_npz
from tests.models.builds import prepared


@pytest.fixture
def work(tmp_path):
    b = prepared("conv_net", op=True)
    shutil.copy2(b.onnx, tmp_path / "m.onnx")
    shutil.copy2(b.npz, tmp_path / "m.npz")
    return tmp_path


def _compile(d, **kw):
    lines = []
    kw.setdefault("out", d / "m.build")
    r = leapp_lab.compile(d / "m.onnx", npz=d / "m.npz", log=lines.append, **kw)
    return r, lines


def _stamps(build):
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in build.iterdir()
            if p.name not in ("build.json",)}


def test_unchanged_build_is_reused(work):
    first, _ = _compile(work)
    assert not first.cache.hit and first.cache.reason == "no previous run recorded"
    build = work / "m.build"
    assert (build / "cache.json").is_file()
    before = _stamps(build)
    r, lines = _compile(work)
    assert r.cache.hit and r.cache.key == first.cache.key
    assert _stamps(build) == before                          # nothing built or written again
    assert any("reused the previous build" in x for x in lines) and len(lines) == 1
    assert [t.name for t in r.taps] == [t.name for t in first.taps] and r.taps
    assert json.loads((build / "build.json").read_text())["cache"]["hit"] is True
    assert "reused the build" in str(r)
    # what verify reads is the build as it was
    assert leapp_lab.load(build).cache.hit and (build / "sample_outputs.npz").is_file()


def _changed(d, reason, change, **kw):
    """Build, change one thing, build again: it built (files replaced) and said why."""
    _compile(d)
    before = _stamps(d / "m.build")
    change()
    r, lines = _compile(d, **kw)
    assert not r.cache.hit and r.cache.reason == reason, r.cache.reason
    assert any(f"building again: {reason}" in x for x in lines)
    assert _stamps(d / "m.build")["sample_outputs.npz"] != before["sample_outputs.npz"]
    again, _ = _compile(d, **kw)
    assert again.cache.hit
    return r


def test_changed_onnx_builds_again(work):
    def change():
        m = onnx.load(str(work / "m.onnx"))
        m.doc_string = "edited"
        onnx.save(m, str(work / "m.onnx"))
    _changed(work, "changed: onnx", change)


def test_changed_samples_build_again(work):
    def change():
        arrays = load_npz(work / "m.npz")
        save_npz(work / "m.npz", {k: v + 1 for k, v in arrays.items()})
    r = _changed(work, "changed: npz", change)
    out = np.load(work / "m.build" / "sample_outputs.npz")
    assert r.samples == out["output_0"].shape[0]


def test_changed_engine_builds_again(work):
    r = _changed(work, "changed: engine", lambda: None, engine="ort-fp16")
    assert r.engine == "ort-fp16"


def test_changed_options_build_again(work):
    _changed(work, "changed: options", lambda: None, naive_check=False)


def test_force_and_edited_build(work, capsys):
    _compile(work)
    build = work / "m.build"
    before = _stamps(build)
    r, _ = _compile(work, force=True)
    assert not r.cache.hit and r.cache.reason == "forced (--force)"
    assert _stamps(build)["engine.onnx"] != before["engine.onnx"]
    (build / "compile.log").write_text("edited\n")
    r, _ = _compile(work)
    assert not r.cache.hit and "compile.log changed since it was written" in r.cache.reason
    # the CLI: --force, and the hit said on stderr
    argv = ["compile", str(work / "m.onnx"), "--engine", "ort", "--out", str(build)]
    assert cli_main(argv) == 0
    assert "reused the previous build" in capsys.readouterr().err
    assert cli_main(argv + ["--force"]) == 0
    assert "reused" not in capsys.readouterr().err


def test_archive_is_always_built(work):
    r, _ = _compile(work, out=work / "m.tgz", archive=True)
    assert not r.cache.hit and r.cache.reason.startswith("not cached: an archive")


def test_changed_external_data_builds_again(work):
    """An ONNX whose weights lie in an external data file: editing only that file is a change, and
    the build made then computes what the current ONNX computes (a fresh build in another folder)."""
    from onnx.external_data_helper import ExternalDataInfo

    m = onnx.load(str(work / "m.onnx"))
    onnx.save_model(m, str(work / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="m.onnx.data", size_threshold=256)
    external = [t for t in onnx.load(str(work / "m.onnx"), load_external_data=False).graph.initializer
                if t.data_location == onnx.TensorProto.EXTERNAL]
    assert external and all(t.data_type == onnx.TensorProto.FLOAT for t in external)

    old = {}

    def change():       # the weights' bytes in m.onnx.data, in place; m.onnx stays as it is
        old.update(np.load(work / "m.build" / "sample_outputs.npz"))
        data = bytearray((work / "m.onnx.data").read_bytes())
        for t in external:
            info = ExternalDataInfo(t)
            lo, hi = info.offset or 0, (info.offset or 0) + info.length
            data[lo:hi] = (np.frombuffer(bytes(data[lo:hi]), np.float32) * -3).tobytes()
        (work / "m.onnx.data").write_bytes(bytes(data))

    r = _changed(work, "changed: external data", change)
    reused = np.load(work / "m.build" / "sample_outputs.npz")
    fresh, _ = _compile(work, out=work / "fresh.build")
    assert not fresh.cache.hit
    fresh_out = np.load(work / "fresh.build" / "sample_outputs.npz")
    assert r.samples and reused.files and set(reused.files) == set(fresh_out.files)
    for k in fresh_out.files:
        assert np.array_equal(reused[k], fresh_out[k]), k
    assert not np.array_equal(old["output_0"], reused["output_0"])     # the edit changed the outputs

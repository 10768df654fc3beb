"""Unclear messages of issue 24 that need no LEAPP or subprocess: an npz with two members of one
name, a tap name with a control character (docs/safety.md, "Clear messages")."""
from __future__ import annotations

import io
import sys
import warnings
import zipfile

import numpy as np
import pytest
import torch

from leapp_lab import Tap, tap
from leapp_lab.compare.npzio import NpzArrays, NpzInputError
from leapp_lab.model.errors import UnusableInput
from leapp_lab.model.jsonio import load_npz
from leapp_lab.model.npzcheck import check_npz
from leapp_lab.taps.marker import CaptureMode, TapError


def _npy(a: np.ndarray) -> bytes:
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def _dup_npz(path, compress: int) -> None:
    """'x' twice (first zeros, then ones), 'y' once: numpy and zipfile read the last 'x'."""
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", compress) as z:
        warnings.simplefilter("ignore")        # zipfile: "Duplicate name"
        z.writestr("x.npy", _npy(np.zeros((2, 3), np.float32)))
        z.writestr("y.npy", _npy(np.arange(4.0)))
        z.writestr("x.npy", _npy(np.ones((2, 3), np.float32)))


@pytest.mark.parametrize("compress", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED], ids=["stored", "deflated"])
def test_npz_with_a_member_twice_is_refused_by_every_reader(tmp_path, compress):
    p = tmp_path / "twice.npz"
    _dup_npz(p, compress)
    # before: each of them returned the last 'x' (ones) without a word
    for read in (load_npz, check_npz, lambda f: dict(NpzArrays(f))):
        with pytest.raises(UnusableInput) as e:
            read(p)
        msg = str(e.value)
        assert str(p) in msg and "'x.npy'" in msg and "more than once" in msg, msg
        assert "\n" not in msg
    with pytest.raises(NpzInputError):      # verify's reader keeps its own error type
        NpzArrays(p)


def test_npz_with_distinct_members_still_reads(tmp_path):
    p = tmp_path / "ok.npz"
    np.savez(p, x=np.ones(2), y=np.zeros(3))
    assert sorted(load_npz(p)) == ["x", "y"] and sorted(check_npz(p)) == ["x", "y"]


@pytest.mark.parametrize("name, shown", [
    ("hid\x00den", "'\\x00'"), ("a\nb", "'\\n'"), ("tab\there", "'\\t'"), ("del\x7f", "'\\x7f'"),
    ("zero\u200bwidth", "'\\u200b'"), ("bidi\u202e", "'\\u202e'"), ("line\u2028sep", "'\\u2028'"),
])
def test_tap_name_with_a_control_or_format_character_is_refused_at_tap(name, shown):
    x = torch.ones(2)
    with CaptureMode(expose=None), pytest.raises(TapError) as e:
        tap(x, name)
    line = sys._getframe().f_lineno - 1
    msg = str(e.value)
    # before: recorded as it was; prepare and compile went on and verify blamed the reference
    assert repr(name) in msg and shown in msg and f"{__file__}:{line}" in msg, msg
    assert "\n" not in msg and "\x00" not in msg
    with pytest.raises(TapError) as e:
        Tap(name)
    line = sys._getframe().f_lineno - 1
    assert repr(name) in str(e.value) and f"{__file__}:{line}" in str(e.value)


def test_printable_tap_names_of_any_script_are_allowed():
    from leapp_lab.taps.marker import name_problem
    for name in ("hidden_2", "block.3/attn out", "Schicht-ä", "層_1", "x→y"):
        assert name_problem(name) is None, name
        with CaptureMode(expose=None) as cm:
            tap(torch.ones(1), name)
        assert cm.order == [name]
    assert tap(torch.ones(1), "a\x00b") is not None      # outside prepare a tap checks nothing


def test_the_reference_npz_timings_name_is_refused_as_a_tap_name():
    # before: prepare wrote its timings over the tap's reference and verify called the tap a
    # SHAPE-MISMATCH
    with CaptureMode(expose=None), pytest.raises(TapError) as e:
        tap(torch.ones(2), "benchmark_timings_ms")
    assert "'benchmark_timings_ms'" in str(e.value) and "reserved" in str(e.value)


def test_a_json_file_too_large_or_with_a_huge_number_is_refused_naming_it(tmp_path, monkeypatch):
    # before: a 180 MB report.json of "[{},{},…]" took 4.6 GB to parse (no bound on a JSON file);
    # a 5,000-digit number was a ValueError that named no file (and prepare --from-trace's
    # module.json, and a corrupt weights.safetensors, were read unbounded / ended in a traceback)
    from leapp_lab.model.jsonio import read_json
    big = tmp_path / "report.json"
    with open(big, "wb") as fh:
        fh.truncate((64 << 20) + 1)               # sparse: costs no disk, one byte over the bound
    with pytest.raises(UnusableInput, match=r"report\.json: 64\.0 MiB of JSON.*LEAPP_LAB_JSON_LIMIT_MB"):
        read_json(big)
    huge = tmp_path / "huge.json"
    huge.write_text('{"samples": ' + "9" * 5000 + "}")
    with pytest.raises(UnusableInput, match=r"huge\.json: not valid JSON"):
        read_json(huge)
    monkeypatch.setenv("LEAPP_LAB_JSON_LIMIT_MB", "0.00001")
    huge.write_text('{"samples": 1, "pad": "' + "x" * 100 + '"}')
    with pytest.raises(UnusableInput, match=r"huge\.json: .*MiB of JSON"):
        read_json(huge)


def test_npz_given_as_the_onnx_model_is_named_as_an_npz(tmp_path):
    """repair REF MODEL with the two swapped, compile of an npz: named as an npz archive (with the
    corrected repair line), not as a corrupt ONNX to prepare again."""
    from leapp_lab.steps.compile import compile as compile_
    from leapp_lab.steps.reference_check import check_reference_for_model
    np.savez(tmp_path / "model.reference.npz", y=np.zeros((2, 3), np.float32))
    (tmp_path / "model.onnx").write_bytes(b"not parsed")
    ref, onnx = tmp_path / "model.onnx", tmp_path / "model.reference.npz"      # swapped
    with pytest.raises(NpzInputError, match=r"an npz archive, not an ONNX model; .*\(did you swap them\?\): "
                                            rf"leapp-lab repair {onnx} {ref}$"):
        check_reference_for_model(ref, onnx, onnx)
    with pytest.raises(UnusableInput, match=r"not a readable ONNX model .*an npz archive: compile takes the "
                                            r"MODEL.onnx prepare wrote"):
        compile_(onnx, engine="ort", npz=onnx, out=tmp_path / "out.ort")


def test_verify_before_compile_names_the_compile_line(tmp_path):
    from leapp_lab.compare.buildio import OpenBuild
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(NpzInputError, match=r"no such build .*; not built yet: leapp-lab compile "
                                            rf"{tmp_path / 'model.onnx'} --engine ort-int8, then verify again"):
        OpenBuild(tmp_path / "model.ort-int8")
    with pytest.raises(NpzInputError, match=r"--engine ort --archive, then"):
        OpenBuild(tmp_path / "model.ort.tgz")
    with pytest.raises(NpzInputError, match=r"written by leapp-lab compile\)$"):     # no ONNX beside it
        OpenBuild(tmp_path / "other.ort")


def test_keep_fp32_of_an_unknown_node_suggests_the_close_model_nodes():
    from onnx import helper
    from leapp_lab.engines import get_engine
    from leapp_lab.steps.compile import _check_keep_fp32
    nodes = [helper.make_node("Identity", ["x"], [f"o{i}"], name=n)
             for i, n in enumerate(["node_linear_2", "node_relu", "leapp_lab_tap/linear_2"])]
    model = helper.make_model(helper.make_graph(nodes, "g", [], []))
    eng = get_engine("ort-int8")
    with pytest.raises(ValueError, match=r"\['linear_2'\]; pass ONNX node names \(did you mean \['node_linear_2'\]\?\)"):
        _check_keep_fp32(eng, model, ["linear_2"], "m.onnx")
    with pytest.raises(ValueError, match=r"\(e\.g\. \['node_linear_2', 'node_relu'\]\)"):
        _check_keep_fp32(eng, model, ["zzz"], "m.onnx")


def test_an_unknown_option_shows_the_commands_usage_and_the_closest_option(capsys):
    from leapp_lab.cli import main
    with pytest.raises(SystemExit) as exit_:
        main(["repair", "m.reference.npz", "m.onnx", "--target-nrme", "0.1"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith("usage: leapp-lab repair ") and "--target-nrmse X" in err
    assert err.endswith("leapp-lab repair: error: unrecognized arguments: --target-nrme 0.1 "
                        "(did you mean --target-nrmse?)\n")
    with pytest.raises(SystemExit):
        main(["report", "RUN", "-o", "x.html", "y"])
    assert capsys.readouterr().err.endswith("leapp-lab report: error: unrecognized arguments: y\n")


def test_a_tap_on_a_fused_tensor_gets_the_fix_of_its_kind():
    from types import SimpleNamespace as T
    from leapp_lab.steps.compile import unfused_warning
    op, man = T(name="view", kind="op", via="unfused"), T(name="h", kind="manual", via="unfused")
    bound = T(name="y", kind="manual", via="dequantize")
    assert unfused_warning([op, bound]).endswith("fuses away (view); exposing them changed the engine's kernels "
                                                 "(see the observer effect); prepare again without "
                                                 "--debug-op-taps to debug the exact untapped engine")
    assert "(h); " in unfused_warning([man]) and "; move them to a module boundary to" in unfused_warning([man])
    assert ("2 taps sit on tensors onnxruntime fuses away (view, h); " in unfused_warning([op, man]) and
            "without --debug-op-taps and move the manual ones to a module boundary" in unfused_warning([op, man]))


def test_debug_taps_all_on_a_model_without_taps_says_so():
    from types import SimpleNamespace
    from leapp_lab.taps.tap_selection import unexposed_under_all
    (w,) = unexposed_under_all([], {}, SimpleNamespace(sites={}), "dynamo")
    assert w.startswith("--debug-taps all: the model calls no tap() or Tap(), so no tap is exposed") and \
        "--debug-op-taps" in w
    assert unexposed_under_all([SimpleNamespace(name="h")], {"h": "m.py:3"},
                               SimpleNamespace(sites={"h": "m.py:3"}), "dynamo") == []


def test_an_output_folder_given_as_an_input_file_is_named_as_given(tmp_path):
    """--out model.onnx: the runs root's 'latest' lies under a file; named as the user gave it."""
    from leapp_lab.model.errors import UnsafeOutput
    from leapp_lab.model.safepaths import check_outputs
    onnx = tmp_path / "model.onnx"
    onnx.write_bytes(b"x")
    with pytest.raises(UnsafeOutput, match=rf"^--out {onnx}: is the input {onnx} \(the ONNX model\), a file; "
                                           r"choose an output folder outside the inputs$"):
        check_outputs([(onnx / "latest", "latest", "--out")], [(onnx, "the ONNX model")])


def test_prepare_text_names_the_taps_left_off():
    """Taps are off unless asked for: a model with tap() calls prepared without --debug-taps said
    '0 taps' and nothing more."""
    from leapp_lab.model.prepare import PrepareReport
    r = PrepareReport(model="m.py", onnx="b/m.onnx", samples=1, unexposed_taps=["h1", "h2"])
    assert ("  not exposed: 2 taps of the model (h1, h2); --debug-taps all (or --debug-taps NAME) exposes them"
            in str(r).splitlines())
    assert "not exposed" not in str(PrepareReport(model="m.py", onnx="b/m.onnx", samples=1))

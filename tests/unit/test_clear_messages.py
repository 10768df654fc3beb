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

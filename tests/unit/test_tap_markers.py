"""tap() / Tap markers and their modes, without exporting anything."""
from __future__ import annotations

import sys

import pytest
import torch
from torch import nn

from leapp_lab import Tap, tap
from leapp_lab.taps.marker import CaptureMode, DuplicateTapError, TapError, tap_modules
from leapp_lab.steps.prepare import declared_taps


def test_tap_off_returns_the_same_object_and_costs_nothing():
    x = torch.randn(4)
    assert tap(x, "a") is x
    assert tap(3, "not a tensor") == 3      # off: no checks at all


def test_capture_mode_records_sites_and_copies_only_exposed():
    x = torch.arange(3.0)
    with CaptureMode(expose=frozenset({"b"})) as cm:
        y = tap(x, "a")
        line_a = sys._getframe().f_lineno - 1
        z = tap(x * 2, "b")
    assert y is x and torch.equal(z, x * 2)
    assert cm.order == ["a", "b"]
    assert cm.hits["a"].line == line_a and cm.hits["a"].file == __file__
    assert list(cm.values) == ["b"] and torch.equal(cm.values["b"], x * 2)
    z.add_(1)                                   # the stored value is a copy
    assert torch.equal(cm.values["b"], x * 2)


def test_capture_all_and_modes_do_not_leak():
    with CaptureMode(expose=None) as cm:
        tap(torch.ones(1), "p")
    assert set(cm.values) == {"p"}
    x = torch.ones(1)
    assert tap(x, "p") is x                     # mode ended


def test_duplicate_in_one_forward_names_both_lines():
    with pytest.raises(DuplicateTapError) as e, CaptureMode():
        tap(torch.ones(1), "d")
        first = sys._getframe().f_lineno - 1
        tap(torch.ones(1), "d")
    assert f"{__file__}:{first}" in str(e.value) and f"{__file__}:{first + 2}" in str(e.value)


def test_bad_arguments_in_a_mode_are_named():
    with pytest.raises(TypeError, match="tap\\('n'\\).*torch.Tensor"), CaptureMode():
        tap([1, 2], "n")
    with pytest.raises(TypeError, match="non-empty string"), CaptureMode():
        tap(torch.ones(1), "")
    with pytest.raises(TypeError, match="non-empty string"):
        Tap("")
    assert issubclass(DuplicateTapError, TapError)


def test_tap_module_site_is_its_construction_line():
    t = Tap("seq")
    line = sys._getframe().f_lineno - 1
    assert t.site.file == __file__ and t.site.line == line
    assert "seq" in repr(t)
    with CaptureMode() as cm:
        nn.Sequential(nn.Identity(), t)(torch.ones(2))
    assert cm.hits["seq"] == t.site


def test_tap_modules_finds_duplicates_statically():
    a, b = Tap("x"), Tap("x")
    with pytest.raises(DuplicateTapError, match="two Tap\\('x'\\) modules"):
        tap_modules(nn.Sequential(a, nn.ReLU(), b))
    shared = Tap("y")
    assert [q for q, _ in tap_modules(nn.Sequential(shared, nn.ReLU()))] == ["0"]


def test_declared_taps_scans_literal_names(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import leapp_lab\n"
                 "x = tap(x, 'one')\n"
                 "y = leapp_lab.tap(y, name='two')\n"
                 "z = Tap('three')\n"
                 "w = tap(w, some_variable)\n"
                 "def broken(:\n")                     # a syntax error: the file is skipped
    assert declared_taps([str(f)]) == {}
    f.write_text("\n".join(f.read_text().splitlines()[:-1]) + "\n")
    found = declared_taps([str(f)])
    assert {k: v.line for k, v in found.items()} == {"one": 2, "two": 3, "three": 4}


def test_repeated_block_duplicate_says_how_to_name_each_instance():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.t = Tap("hidden")

        def forward(self, x):
            return self.t(x)

    with pytest.raises(DuplicateTapError, match=r"used more than once.*Tap\(f\"hidden_\{i\}\"\)"):
        tap_modules(nn.Sequential(Block(), Block()))

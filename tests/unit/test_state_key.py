"""The digest of what a model holds (taps/state_key.py) and of the code its forward() ran
(taps/code_profile.py): every value counts, whatever its size or depth; what has no faithful digest
is refused with a sentence naming where it is held; what ran is seen wherever it lives."""
from __future__ import annotations

import json
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch
from torch import nn

from leapp_lab.taps.code_profile import ExecutedCode, executed_digest
from leapp_lab.taps.content_key import Unhashable
from leapp_lab.taps.state_key import excluded_roots, module_state_digest

ROOTS = excluded_roots(["torch", "numpy"])


class Holder(nn.Module):
    def __init__(self, **attrs):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        for k, v in attrs.items():
            setattr(self, k, v)

    def forward(self, x):
        return self.fc(x)


def _state(**attrs) -> str:
    torch.manual_seed(0)
    return module_state_digest(Holder(**attrs), ROOTS)[0]


@pytest.mark.parametrize("before, after", [
    ({"cfg": {f"k{i}": i for i in range(300)}}, {"cfg": {**{f"k{i}": i for i in range(300)}, "k299": -1}}),
    ({"cfg": [[[[[1.0]]]]]}, {"cfg": [[[[[1.5]]]]]}),                 # deeper than any cut-off
    ({"t": torch.zeros(3)}, {"t": torch.tensor([0.0, 0.0, 1e-30])}),   # a plain tensor attribute
    ({"a": np.zeros(3, np.float32)}, {"a": np.zeros(3, np.float64)}),  # same values, another dtype
    ({"a": np.array([1, "x"], dtype=object)}, {"a": np.array([1, "y"], dtype=object)}),
    ({"s": {1, 2, 3}}, {"s": {1, 2, 4}}),
    ({"f": 0.1}, {"f": float(np.nextafter(0.1, 1.0))}),                # one ulp
    ({"fn": torch.relu}, {"fn": torch.tanh}),
    ({"p": __import__("pathlib").Path("a")}, {"p": __import__("pathlib").Path("b")}),
])
def test_every_value_the_model_holds_counts(before, after):
    assert _state(**before) == _state(**before)
    assert _state(**before) != _state(**after)


def test_set_order_and_object_identity_do_not_count():
    a, b = {"x", "y", "z"}, set()
    for k in ("z", "y", "x"):
        b.add(k)
    assert _state(s=a) == _state(s=b)
    assert _state(cfg={"n": 3}) == _state(cfg=json.loads('{"n": 3}'))


def test_class_attributes_count():
    def make(value):
        cls = type("Scaled", (Holder,), {"GAIN": torch.tensor([value])})
        torch.manual_seed(0)
        return module_state_digest(cls(), ROOTS)[0]
    assert make(1.0) == make(1.0) and make(1.0) != make(2.0)


def test_what_has_no_faithful_digest_is_refused_naming_where_it_is():
    with pytest.raises(Unhashable, match=r"^the model\.rng is a torch\._C\.Generator, whose state cannot be read$"):
        _state(rng=torch.Generator())
    with pytest.raises(Unhashable, match=r"the model\.cfg\['lock'\] is a _thread\.lock"):
        _state(cfg={"lock": threading.Lock()})


def test_the_profile_sees_the_code_forward_ran_and_its_globals(tmp_path):
    (tmp_path / "state_key_probe_mod.py").write_text("K = 2.0\n\ndef act(x):\n    return x * K\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import state_key_probe_mod as mod

        def run():
            ran = ExecutedCode()
            with ran:
                mod.act(torch.ones(1))
            return ran, executed_digest(ran, ROOTS, tmp_path)

        ran, (d1, files) = run()
        assert files == ["state_key_probe_mod.py"]
        assert run()[1][0] == d1
        mod.K = 3.0                                   # a global the code reads
        assert run()[1][0] != d1
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("state_key_probe_mod", None)


def test_another_profiler_means_no_key():
    prev = sys.getprofile()
    sys.setprofile(lambda *a: None)
    try:
        ran = ExecutedCode()
        with ran:
            pass
    finally:
        sys.setprofile(prev)
    with pytest.raises(Unhashable, match="another profiler is active"):
        executed_digest(ran, ROOTS, None)


def test_the_digest_is_the_same_in_another_process(tmp_path):
    """String hashing differs between processes: no set or frozenset order may enter the key."""
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from tests.unit.test_state_key import _state\n"
            "print(_state(s={'alpha', 'beta', 'gamma'}, fs=frozenset({'x', 'y'})))\n") % str(
                __import__("pathlib").Path(__file__).resolve().parents[2])
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                           env={**__import__("os").environ, "PYTHONHASHSEED": seed}).stdout.strip()
            for seed in ("1", "2")}
    assert len(outs) == 1 and len(outs.pop()) == 64

"""prepare's cache is never stale: after each edit a hostile probe found answered from the cache, a
re-run exports again, says why in one line, and its references are those a fresh process computes.

Each case is a tiny model in its own folder, prepared twice (the second run must reuse: the case is
cacheable), then edited. One subprocess computes every edited model's outputs eagerly from scratch
(a fresh interpreter: nothing imported, nothing cached); each test re-runs prepare in this process
and compares. A module the model imports stays imported in this process, as in a notebook: the
tests drop it from sys.modules where a fresh process would import it anew.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import leapp_lab

HEAD = '''
import importlib
import json
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
'''

TAIL = '''

def get_fwd_args():
    return (torch.linspace(-1, 1, 8).reshape(2, 4),)
'''


def _net(init: str, forward: str, extra: str = "", cls: str = "") -> str:
    body = (f"{extra}\n\nclass Model(nn.Module):\n{cls}\n    def __init__(self):\n        super().__init__()\n"
            f"        self.fc = nn.Linear(4, 3)\n{textwrap.indent(textwrap.dedent(init), ' ' * 8)}\n"
            f"    def forward(self, x):\n{textwrap.indent(textwrap.dedent(forward), ' ' * 8)}\n")
    return HEAD + body + TAIL


def _case_helper_in_forward(d):
    (d / "stale_helper_fwd.py").write_text("def act(x):\n    return x * 2.0\n")
    (d / "model.py").write_text(_net("", "import stale_helper_fwd\nreturn stale_helper_fwd.act(self.fc(x))"))
    return lambda: (d / "stale_helper_fwd.py").write_text("def act(x):\n    return x * 3.0 + 1.0\n")


def _case_tensor_from_json(d):
    (d / "cfg.json").write_text(json.dumps({"scale": [1.0, 2.0, 3.0]}))
    (d / "model.py").write_text(_net(
        "self.scale = torch.tensor(json.loads((HERE / 'cfg.json').read_text())['scale'])",
        "return self.fc(x) * self.scale"))
    return lambda: (d / "cfg.json").write_text(json.dumps({"scale": [1.0, 2.0, 3.5]}))


def _case_array_from_npy(d):
    np.save(d / "offset.npy", np.zeros(3, np.float32))
    (d / "model.py").write_text(_net("self.offset = np.load(HERE / 'offset.npy')",
                                     "return self.fc(x) + torch.from_numpy(self.offset)"))
    return lambda: np.save(d / "offset.npy", np.array([0, 0, 0.25], np.float32))


def _case_large_config_dict(d):
    cfg = {f"k{i}": float(i) for i in range(300)}
    (d / "cfg.json").write_text(json.dumps(cfg))
    (d / "model.py").write_text(_net("self.cfg = json.loads((HERE / 'cfg.json').read_text())",
                                     "return self.fc(x) * self.cfg['k299']"))
    return lambda: (d / "cfg.json").write_text(json.dumps({**cfg, "k299": 7.5}))


def _case_class_attribute_tensor(d):
    np.save(d / "gain.npy", np.ones(3, np.float32))
    (d / "model.py").write_text(_net("", "return self.fc(x) * self.GAIN",
                                     cls="    GAIN = torch.from_numpy(np.load(HERE / 'gain.npy'))\n"))
    return lambda: np.save(d / "gain.npy", np.array([1, 1, -2], np.float32))


def _case_importlib_function(d):
    (d / "stale_acts_mod.py").write_text("def double(x):\n    return x * 2\n\n\ndef triple(x):\n    return x * 3\n")
    (d / "cfg.json").write_text(json.dumps({"act": "double"}))
    (d / "model.py").write_text(_net(
        "sys.path.insert(0, str(HERE))\n"
        "self.act = getattr(importlib.import_module('stale_acts_mod'),\n"
        "                   json.loads((HERE / 'cfg.json').read_text())['act'])",
        "return self.act(self.fc(x))"))
    return lambda: (d / "cfg.json").write_text(json.dumps({"act": "triple"}))


def _case_importlib_function_body(d):
    (d / "stale_acts_body.py").write_text("def act(x):\n    return x * 2\n")
    (d / "model.py").write_text(_net(
        "sys.path.insert(0, str(HERE))\nself.act = getattr(importlib.import_module('stale_acts_body'), 'act')",
        "return self.act(self.fc(x))"))
    return lambda: (d / "stale_acts_body.py").write_text("def act(x):\n    return x - 5\n")


def _case_site_packages(d):
    pkg = d / "venv" / "lib" / "python3" / "site-packages" / "stalepkg_sp"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    layer = ("import torch\nfrom torch import nn\n\n\nclass Scale(nn.Module):\n"
             "    def forward(self, x):\n        return x * {}\n")
    (pkg / "layers.py").write_text(layer.format("2.0"))
    (d / "model.py").write_text(_net("self.scale = Scale()", "return self.scale(self.fc(x))", extra=(
        "sys.path.insert(0, str(HERE / 'venv' / 'lib' / 'python3' / 'site-packages'))\n"
        "from stalepkg_sp.layers import Scale\n")))
    return lambda: (pkg / "layers.py").write_text(layer.format("torch.tanh(x) * 4.0"))


#: case -> (how it is made and edited, the modules a fresh process imports anew, the reason said)
CASES = {
    "helper_in_forward": (_case_helper_in_forward, ["stale_helper_fwd"], "changed: user code"),
    "tensor_from_json": (_case_tensor_from_json, [], "changed: module state"),
    "array_from_npy": (_case_array_from_npy, [], "changed: module state"),
    "large_config_dict": (_case_large_config_dict, [], "changed: module state"),
    "class_attribute_tensor": (_case_class_attribute_tensor, [], "changed: module state"),
    "importlib_function": (_case_importlib_function, ["stale_acts_mod"], "changed: module state, user code"),
    "importlib_function_body": (_case_importlib_function_body, ["stale_acts_body"], "changed: user code"),
    "site_packages": (_case_site_packages, ["stalepkg_sp", "stalepkg_sp.layers"], "changed: user code"),
}

FRESH = '''
import sys
from pathlib import Path

import numpy as np
import torch

from leapp_lab.taps.loader import model_source

for d in map(Path, sys.argv[1:]):
    src = model_source(str(d / "model.py"))
    with src.importable(), torch.no_grad():
        net = src.make_model()
        out = [net(*s).numpy() for s in src.get_samples()]
    np.save(d / "fresh.npy", np.stack(out))
'''


def _prepare(d):
    said = []
    r = leapp_lab.prepare(d / "model.py", d / "out" / "m.onnx", d / "out" / "m.npz", d / "out" / "m.ref.npz",
                          progress=lambda stage, frac=None: said.append(stage))
    return r, said


def _forget(modules):
    for m in modules:
        sys.modules.pop(m, None)


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    root = tmp_path_factory.mktemp("stale")
    out = {}
    try:
        for name, (make, modules, _) in CASES.items():
            d = root / name
            d.mkdir()
            edit = make(d)
            first, _ = _prepare(d)
            again, _ = _prepare(d)
            old = np.load(d / "out" / "m.ref.npz")["output_0"]
            edit()
            _forget(modules)
            out[name] = (d, first, again, old)
        r = subprocess.run([sys.executable, "-c", FRESH, *map(str, (root / n for n in CASES))],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        yield out
    finally:
        _forget(m for _, mods, _ in CASES.values() for m in mods)


@pytest.mark.parametrize("name", list(CASES))
def test_an_edit_is_never_answered_from_the_cache(cases, name):
    d, first, again, old = cases[name]
    reason = CASES[name][2]
    assert not first.cache.hit and again.cache.hit, (first.cache, again.cache)   # cacheable before the edit
    r, said = _prepare(d)
    assert not r.cache.hit and r.cache.reason == reason, r.cache.reason
    assert f"exporting again: {reason}" in said and "export" in r.timings_s
    new = np.load(d / "out" / "m.ref.npz")["output_0"]
    fresh = np.load(d / "fresh.npy")
    assert not np.array_equal(new, old)                 # the edit changed what the model computes
    assert new.dtype == fresh.dtype and np.array_equal(new, fresh)
    assert _prepare(d)[0].cache.hit                     # and the new export is reused in turn


def test_references_that_differ_from_the_cached_ones_are_not_reused(tmp_path, monkeypatch):
    """What the key cannot see (an environment variable read in forward()) still never answers from
    the cache: the references are recomputed and compared bit for bit."""
    (tmp_path / "model.py").write_text(_net("", "return self.fc(x) * float(__import__('os').environ.get("
                                                "'STALE_GAIN', '1'))"))
    monkeypatch.setenv("STALE_GAIN", "1")
    _prepare(tmp_path)
    assert _prepare(tmp_path)[0].cache.hit
    monkeypatch.setenv("STALE_GAIN", "2")
    r, said = _prepare(tmp_path)
    assert not r.cache.hit
    assert r.cache.reason == "changed: references ('output_0' is not bit for bit the one in m.ref.npz)"
    assert f"exporting again: {r.cache.reason}" in said
    assert _prepare(tmp_path)[0].cache.hit


def test_model_folder_is_importable_inside_forward(tmp_path):
    """A module beside MODEL.py imported inside forward() is found, as under ``python MODEL.py``, by
    prepare and by verify --expected's re-run, and sys.path is as it was afterwards."""
    (tmp_path / "beside_fwd_mod.py").write_text("def act(x):\n    return x + 1\n")
    (tmp_path / "model.py").write_text(_net("", "import beside_fwd_mod\nreturn beside_fwd_mod.act(self.fc(x))"))
    from leapp_lab.model.jsonio import load_npz
    from leapp_lab.taps.lowprec import lowprec_values

    before = list(sys.path)
    try:
        r, _ = _prepare(tmp_path)
        assert sys.path == before
        ref = load_npz(tmp_path / "out" / "m.ref.npz")
        assert ref["output_0"].shape == (1, 2, 3) and r.rows
        # verify --expected re-runs the model (in a process of its own): found there too
        _forget(["beside_fwd_mod"])
        runs = lowprec_values(tmp_path / "model.py", "bf16", r.rows, inputs=None, reference=ref)
        assert runs.values["output_0"][0].shape == (2, 3) and sys.path == before
    finally:
        _forget(["beside_fwd_mod"])

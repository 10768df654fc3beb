"""prepare's cache (issue 23, Deliver 3): an unchanged model reuses the previous export and references;
each input the key covers, when changed, exports again. Real files, real torch export.

One tiny model is prepared once per module; each test works on a copy of that folder (the key and
the record hold paths relative to the folders, so a copy is a hit until something changes).
"""
from __future__ import annotations

import json
import os
import shutil
import sys

import numpy as np
import pytest

import leapp_lab
from leapp_lab.cli import main as cli_main

MODEL = '''
from pathlib import Path

import numpy as np
import torch
from torch import nn

from leapp_lab import tap

HERE = Path(__file__).resolve().parent
SCALE = 1.0


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        with torch.no_grad():       # the weights come from a data file: no source change needed
            self.fc.weight.copy_(torch.from_numpy(np.load(HERE / "w.npy")))

    def forward(self, x):
        h = tap(torch.relu(self.fc(x)) * SCALE, "hidden")
        return h.sum(dim=1, keepdim=True)


def get_samples():
    x = np.load(HERE / "x.npy")
    return [(torch.from_numpy(x[i:i + 1]),) for i in range(len(x))]


def get_fwd_args():
    return get_samples()[0]
'''


def _write_model(d):
    d.mkdir(parents=True, exist_ok=True)
    (d / "model.py").write_text(MODEL)
    np.save(d / "w.npy", np.arange(12, dtype=np.float32).reshape(3, 4) / 10)
    np.save(d / "x.npy", np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))


def _prepare(d, **kw):
    kw.setdefault("op_taps", True)
    kw.setdefault("debug_taps", [])
    said = []
    r = leapp_lab.prepare(d / "model.py", d / "out" / "m.onnx", d / "out" / "m.npz",
                          d / "out" / "m.ref.npz", progress=lambda stage, frac=None: said.append(stage), **kw)
    return r, said


def _stamps(d):
    return {n: ((d / "out" / n).stat().st_ino, (d / "out" / n).stat().st_mtime_ns)
            for n in ("m.onnx", "m.npz", "m.ref.npz")}


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    d = tmp_path_factory.mktemp("cache") / "proj"
    _write_model(d)
    r, _ = _prepare(d)
    assert r.cache is not None and not r.cache.hit and r.cache.reason == "no previous run recorded"
    return d, r


@pytest.fixture
def proj(first, tmp_path):
    d = tmp_path / "proj"
    shutil.copytree(first[0], d, copy_function=shutil.copy2)
    return d


def test_unchanged_model_reuses_the_export(first, proj):
    before = _stamps(proj)
    r, said = _prepare(proj)
    assert r.cache.hit and r.cache.key == first[1].cache.key
    assert _stamps(proj) == before                    # not one output written again
    assert any("reused the previous export" in s for s in said)
    assert "export" not in " ".join(s for s in said if "reused" not in s)     # nothing exported
    assert [x.name for x in r.rows] == [x.name for x in first[1].rows] and len(r.taps) == 2
    assert r.model_file == str((proj / "model.py").resolve())
    assert "export" not in r.timings_s and "cache_check" in r.timings_s
    # the written record says so too, and the text view
    rec = json.loads((proj / "out" / "m.prepare" / "report.json").read_text())
    assert rec["cache"]["hit"] is True and rec["cache"]["key"] == r.cache.key
    assert leapp_lab.load(proj / "out" / "m.prepare").cache.hit
    assert "reused" in str(r) and "--force" in str(r)


def _changed(proj, reason, **kw):
    """Prepare after a change: it exported again (outputs replaced), said why, and the next one hits."""
    before = _stamps(proj)
    r, said = _prepare(proj, **kw)
    assert not r.cache.hit and r.cache.reason == reason, r.cache.reason
    assert "export" in r.timings_s
    assert _stamps(proj)["m.onnx"] != before["m.onnx"]
    assert any(s == f"exporting again: {reason}" for s in said), said
    again, _ = _prepare(proj, **kw)
    assert again.cache.hit and again.cache.key == r.cache.key
    return r


def test_edited_model_source_exports_again(first, proj):
    src = (proj / "model.py").read_text()
    (proj / "model.py").write_text(src.replace("SCALE = 1.0", "SCALE = 2.0"))
    _changed(proj, "changed: model source, user code")
    old = np.load(first[0] / "out" / "m.ref.npz")["output_0"]
    new = np.load(proj / "out" / "m.ref.npz")["output_0"]
    assert old.max() > 0 and np.allclose(new, 2 * old)       # the edited model's references


def test_changed_weights_export_again(proj):
    np.save(proj / "w.npy", -np.ones((3, 4), np.float32))
    _changed(proj, "changed: state_dict")


def test_changed_samples_export_again(proj):
    np.save(proj / "x.npy", np.ones((2, 4), np.float32))
    _changed(proj, "changed: samples")


def test_changed_tap_options_export_again(proj):
    r = _changed(proj, "changed: tap options", op_taps=False, debug_taps=["hidden"])
    assert [t.name for t in r.taps] == ["hidden"]


def test_changed_exporter_exports_again(proj):
    r = _changed(proj, "changed: exporter", exporter="torchscript")
    assert r.exporter == "torchscript"


def test_force_exports_again(proj):
    before = _stamps(proj)
    r, _ = _prepare(proj, force=True)
    assert not r.cache.hit and r.cache.reason == "forced (--force)" and "export" in r.timings_s
    assert _stamps(proj)["m.onnx"] != before["m.onnx"]


def test_an_output_edited_since_is_not_reused(proj):
    ref = proj / "out" / "m.ref.npz"
    data = bytearray(ref.read_bytes())
    data[-40] ^= 0xFF                                  # same size, other bytes
    ref.write_bytes(bytes(data))
    r, _ = _prepare(proj)
    assert not r.cache.hit and "changed since it was written (sha256)" in r.cache.reason
    assert np.load(ref)["relu"].shape == (2, 1, 3)     # written again, whole
    (proj / "out" / "m.npz").unlink()
    r, _ = _prepare(proj)
    assert not r.cache.hit and r.cache.reason.endswith("m.npz is gone")


def test_edited_imported_module_exports_again(tmp_path):
    # a module of the user's own beside MODEL.py (its name is this test's: a module imported once
    # stays imported in this process, as in a notebook)
    name = "cache_helper_mod"
    d = tmp_path / "proj"
    d.mkdir()
    helper = d / f"{name}.py"

    def write_helper(body, mtime):
        helper.write_text(f"import torch\n\ndef act(x):\n    return {body}\n")
        os.utime(helper, (mtime, mtime))

    write_helper("torch.relu(x)", 1_000_000_000)
    (d / "model.py").write_text(
        f"import torch\nfrom torch import nn\nimport {name} as helper\n\n"
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n        return helper.act(self.fc(x))\n\n"
        "def get_fwd_args():\n    return (torch.ones(1, 4),)\n")
    try:
        _prepare(d)
        assert _prepare(d)[0].cache.hit
        # edited, and imported afresh (a new process, a restarted kernel): exported again
        write_helper("torch.tanh(x) * 2.0", 1_000_000_100)
        sys.modules.pop(name, None)
        r, _ = _prepare(d)
        assert not r.cache.hit and r.cache.reason == "changed: user code"
        assert _prepare(d)[0].cache.hit
        # edited while this process still holds the module as it was imported (a notebook): the
        # file changed, so it exports again, with the code Python runs; the key holds that code
        # too, so once the module is imported afresh (a restart) it exports again, never reusing
        # outputs of code that no longer runs
        write_helper("torch.sigmoid(x)", 1_000_000_200)
        r, _ = _prepare(d)
        assert not r.cache.hit and r.cache.reason == "changed: user code"
        assert _prepare(d)[0].cache.hit
        sys.modules.pop(name, None)
        r, _ = _prepare(d)
        assert not r.cache.hit and r.cache.reason == "changed: user code"
    finally:
        sys.modules.pop(name, None)


def test_cli_force_flag_and_stderr(first, proj, capsys):
    out = proj / "out"
    argv = ["prepare", str(proj / "model.py"), "--onnx-out", str(out / "m.onnx"), "--npz-out",
            str(out / "m.npz"), "--reference-out", str(out / "m.ref.npz"), "--debug-op-taps"]
    before = _stamps(proj)
    assert cli_main(argv) == 0
    err = capsys.readouterr().err
    assert "reused the previous export and references" in err and _stamps(proj) == before
    assert cli_main(argv + ["--force"]) == 0
    err = capsys.readouterr().err
    assert "reused" not in err and "exporting to ONNX" in err and _stamps(proj)["m.onnx"] != before["m.onnx"]


CELL = '''
import torch
from torch import nn

GAIN = {gain}

class CellNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return torch.{act}(self.fc(x)) * GAIN

torch.manual_seed(0)
model = CellNet()
args = (torch.ones(1, 4),)
'''


def test_notebook_cell_model_is_keyed_by_its_code(tmp_path):
    """%%leapp_prepare: the class and constants of the cell (no file) are in the key."""
    import io
    from contextlib import redirect_stdout

    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    try:
        with redirect_stdout(io.StringIO()):
            sh.run_line_magic("load_ext", "leapp_lab")
        line = (f"--onnx-out {tmp_path}/m.onnx --npz-out {tmp_path}/m.npz --reference-out "
                f"{tmp_path}/m.ref.npz --quiet")

        def run(act="relu", gain="1.0", extra=""):
            with redirect_stdout(io.StringIO()):
                return sh.run_cell_magic("leapp_prepare", line + extra, CELL.format(act=act, gain=gain))

        assert run().cache.reason == "no previous run recorded"
        assert run().cache.hit
        r = run(act="tanh")
        assert not r.cache.hit and r.cache.reason == "changed: user code"
        r = run(act="tanh", gain="3.0")
        assert not r.cache.hit and r.cache.reason == "changed: user code"
        assert run(act="tanh", gain="3.0").cache.hit
        r = run(act="tanh", gain="3.0", extra=" --force")
        assert not r.cache.hit and r.cache.reason == "forced (--force)"
    finally:
        InteractiveShell.clear_instance()

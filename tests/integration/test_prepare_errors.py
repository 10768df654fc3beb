"""Every way a requested tap (or a MODEL.py) can be unusable fails prepare with a message naming it."""
from __future__ import annotations

import re

import onnx
import pytest
import torch

import leapp_lab
from leapp_lab import tap
from leapp_lab.cli import main as cli_main
from leapp_lab.taps.errors import PrepareError, TapError
from leapp_lab.taps.marker import DuplicateTapError
from tests.models import model_path
from tests.models import tap_errors as te

ERRORS_PY = model_path("tap_errors")


def _src_line(pattern: str) -> int:
    lines = ERRORS_PY.read_text().splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if pattern in line]
    assert hits, pattern
    return hits[0]


def _prepare(tmp_path, ns, taps=()):
    return leapp_lab.prepare(ns, tmp_path / "m.onnx", tmp_path / "m.npz", tmp_path / "r.npz",
                             debug_taps=taps)


def _ns(model, samples=None):
    d = {"Model": model, "get_fwd_args": te.fwd_args}
    if samples is not None:
        d["get_samples"] = samples
    return d


def test_typo_suggests_close_names(tmp_path):
    with pytest.raises(TapError) as e:
        _prepare(tmp_path, str(model_path("mlp_policy")), taps=["hiden_2"])
    msg = str(e.value)
    assert "'hiden_2'" in msg and "no such tap()" in msg
    assert "did you mean 'hidden_2'" in msg
    assert not (tmp_path / "m.onnx").exists()          # failed before writing anything


def test_typo_via_cli_exit_2(tmp_path, capsys):
    rc = cli_main(["prepare", str(model_path("conv_net")), "--onnx-out", str(tmp_path / "m.onnx"),
                   "--npz-out", str(tmp_path / "m.npz"), "--reference-out", str(tmp_path / "r.npz"),
                   "--debug-taps", "blok1", "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "debug tap 'blok1'" in err and "'block1'" in err and "Traceback" not in err


def test_branch_not_taken_names_the_site(tmp_path):
    with pytest.raises(TapError) as e:
        _prepare(tmp_path, _ns(te.BranchNotTaken), taps=["aux_branch"])
    msg = str(e.value)
    assert "'aux_branch'" in msg and "branch not taken" in msg
    line = _src_line('"aux_branch"')
    assert f"tap_errors.py:{line}" in msg


def test_branch_not_taken_on_some_samples(tmp_path):
    samples = lambda: [(torch.ones(2, 4),), (torch.full((2, 4), 20.0),)]  # noqa: E731
    with pytest.raises(TapError) as e:
        _prepare(tmp_path, _ns(te.SampleBranch, samples), taps=["saturated"])
    assert re.search(r"'saturated'.*branch not taken on sample 0", str(e.value))


def test_optimised_away(tmp_path):
    with pytest.raises(TapError) as e:
        _prepare(tmp_path, _ns(te.OptimisedAway), taps=["doubled"])
    msg = str(e.value)
    assert "'doubled'" in msg and "optimised away" in msg
    line = _src_line('"doubled"')
    assert f"tap_errors.py:{line}" in msg
    # under "all" the dropped tap is a warning, not an error
    r = _prepare(tmp_path, _ns(te.OptimisedAway), taps=["all"])
    assert r.taps == [] and any("'doubled'" in w and "optimised away" in w for w in r.warnings)


def test_bfloat16_tells_to_cast(tmp_path):
    with pytest.raises(TapError) as e:
        _prepare(tmp_path, _ns(te.Bfloat16Tap), taps=["half_features"])
    msg = str(e.value)
    assert "'half_features'" in msg and "bfloat16" in msg and "float32" in msg


def test_duplicate_tap_names_name_both_sites(tmp_path):
    with pytest.raises(DuplicateTapError) as e:
        _prepare(tmp_path, _ns(te.DuplicateNames))          # taps off: still an error
    msg = str(e.value)
    lines = [i + 1 for i, line in enumerate(ERRORS_PY.read_text().splitlines()) if '"feat")' in line]
    assert len(lines) == 2
    assert all(f"tap_errors.py:{n}" in msg for n in lines)
    with pytest.raises(DuplicateTapError) as e:
        _prepare(tmp_path, {"Model": te.duplicate_tap_modules, "get_fwd_args": te.fwd_args})
    msg = str(e.value)
    lines = [i + 1 for i, line in enumerate(ERRORS_PY.read_text().splitlines()) if 'Tap("same")' in line]
    assert len(lines) == 2
    assert "'same'" in msg and all(f"tap_errors.py:{n}" in msg for n in lines)


def test_tap_inside_torch_cond_or_while_loop_names_the_tap_and_its_line(tmp_path, capsys):
    """Found by a new user: prepare said 'the model's forward raised on sample 0 ...
    UncapturedHigherOrderOpError ...; check get_fwd_args()/get_samples() against forward()', though
    the model runs outside prepare: torch compiles a cond's branches and cannot trace tap()."""
    line = _src_line('"pos_branch"')
    with pytest.raises(PrepareError) as e:
        _prepare(tmp_path, _ns(te.TapInCond))               # taps off: tap() still runs in the branch
    msg = str(e.value)
    assert re.search(rf"the tap named 'pos_branch' at \S*tap_errors.py:{line} is inside a torch.cond branch", msg)
    assert "move the tap outside the branch (tap the cond's result)" in msg
    assert "get_fwd_args" not in msg
    line = _src_line('"loop_body"')
    with pytest.raises(PrepareError,
                       match=rf"'loop_body' at \S*tap_errors.py:{line} is inside a torch.while_loop body"):
        _prepare(tmp_path, _ns(te.TapInWhileLoop), taps=["all"])
    model_py = tmp_path / "cond_model.py"
    model_py.write_text("import torch\n"
                        "from tests.models.tap_errors import TapInCond as Model, fwd_args as get_fwd_args\n")
    rc = cli_main(["prepare", str(model_py), "--onnx-out", str(tmp_path / "m.onnx"), "--npz-out",
                   str(tmp_path / "m.npz"), "--reference-out", str(tmp_path / "r.npz"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "the tap named 'pos_branch'" in err and "Traceback" not in err


def test_tap_module_reused_twice_in_one_forward():
    t = leapp_lab.Tap("reused")
    net = torch.nn.Sequential(t, torch.nn.ReLU(), t)
    from leapp_lab.taps.marker import CaptureMode
    with CaptureMode() as _, pytest.raises(DuplicateTapError, match="ran twice in one forward"):
        net(torch.ones(1))


def test_missing_model_or_fwd_args_names_the_file(tmp_path):
    f = tmp_path / "no_model.py"
    f.write_text("import torch\ndef get_fwd_args():\n    return (torch.ones(1),)\n")
    with pytest.raises(PrepareError, match=re.escape(str(f)) + ".*defines no Model"):
        _prepare(tmp_path, str(f))
    g = tmp_path / "no_args.py"
    g.write_text("import torch\nModel = lambda: torch.nn.Linear(1, 1)\n")
    with pytest.raises(PrepareError, match=re.escape(str(g)) + ".*defines no get_fwd_args"):
        _prepare(tmp_path, str(g))
    rc = cli_main(["prepare", str(tmp_path / "absent.py"), "--onnx-out", str(tmp_path / "m.onnx"),
                   "--npz-out", str(tmp_path / "m.npz"), "--reference-out", str(tmp_path / "r.npz")])
    assert rc == 2


def test_tap_outside_prepare_is_identity():
    x = torch.randn(3)
    assert leapp_lab.tap(x, "anything") is x
    m = leapp_lab.Tap("t")
    assert m(x) is x and "tap_errors" not in m.site.file and m.site.line > 0


class _OutputNamedLikeInput(torch.nn.Module):
    """Found trying a new model: the exporter writes a graph whose output 'x' is also its input
    'x', which no runtime loads; compile then failed with onnxruntime's 'Duplicate definition'."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return {"x": torch.tanh(self.lin(x)) + x}


def test_an_output_named_like_an_input_is_refused_naming_both(tmp_path, capsys):
    ns = {"model": _OutputNamedLikeInput().eval(), "samples": [(torch.randn(2, 8),)]}
    with pytest.raises(PrepareError, match=r"output 'x' has the name of the model input 'x'.*'x_out'"):
        _prepare(tmp_path, ns)
    assert not any(tmp_path.iterdir())                 # nothing written
    model_py = tmp_path / "same_name.py"
    model_py.write_text("import torch\n"
                        "class Model(torch.nn.Module):\n"
                        "    def forward(self, x):\n"
                        "        return {'x': x * 2}\n"
                        "def get_fwd_args():\n"
                        "    return (torch.ones(2, 3),)\n")
    out = tmp_path / "out"
    rc = cli_main(["prepare", str(model_py), "--onnx-out", str(out / "m.onnx"), "--npz-out",
                   str(out / "m.npz"), "--reference-out", str(out / "r.npz"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "output 'x' has the name of the model input 'x'" in err and "Traceback" not in err
    assert not out.exists() or not any(out.iterdir())


class _TapOnItsOutput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 8), torch.nn.Linear(8, 3)

    def forward(self, x):
        h = tap(torch.relu(self.a(x)), "h")
        return {"latent": tap(self.b(h), "latent")}


def test_a_tap_named_like_the_output_it_marks_is_that_output(tmp_path):
    """``return {"latent": tap(y, "latent")}`` (a LEAPP node's port tapped under its name) gave the
    ONNX two graph outputs 'latent': onnxruntime refused it ('OrtValue indexes should have been
    populated') and compile --engine ort-int8 failed; now the output's row is the tap."""
    rep = _prepare(tmp_path, {"model": _TapOnItsOutput().eval(), "samples": [(torch.randn(1, 4),)] * 2},
                   taps=["all"])
    m = onnx.load(str(tmp_path / "m.onnx"))
    assert [o.name for o in m.graph.output] == ["latent", "h"]
    assert [(r.name, r.kind) for r in rep.rows] == [("h", "manual"), ("latent", "output")]
    assert any("marks the output 'latent' itself" in w for w in rep.warnings)
    import onnxruntime
    onnxruntime.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])

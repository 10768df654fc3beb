"""Acceptance cases a new user hit with their own MODEL.py files (written fresh, not the test models)."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from leapp_lab.cli import main as cli_main
from leapp_lab.taps.errors import PrepareError


def _write(tmp_path, name, body):
    f = tmp_path / name
    f.write_text(textwrap.dedent(body))
    return f


def _outs(tmp_path):
    return [str(tmp_path / "m.onnx"), str(tmp_path / "m.npz"), str(tmp_path / "m.reference.npz")]


def test_forward_that_raises_is_a_one_line_usage_error_naming_the_line(tmp_path, capsys):
    f = _write(tmp_path, "shape_bug.py", """\
        import torch
        from torch import nn
        class Model(nn.Module):
            def __init__(self):
                super().__init__(); self.l = nn.Linear(3, 3)
            def forward(self, x):
                return self.l(x.view(5, 7))
        def get_fwd_args():
            return (torch.randn(2, 3),)
        """)
    o, n, r = _outs(tmp_path)
    rc = cli_main(["prepare", str(f), "--onnx-out", o, "--npz-out", n, "--reference-out", r, "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "Traceback" not in err
    assert "forward raised on sample 0 at shape_bug.py:7" in err
    assert "RuntimeError" in err and "[5, 7]" in err
    assert not (tmp_path / "m.onnx").exists()


def test_dict_as_last_forward_argument_is_a_positional_argument(tmp_path):
    import leapp_lab
    f = _write(tmp_path, "dict_batch.py", """\
        import torch
        from torch import nn
        class Model(nn.Module):
            def __init__(self):
                super().__init__(); self.l = nn.Linear(3, 3)
            def forward(self, batch):
                return self.l(batch["x"]) + batch["y"]
        def get_fwd_args():
            return ({"x": torch.randn(2, 3), "y": torch.randn(2, 3)},)
        """)
    rep = leapp_lab.prepare(str(f), *_outs(tmp_path))
    assert rep.exporter == "dynamo"
    with np.load(tmp_path / "m.npz", allow_pickle=False) as z:
        inputs = {k: z[k] for k in z.files}
    assert sorted(inputs) == ["batch_x", "batch_y"]
    with np.load(tmp_path / "m.reference.npz", allow_pickle=False) as z:
        ref = z["output_0"]
    # the reference is the model's own forward on the stored inputs (independent recomputation)
    import torch
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    want = (torch.from_numpy(inputs["batch_x"][0]) @ lin.weight.T + lin.bias
            + torch.from_numpy(inputs["batch_y"][0])).detach().numpy()
    np.testing.assert_allclose(ref[0], want, rtol=1e-6, atol=1e-6)
    # the dict-fed model compiles and verifies end to end; an archive is named as one
    b = leapp_lab.compile(str(tmp_path / "m.onnx"), engine="ort", archive=True)
    assert "build archive: " in str(b) and str(b.path).endswith(".tgz")
    v = leapp_lab.verify(str(tmp_path / "m.reference.npz"), b.path, max_mape=1e-3, save=False)
    assert v.exit_code == 0 and v.row("output_0").status == "compared"


def test_forward_raise_from_python_api_is_prepare_error(tmp_path):
    import leapp_lab
    f = _write(tmp_path, "typo_model.py", """\
        import torch
        from torch import nn
        class Model(nn.Module):
            def forward(self, x):
                return x.nosuchmethod()
        def get_fwd_args():
            return (torch.randn(2),)
        """)
    with pytest.raises(PrepareError, match=r"typo_model\.py:5: AttributeError"):
        leapp_lab.prepare(str(f), *_outs(tmp_path))


def test_tap_on_a_tuple_keeps_taps_own_message(tmp_path, capsys):
    f = _write(tmp_path, "tuple_tap.py", """\
        import torch
        from torch import nn
        from leapp_lab import tap
        class Model(nn.Module):
            def forward(self, x):
                pair = tap((x, x * 2), "pair")
                return pair[0] + pair[1]
        def get_fwd_args():
            return (torch.randn(2, 4),)
        """)
    o, n, r = _outs(tmp_path)
    rc = cli_main(["prepare", str(f), "--onnx-out", o, "--npz-out", n, "--reference-out", r, "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert "tap('pair')" in err and "tuple_tap.py:6" in err and "expected a torch.Tensor, got tuple" in err
    assert "get_fwd_args" not in err


def test_model_inside_a_package_with_relative_imports(tmp_path):
    import leapp_lab
    pkg = tmp_path / "newuser_pkg_rel"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    _write(pkg, "layers.py", """\
        from torch import nn
        class Head(nn.Module):
            def __init__(self):
                super().__init__(); self.l = nn.Linear(4, 2)
            def forward(self, x):
                return self.l(x)
        """)
    f = _write(pkg, "policy_model.py", """\
        import torch
        from .layers import Head
        Model = Head
        def get_fwd_args():
            return (torch.randn(1, 4),)
        """)
    rep = leapp_lab.prepare(str(f), *_outs(tmp_path))
    assert [r.name for r in rep.rows] == ["output_0"]
    with np.load(tmp_path / "m.reference.npz", allow_pickle=False) as z:
        assert z["output_0"].shape == (1, 1, 2)
    # not in a package: the import error is reported as before
    g = _write(tmp_path, "loose.py", "from .layers import Head\n")
    with pytest.raises(PrepareError, match=r"loose\.py: importing it failed: ImportError"):
        leapp_lab.prepare(str(g), *_outs(tmp_path))

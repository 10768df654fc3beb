"""Session fixtures for the browser tests: one Chromium, one JupyterLab server, real reports."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness import CHROME_ARGS, CHROMIUM, jupyter_lab  # noqa: E402


@pytest.fixture(scope="session")
def chromium():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def lab_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lab")


@pytest.fixture(scope="session")
def lab(lab_root, tmp_path_factory):
    """(base_url, token, root_dir) of a JupyterLab server (also serving Notebook 7)."""
    work = tmp_path_factory.mktemp("lab_server")
    with jupyter_lab(lab_root, work) as (base, token):
        yield base, token, lab_root


@pytest.fixture
def page(chromium):
    ctx = chromium.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(f"{e}\n{e.stack or ''}"))
    pg.errors = errors
    yield pg
    ctx.close()


@pytest.fixture(scope="session")
def frozen_trace(tmp_path_factory):
    """A real LEAPP trace of a pipeline with a frozen constant (``.item()``)."""
    import torch
    from leapp import annotate

    import leapp_lab
    out = tmp_path_factory.mktemp("trace")
    torch.manual_seed(0)
    with leapp_lab.trace("frozen", save_path=str(out), max_cached_io=4) as t:
        for step in range(4):
            x = annotate.input_tensors("scale", {"obs": torch.randn(2, 3) * (step + 1)})
            y = annotate.output_tensors("scale", {"y": x * x.abs().max().item()}, export_with="jit")
            z = annotate.input_tensors("head", {"y": y})
            annotate.output_tensors("head", {"out": torch.tanh(z) + 1}, export_with="onnx")
    return t.report


def have_dot() -> bool:
    return shutil.which("dot") is not None


@pytest.fixture(scope="session")
def int8_verify(tmp_path_factory):
    """A real verify run: tests/models/mlp_policy.py with every tap, onnxruntime int8 against torch."""
    import leapp_lab
    root = Path(__file__).resolve().parents[1]
    out = tmp_path_factory.mktemp("verify")
    leapp_lab.prepare(str(root / "models" / "mlp_policy.py"), out / "model.onnx", out / "model.npz",
                      out / "model.reference.npz", debug_taps="all")
    build = leapp_lab.compile(str(out / "model.onnx"), engine="ort-int8")
    return leapp_lab.verify(str(out / "model.reference.npz"), str(out / "model.ort-int8"))

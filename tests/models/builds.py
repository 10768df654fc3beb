"""Prepared builds of the shared test models, made once per test session and shared by every test.

    from tests.models.builds import prepared
    b = prepared("mlp_policy", taps=("all",))     # -> Prepared(dir, onnx, npz, reference, report)

Builds live in one temporary folder per process; treat them as read-only (copy before editing).
"""
from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import model_path

_ROOT: Path | None = None


def _root() -> Path:
    global _ROOT
    if _ROOT is None:
        _ROOT = Path(tempfile.mkdtemp(prefix="leapp_lab_builds_"))
        atexit.register(shutil.rmtree, _ROOT, True)
    return _ROOT


@dataclass(frozen=True)
class Prepared:
    dir: Path
    onnx: Path
    npz: Path
    reference: Path
    report: Any


@functools.lru_cache(maxsize=None)
def prepared(name: str, taps: tuple[str, ...] = (), plugin: bool = False, op: bool = False,
             session_options: bool | None = None) -> Prepared:
    """prepare tests/models/<name>.py once (per distinct arguments) and return the files.

    ``session_options=False`` disables the model's get_ort_session_options() (no custom-op kernels
    for the onnxruntime reference run).
    """
    import leapp_lab
    from leapp_lab.taps.loader import load_module

    tag = "-".join([name, *taps, "plugin" if plugin else "", "op" if op else "",
                    "noort" if session_options is False else ""]).strip("-").replace("--", "-")
    d = _root() / tag
    d.mkdir(parents=True, exist_ok=True)
    source: Any = model_path(name)
    if session_options is False:
        module = load_module(source)
        ns = {k: v for k, v in vars(module).items() if k != "get_ort_session_options"}
        ns["__file__"] = str(source)
        source = _Namespace(ns, str(model_path(name)))
    report = leapp_lab.prepare(source, d / "model.onnx", d / "model.npz", d / "model.reference.npz",
                               debug_taps=taps, plugin_taps=plugin, op_taps=op)
    return Prepared(d, d / "model.onnx", d / "model.npz", d / "model.reference.npz", report)


class _Namespace:
    """A module-like object without one attribute (for session_options=False)."""

    def __init__(self, ns: dict, file: str):
        self.__dict__.update(ns)
        self.__file__ = file

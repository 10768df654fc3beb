"""Helpers of the deep-check tests: load a pipeline of tests/pipelines/ and trace it."""
from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import leapp_lab

PIPELINES = Path(__file__).resolve().parents[1] / "pipelines"


def load_pipeline(name: str):
    spec = importlib.util.spec_from_file_location(f"deep_pipeline_{name}", PIPELINES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def trace(mod, out, **extra):
    """The pipeline traced with ``leapp_lab.trace`` under ``out`` (its OPTIONS, then ``extra``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with leapp_lab.trace(mod.NAME, save_path=str(out), **{**mod.OPTIONS, **extra}) as t:
            mod.body()
    return t.report

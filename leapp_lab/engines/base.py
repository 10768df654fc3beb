"""Engine protocol, Polygraphy style: a *builder* turns an ONNX model into an engine artifact, and a
small *runner* (activate / run / deactivate, context manager) executes that artifact.

Subclasses override the ``*_impl`` methods only; the public methods do the checks.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping

import numpy as np

#: progress(stage, done, total): called during long builds (calibration, sample runs).
ProgressFn = Callable[[str, int, int], None]


class CompileError(RuntimeError):
    """The engine cannot be built or run; the message names the op, tap, file or package."""


class EngineUnavailable(CompileError):
    """The engine needs something this machine lacks (a package, a GPU); the message says what."""


class Runner:
    """Runs one engine artifact. ``with runner: outputs = runner.run(feed)``."""

    name: ClassVar[str] = "runner"

    def __init__(self) -> None:
        self.is_active = False

    def activate(self) -> "Runner":
        if not self.is_active:
            self._activate_impl()
            self.is_active = True
        return self

    def run(self, feed: Mapping[str, np.ndarray], output_names: list[str] | None = None) -> dict[str, np.ndarray]:
        """One inference: every requested output (default: all) by name, from *one* engine call."""
        if not self.is_active:
            raise RuntimeError(f"{self.name}: call activate() (or use 'with') before run()")
        return self._run_impl(dict(feed), output_names)

    def deactivate(self) -> None:
        if self.is_active:
            self._deactivate_impl()
            self.is_active = False

    def __enter__(self) -> "Runner":
        return self.activate()

    def __exit__(self, *exc: Any) -> None:
        self.deactivate()

    # -- to override ---------------------------------------------------------------------------
    def _activate_impl(self) -> None:
        pass

    def _run_impl(self, feed: dict[str, np.ndarray], output_names: list[str] | None) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _deactivate_impl(self) -> None:
        pass

    # -- introspection -------------------------------------------------------------------------
    @property
    def input_names(self) -> list[str]:
        raise NotImplementedError

    @property
    def output_names(self) -> list[str]:
        raise NotImplementedError


class Engine:
    """An engine kind (``ort``, ``ort-int8``, ``trt-fp16``...): how to build and run artifacts.

    ``build(untapped, taps, calibration, workdir)`` returns a :class:`Built` with the tapped and
    untapped artifacts; the caller (``leapp_lab.steps.compile.compile``) runs them.
    """

    name: ClassVar[str] = ""
    precision: ClassVar[str] = "fp32"
    #: names of nodes of the untapped model this build keeps in fp32 (a mixed-precision engine;
    #: ``compile(keep_fp32=...)`` sets it; only reduced-precision engines honour it)
    keep_fp32: frozenset[str] = frozenset()
    #: what writes the int8 Q/DQ (``ort`` or ``modelopt``; int8 engines only)
    quantizer: str | None = None
    #: ``build`` takes a model whose weights are external data in ``weights_dir`` (the prepared
    #: model's folder: compile never loads them, a session reads them by path); False: inline
    weightless: ClassVar[bool] = False
    weights_dir: Path | None = None

    def check_available(self) -> None:
        """Raise EngineUnavailable naming what is missing."""

    def build(self, untapped, taps, calibration, workdir: Path, log: Callable[[str], None],
              progress: ProgressFn | None = None, naive=None) -> "Built":
        """Convert ``untapped`` (an onnx.ModelProto without tap outputs), build the engine, expose
        ``taps`` (a list of leapp_lab.model.tap.TapEntry) on it, write the artifacts into
        ``workdir``. ``calibration``: one feed dict per sample. ``naive``: the model with its taps
        as outputs, to measure what tapping before conversion would change (None: skip)."""
        raise NotImplementedError

    def runner(self, artifact: Path) -> Runner:
        raise NotImplementedError


class Built:
    """What ``Engine.build`` produced. ``taps``: a copy of each tap with its binding filled in
    (``TapEntry.bind``);
    ``kernels_*``: op type counts of the engine graphs (tap-exposure nodes excluded);
    ``naive_kernels``: op counts of the naive way (taps as outputs before conversion), or None.
    ``engine_onnx``: the typed ONNX the engine is (onnxruntime) or was built from (TensorRT).
    ``debug``: how the engine exposes its taps (TensorRT: which debug-tensor APIs it used)."""

    def __init__(self, artifact: Path, untapped_artifact: Path, taps: list,
                 kernels_tapped: dict[str, int], kernels_untapped: dict[str, int],
                 naive_kernels: dict[str, int] | None = None, custom_ops: dict[str, str] | None = None,
                 engine_onnx: Path | None = None, debug: list[str] | None = None):
        self.artifact = artifact
        self.untapped_artifact = untapped_artifact
        self.taps = taps
        self.kernels_tapped = kernels_tapped
        self.kernels_untapped = kernels_untapped
        self.naive_kernels = naive_kernels
        self.custom_ops = custom_ops or {}
        self.engine_onnx = engine_onnx
        self.debug = debug or []

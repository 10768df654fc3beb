"""The ONNX export: the dynamo exporter in ``ExportMode``, else TorchScript with the reason logged.

The exporter prints its steps and chatter to stdout; while it runs, the steps become progress and
the rest goes to the debug log.
"""
from __future__ import annotations

import contextlib
import io
import logging
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import onnx
import torch
from torch import nn

from .errors import PrepareError, TapError, first_line, strip_ansi
from .loader import ModelSource
from .marker import ExportMode, Site

log = logging.getLogger("leapp_lab.taps")

ProgressFn = Callable[[str, float | None], None]

_EXPORT_STEPS = {"Obtain model graph": 0.2, "Run decompositions": 0.35,
                 "Translate the graph": 0.45, "Optimize the ONNX graph": 0.55}


@dataclass
class Exported:
    proto: onnx.ModelProto
    program: Any                     # torch.export.ExportedProgram; None from TorchScript
    exporter: str                    # "dynamo" or "torchscript"
    fallback_reason: str | None      # why the dynamo exporter failed, when it did
    hits: dict[str, Site] = field(default_factory=dict)  # taps reached while exporting


def export(net: nn.Module, args: tuple, output_names: list[str], expose: frozenset[str] | None,
           exporter: str, src: ModelSource, say: ProgressFn | None = None,
           input_names: list[str] | None = None) -> Exported:
    """``expose``: the tap names to mark, None for all; an empty set exports with no mode at all.
    ``input_names``: the graph inputs' names (default: the forward's parameter names); a traced
    LEAPP node passes its port names, as LEAPP's own export does."""
    if args and isinstance(args[-1], dict):
        # torch.onnx.export reads a trailing dict in args as keyword arguments; the documented way
        # to pass a dict as the last positional argument is to append an empty dict.
        args = (*args, {})
    reason = None
    if exporter == "dynamo":
        mode = ExportMode(expose=expose) if (expose is None or expose) else None
        try:
            with (mode if mode is not None else contextlib.nullcontext()):
                with _quiet(say, stderr=True):
                    table = src.translation_table() if src.translation_table else None
                    program = torch.onnx.export(net, args, dynamo=True, verbose=None,
                                                output_names=output_names, optimize=True,
                                                custom_translation_table=table,
                                                **({"input_names": input_names} if input_names else {}))
            hits = dict(mode.hits) if mode is not None else {}
            return Exported(program.model_proto, program.exported_program, "dynamo", None, hits)
        except TapError:
            raise
        except Exception as exc:  # the exporter raises many types; keep the root cause as reason
            root = _root_cause(exc)
            reason = f"{type(root).__name__}: {first_line(root)}"
            log.warning("dynamo export of %s failed (%s); falling back to the TorchScript exporter",
                        src.label, reason)
    buf = io.BytesIO()
    try:
        with _quiet():
            torch.onnx.export(net, args, buf, dynamo=False, output_names=output_names,
                              input_names=input_names or _input_names(net, args))
    except Exception as exc:
        msg = f"{src.label}: ONNX export failed: {type(exc).__name__}: {first_line(exc)}"
        if reason:
            msg += f" (the dynamo exporter failed first: {reason})"
        raise PrepareError(msg) from exc
    return Exported(onnx.load_from_string(buf.getvalue()), None, "torchscript", reason)


def _root_cause(exc: BaseException) -> BaseException:
    seen = {id(exc)}
    while True:
        nxt = exc.__cause__ or exc.__context__
        if nxt is None or id(nxt) in seen:
            return exc
        seen.add(id(nxt))
        exc = nxt


def _input_names(net: nn.Module, args: tuple) -> list[str] | None:
    """Forward parameter names for the TorchScript exporter (dynamo uses them by itself)."""
    import inspect
    try:
        params = list(inspect.signature(net.forward).parameters)
    except (TypeError, ValueError):
        return None
    if len(params) < len(args) or not all(isinstance(a, torch.Tensor) for a in args):
        return None
    return params[:len(args)]


class _Lines(io.TextIOBase):
    """A text stream handed to the exporter: each complete line goes to ``_line``."""

    buf = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.buf += text
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            self._line(line)
        return len(text)

    def _line(self, line: str) -> None:
        raise NotImplementedError


class _ExporterLines(_Lines):
    """stdout while exporting: the dynamo exporter's step lines become progress, the rest a log."""

    def __init__(self, say: ProgressFn | None):
        self.say, self.lines = say, []

    def _line(self, line: str) -> None:
        self.lines.append(line)
        clean = strip_ansi(line).strip()
        if self.say and clean.startswith("[torch.onnx]") and not clean.endswith("✅"):
            step = clean[len("[torch.onnx]"):].strip().rstrip(".")
            frac = next((f for k, f in _EXPORT_STEPS.items() if step.startswith(k)), None)
            self.say(f"export: {step[:100]}", frac)


class _OwnLinesOnly(_Lines):
    """stderr while the dynamo exporter runs: leapp_lab's progress lines pass, the rest is kept."""

    def __init__(self, real, kept: list[str]):
        self.real, self.kept = real, kept

    def _line(self, line: str) -> None:
        if line.startswith("[leapp-lab "):
            self.real.write(line + "\n")
            self.real.flush()
        else:
            self.kept.append(line)


@contextlib.contextmanager
def _quiet(say: ProgressFn | None = None, stderr: bool = False):
    """The exporter's output kept out of the user's terminal (into the debug log). ``stderr``:
    also what it prints there, but for leapp_lab's own progress lines: torch.export prints the
    partial FX graph of a failed capture (a data-dependent branch) to sys.stderr before the
    dynamo attempt gives up; prepare reports the one-line reason and falls back."""
    import warnings as _warnings

    sink = _ExporterLines(say)
    err = contextlib.redirect_stderr(_OwnLinesOnly(sys.stderr, sink.lines)) if stderr else contextlib.nullcontext()
    # the exporter's own chatter (missing torchvision ops, pytree deprecations) is not the user's,
    # nor is the "user code" torch.export logs on a data-dependent branch before it gives up
    quiet = [logging.getLogger(n) for n in ("torch.onnx._internal.exporter._registration",
                                            "torch.fx.experimental.symbolic_shapes", "torch._dynamo")]
    levels = [q.level for q in quiet]
    for q in quiet:
        q.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(sink), err, _warnings.catch_warnings():
            _warnings.simplefilter("ignore", FutureWarning)
            _warnings.simplefilter("ignore", DeprecationWarning)
            _warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\._dynamo")
            yield
    finally:
        for q, level in zip(quiet, levels):
            q.setLevel(level)
    if sink.buf:
        sink._line(sink.buf)
    if sink.lines:
        log.debug("exporter output:\n%s", "\n".join(sink.lines))

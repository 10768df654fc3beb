"""``leapp-lab compile build/model.onnx --engine ENGINE [--npz F] [--out PATH] [--archive]``."""
from __future__ import annotations

import argparse
import sys

from . import UsageError, given, say

#: exit status of a build that failed (a custom op onnxruntime cannot run, a lost manual tap...)
EXIT_BUILD_FAILED = 1


class BuildFailed(Exception):
    """compile ran but could not build the engine; main() prints it and exits 1."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from ..engines import ENGINE_NAMES

    p = sub.add_parser(
        "compile", help="build an engine from a prepared ONNX and run it on every input sample",
        description="Build ENGINE from the prepared ONNX (taps come from its manifest), run it on every "
                    "sample of --npz and write build/model.<engine>/ (or .tgz): the engine artifact, "
                    "sample_outputs.npz, compile.log and build.json. A failed build never replaces "
                    "the previous one.")
    p.add_argument("onnx", metavar="MODEL.onnx", help="the ONNX written by leapp-lab prepare")
    p.add_argument("--engine", choices=ENGINE_NAMES,
                   help="ort (onnxruntime CPU fp32, default), ort-fp16 (the typed fp16 ONNX), ort-int8 "
                        "(static QDQ), trt-fp32/trt-fp16/trt-int8 (TensorRT 11, GPU only)")
    p.add_argument("--npz", metavar="F", help="input samples (default: <onnx stem>.npz beside the model)")
    p.add_argument("--out", metavar="PATH", help="build folder (default: <onnx dir>/<stem>.<engine>)")
    p.add_argument("--archive", action="store_true", help="write a .tgz instead of a folder")
    p.add_argument("--keep-fp32", action="append", metavar="NODE",
                   help="keep this ONNX node in fp32 (repeatable; ort-int8, ort-fp16, trt-fp16): a "
                        "mixed-precision engine, as leapp-lab repair chooses it (docs/repair.md)")
    p.add_argument("--quantizer", choices=("modelopt", "ort"),
                   help="what writes the int8 Q/DQ (ort-int8, trt-int8): ort (default: onnxruntime's "
                        "quantize_static, MinMax) or modelopt (NVIDIA ModelOpt's ONNX PTQ, the "
                        "'modelopt' extra; runs on a CPU)")
    p.add_argument("--no-naive-check", action="store_true",
                   help="skip measuring what tapping before conversion would have changed")
    p.add_argument("--force", action="store_true",
                   help="build again even when the ONNX, npz, engine and options are unchanged (by "
                        "default the build already at --out is then reused: docs/taps.md)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(command="compile")
    return p


def execute(args: argparse.Namespace, progress=None):
    """Build through the Python API. Bad input -> UsageError (exit 2); a failed build -> BuildFailed."""
    from ..engines.base import CompileError, EngineUnavailable
    from ..steps.compile import compile as compile_
    from ..steps.compile import stderr_progress
    from ..model.errors import UserError

    quiet = getattr(args, "quiet", False)
    if progress is None and not quiet:
        progress = stderr_progress
    log = None if quiet else (lambda line: say(line, file=sys.stderr, flush=True))
    try:
        return compile_(args.onnx, **given(engine=args.engine, npz=args.npz, out=args.out,
                                           keep_fp32=getattr(args, "keep_fp32", None),
                                           quantizer=getattr(args, "quantizer", None)),
                        archive=args.archive, progress=progress,
                        naive_check=not getattr(args, "no_naive_check", False), log=log,
                        force=bool(getattr(args, "force", False)))
    except (EngineUnavailable, UserError) as exc:   # unusable input or output: exit 2, not "build failed"
        raise UsageError(str(exc)) from None
    except CompileError as exc:
        raise BuildFailed(str(exc)) from None
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def main(args: argparse.Namespace) -> int:
    try:
        report = execute(args)
    except BuildFailed as exc:
        say(f"leapp-lab compile: build failed: {exc}", file=sys.stderr)
        return EXIT_BUILD_FAILED
    say(report)
    sys.stdout.flush()
    return 0

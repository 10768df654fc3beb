"""``leapp-lab prepare MODEL.py --onnx-out F --npz-out F --reference-out F [taps]``."""
from __future__ import annotations

import argparse
import sys

from . import UsageError, given


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "prepare", help="export MODEL.py to ONNX with debug taps, its inputs and torch references",
        description="Export MODEL.py (defines Model and get_fwd_args(), optionally get_samples()) to "
                    "ONNX with the dynamo exporter, write every input sample to --npz-out and the "
                    "torch-eager outputs and tap values to --reference-out. Taps are off unless asked for.")
    p.add_argument("model", metavar="MODEL.py", help="Python file defining Model and get_fwd_args()")
    p.add_argument("--onnx-out", required=True, metavar="F", help="ONNX model to write (e.g. build/model.onnx)")
    p.add_argument("--npz-out", required=True, metavar="F", help="input samples to write (e.g. build/model.npz)")
    p.add_argument("--reference-out", required=True, metavar="F",
                   help="torch reference values to write (e.g. build/model.reference.npz)")
    p.add_argument("--debug-taps", action="append", metavar="NAME|all",
                   help="expose the tap() of this name (repeatable); 'all' exposes every tap and wins")
    p.add_argument("--debug-plugin-taps", action="store_true",
                   help="tap every input and output of every custom-domain (plugin) node")
    p.add_argument("--debug-op-taps", action="store_true",
                   help="tap every intermediate float value of the graph")
    p.add_argument("--exporter", choices=("dynamo", "torchscript"),
                   help="ONNX exporter (default dynamo; it falls back to torchscript on failure)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(command="prepare")
    return p


def execute(args: argparse.Namespace, progress=None):
    """Run prepare through the Python API; bad input raises UsageError."""
    from ..taps.errors import PrepareError, TapError
    from ..steps.prepare import prepare

    if progress is None:
        progress = None if getattr(args, "quiet", False) else "stderr"
    try:
        return prepare(args.model, args.onnx_out, args.npz_out, args.reference_out,
                       plugin_taps=args.debug_plugin_taps, op_taps=args.debug_op_taps, progress=progress,
                       **given(debug_taps=args.debug_taps, exporter=getattr(args, "exporter", None)))
    except (PrepareError, TapError) as exc:
        raise UsageError(str(exc)) from None


def main(args: argparse.Namespace) -> int:
    report = execute(args)
    print(report)
    sys.stdout.flush()
    return 0

"""``leapp-lab prepare MODEL.py --onnx-out F --npz-out F --reference-out F [taps]``."""
from __future__ import annotations

import argparse
import sys

from . import UsageError, given, say


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "prepare", help="export MODEL.py to ONNX with debug taps, its inputs and torch references",
        description="Export MODEL.py (defines Model, and get_fwd_args() or get_samples()) to "
                    "ONNX with the dynamo exporter, write every input sample to --npz-out and the "
                    "torch-eager outputs and tap values to --reference-out. Taps are off unless asked for.")
    p.add_argument("model", metavar="MODEL.py", nargs="?",
                   help="Python file defining Model and get_fwd_args() or get_samples() (or --from-trace RUN)")
    p.add_argument("--from-trace", metavar="RUN",
                   help="prepare a node of a traced LEAPP pipeline instead: RUN is a trace run folder "
                        "or a graph's LEAPP output folder that leapp_lab traced")
    p.add_argument("--node", metavar="NODE",
                   help="with --from-trace: the node (may be left out when the graph has one exported node)")
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
    p.add_argument("--force", action="store_true",
                   help="export again even when nothing changed (by default an unchanged model reuses "
                        "the previous export and references: docs/taps.md)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(command="prepare")
    return p


def execute(args: argparse.Namespace, progress=None):
    """Run prepare through the Python API; bad input raises UsageError."""
    from ..model.errors import UserError
    from ..taps.errors import PrepareError, TapError
    from ..steps.prepare import prepare

    if progress is None:
        progress = None if getattr(args, "quiet", False) else "stderr"
    run = getattr(args, "from_trace", None)
    if run is not None:
        if args.model is not None:
            raise UsageError(f"give MODEL.py or --from-trace RUN, not both (got {args.model} and --from-trace)")
        if getattr(args, "exporter", None):
            raise UsageError("--exporter does not apply to --from-trace: a traced node is re-exported "
                             "with the exporter LEAPP used")
        from ..steps.prepare_node import prepare_from_trace, trace_of
        try:
            return prepare_from_trace(trace_of(run), args.onnx_out, args.npz_out, args.reference_out,
                                      node=args.node, plugin_taps=args.debug_plugin_taps,
                                      op_taps=args.debug_op_taps, progress=progress,
                                      **given(debug_taps=args.debug_taps))
        except UserError as exc:
            raise UsageError(str(exc)) from None
    if args.model is None:
        raise UsageError("give MODEL.py, or --from-trace RUN for a node of a traced LEAPP pipeline")
    if getattr(args, "node", None) is not None:
        raise UsageError("--node goes with --from-trace RUN")
    try:
        return prepare(args.model, args.onnx_out, args.npz_out, args.reference_out,
                       plugin_taps=args.debug_plugin_taps, op_taps=args.debug_op_taps, progress=progress,
                       force=bool(getattr(args, "force", False)),
                       **given(debug_taps=args.debug_taps, exporter=getattr(args, "exporter", None)))
    except (PrepareError, TapError) as exc:
        raise UsageError(str(exc)) from None


def main(args: argparse.Namespace) -> int:
    report = execute(args)
    say(report)
    sys.stdout.flush()
    return 0

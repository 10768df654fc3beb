"""``leapp-lab run SCRIPT.py [--json FILE] [--no-fail] [--replay N] [--step-fn M:F] [--parity N]
[--exporters all|NODE] [--isolate] [-- ARGS...]``: attach mode, and the deep checks.

Runs an unchanged LEAPP export script and captures every graph it compiles (docs/trace.md).
Exit status: 0 every graph validated (or was not asked to validate); 1 a validation failed, a
trace was refused, or no graph was compiled (0 with --no-fail); 2 the script raised (its
traceback is shown), including LEAPP's strict=True raise, or bad usage.
"""
from __future__ import annotations

import argparse
import sys

from leapp_lab.cli import UsageError, say


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "run", help="run an export script that calls leapp.start/stop/compile_graph and diagnose it",
        description="Run an unchanged LEAPP export script (as __main__), capture every graph it "
                    "compiles, validate it three ways (recorded / FX replay / exported), write a "
                    "run folder per graph and print the diagnosis. Arguments for the script go "
                    "after '--'.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="options (after SCRIPT):\n"
               "  --json FILE   write the combined report as JSON (docs/schema-trace.md)\n"
               "  --no-fail     exit 0 even when a validation failed or a trace was refused\n"
               "  --quiet       do not print the text summary\n"
               "  --replay N    replay the exported pipeline N steps with its state fed back\n"
               "  --engine E    every exported node prepared from the trace, compiled for engine E\n"
               "                (ort, ort-fp16, ort-int8, trt-*) and verified tap by tap, and the\n"
               "                pipeline run on E node by node; with --replay the pipeline is also\n"
               "                replayed on E; repeat it for several engines\n"
               "  --taps all|NAME  with --engine: the node taps exposed in each build (repeatable)\n"
               "  --op-taps     with --engine: every intermediate value of each node tapped too\n"
               "  --local       with --engine: verify's local error per row (and per node)\n"
               "  --step-fn M:F the original pipeline, one step (MODULE:FUNCTION or FILE.py:FUNCTION):\n"
               "                fresh observations and resets in the replay; needed by --parity\n"
               "  --parity N    exported vs original on N fresh inputs (needs --step-fn; without it\n"
               "                parity is 'unavailable' and the other checks still run)\n"
               "  --exporters all|NODE  try onnx, onnx-torchscript, jit, jit-trace, pt2 (runs the\n"
               "                script again once per node and backend)\n"
               "  --isolate     dry_run / non_traced / global_patching=False side by side (runs the\n"
               "                script again once per isolation run)\n"
               "  -- ARGS       everything after '--' is passed to the script\n\n"
               "exit status: 0 all graphs validated; 1 a validation failed, a trace was refused,\n"
               "no graph was compiled, or a requested replay / parity diverged or could not run\n"
               "(its step_fn raised, say); 2 the script raised\n"
               "(incl. LEAPP's strict=True raise). See docs/deep-checks.md")
    # The same options are accepted before SCRIPT too (``leapp-lab run --json r.json s.py``).
    p.add_argument("--json", metavar="FILE", dest="json_before", help=argparse.SUPPRESS)
    p.add_argument("--no-fail", action="store_true", dest="no_fail_before", help=argparse.SUPPRESS)
    p.add_argument("--quiet", action="store_true", dest="quiet_before", help=argparse.SUPPRESS)
    p.add_argument("script", nargs="?", help="the export script (.py)")
    p.add_argument("rest", nargs=argparse.REMAINDER, metavar="ARGS",
                   help="[--json FILE] [--no-fail] [-- ARGS for the script]")
    return p


def _options() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="leapp-lab run SCRIPT", add_help=False)
    p.add_argument("--json", metavar="FILE", help="write the combined report as JSON")
    p.add_argument("--no-fail", action="store_true",
                   help="exit 0 even when a validation failed or a trace was refused")
    p.add_argument("--quiet", action="store_true", help="do not print the text summary")
    p.add_argument("--replay", type=int, default=None, metavar="N")
    p.add_argument("--step-fn", default=None, metavar="M:F")
    p.add_argument("--parity", type=int, default=None, metavar="N")
    p.add_argument("--exporters", default=None, metavar="all|NODE")
    p.add_argument("--isolate", action="store_true")
    p.add_argument("--engine", action="append", default=None, metavar="ENGINE")
    p.add_argument("--taps", action="append", default=None, metavar="all|NAME")
    p.add_argument("--op-taps", action="store_true")
    p.add_argument("--local", action="store_true")
    return p


def replay_engines(engines: list[str] | None, replay: int | None, who: str) -> list[str] | None:
    """``--engine`` names for the replay (with ``--replay``; None without), checked (one usage
    line naming the bad one). Without --replay the engines are the nodes' (``node_engine_options``)."""
    if not engines:
        return None
    from leapp_lab.engines import ENGINE_NAMES, NOT_IMPLEMENTED
    for e in engines:
        if e in NOT_IMPLEMENTED:
            raise UsageError(f"{who} --engine {e}: {NOT_IMPLEMENTED[e]}")
        if e not in ENGINE_NAMES:
            raise UsageError(f"{who} --engine {e}: unknown engine; choose one of {', '.join(ENGINE_NAMES)}")
    if replay is None:
        return None
    return list(engines)


def node_engine_options(opts: argparse.Namespace, who: str):
    """``--engine`` / ``--taps`` / ``--op-taps`` / ``--local``: inside the nodes on each engine
    (steps.node_engines), checked (an unusable option: one usage line naming it)."""
    from leapp_lab.model.errors import InvalidOption
    from leapp_lab.steps.node_engines import node_options
    try:
        return node_options(opts.taps, opts.op_taps, opts.engine, opts.local, who=who)
    except InvalidOption as exc:
        raise UsageError(str(exc)) from None


def parse_rest(rest: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Our options and the script's arguments from what follows SCRIPT.

    Everything after a '--' belongs to the script. Before it (or without one), the options of
    ``leapp-lab run`` are taken out and any other token is passed to the script, in order.
    (argparse itself may already have dropped a '--' that directly follows SCRIPT.)
    """
    if "--" in rest:
        i = rest.index("--")
        ours, theirs = rest[:i], rest[i + 1:]
    else:
        ours, theirs = rest, []
    try:
        opts, unknown = _options().parse_known_args(ours)
    except SystemExit:
        raise UsageError("bad options; usage: leapp-lab run SCRIPT.py [--json FILE] [--no-fail] "
                         "[-- ARGS for the script]") from None
    return opts, unknown + theirs


def execute(args):
    """Run the script and return the AttachResult (report + whether the script raised)."""
    from pathlib import Path

    if not args.script:
        raise UsageError("which script? usage: leapp-lab run SCRIPT.py [--json FILE] [--no-fail] "
                         "[-- ARGS for the script]")
    script = Path(args.script)
    if script.is_dir():
        raise UsageError(f"{script}: is a folder; pass the path of the export script (.py) itself")
    if not script.exists():
        raise UsageError(f"{script}: no such script; pass the path of a Python file that calls "
                         f"leapp.start / leapp.stop / leapp.compile_graph")
    from leapp_lab.model.safepaths import check_input_file, check_outputs
    check_input_file(script, "a Python export script")
    opts, script_args = parse_rest(list(args.rest or []))
    args.json = opts.json or getattr(args, "json_before", None)
    args.no_fail = opts.no_fail or getattr(args, "no_fail_before", False)
    args.quiet = opts.quiet or getattr(args, "quiet_before", False)
    args.script_args = script_args
    # before the script runs (minutes): --json must not land on the script or a file we did not write
    check_outputs([(args.json, "trace-json", "--json")], [(script, "the export script")])
    for flag in ("replay", "parity"):
        n = getattr(opts, flag)
        if n is not None and n < 1:
            raise UsageError(f"--{flag} {n}: must be at least 1")
    if opts.exporters is not None and not opts.exporters.strip():
        raise UsageError(f"--exporters {opts.exporters!r}: give a node name of the graph, or all")
    # --parity without --step-fn is no usage error: the other checks run, parity is 'unavailable'
    # with its reason (docs/deep-checks.md: a check that cannot run never stops the others)
    args.deep = {"replay": opts.replay, "parity": opts.parity, "exporters": opts.exporters,
                 "isolate": opts.isolate, "engines": replay_engines(opts.engine, opts.replay, "leapp-lab run")}
    nodes = node_engine_options(opts, "leapp-lab run")
    from leapp_lab.steps.trace_run import requested, run_script
    step_fn = None
    if opts.step_fn and requested(**{k: v for k, v in args.deep.items() if k != "engines"}):
        from leapp_lab.deep.stepfn import resolve_spec
        try:
            step_fn = resolve_spec(opts.step_fn, search=str(script.resolve().parent))
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    def before_checks(result, body) -> None:
        _check_node(opts.exporters, result.report)
        if opts.exporters is not None or opts.isolate:
            print(f"leapp-lab run: {body.description} runs again for "
                  f"{' and '.join(x for x, on in (('the exporter matrix', opts.exporters is not None), ('the isolation runs', opts.isolate)) if on)}"
                  f" (its output is not shown again)", file=sys.stderr)
    return run_script(script, script_args, deep=args.deep, step_fn=step_fn, before_checks=before_checks,
                      progress=_progress, nodes=nodes)


def _check_node(node: str | None, report) -> None:
    """``--exporters NODE``: the graphs the script compiled name their nodes (nothing else does,
    so the script has run once); one that no graph has is refused before any deep check or re-run."""
    if node in (None, "all") or not report.graphs:
        return
    names = sorted({n.name for g in report.graphs for n in g.nodes})
    if node not in names:
        raise UsageError(f"--exporters {node!r}: no graph the script compiled has a node of that name "
                         f"(nodes: {', '.join(names) or 'none'}); give one of them, or all")


def _progress(stage: str, done: int, total: int) -> None:
    if done < total:
        say(f"leapp-lab run: {stage}", file=sys.stderr, flush=True)


def main(args) -> int:
    from leapp_lab.model.jsonio import write_json
    from leapp_lab.trace.attach import exit_status, summary_json

    result = execute(args)
    report = result.report
    if result.traceback:
        say(result.traceback.rstrip(), file=sys.stderr)
    if args.json:
        n = write_json(args.json, summary_json(report))
        note = f" ({n} non-finite values written as null)" if n else ""
        say(f"leapp-lab run: report written to {args.json}{note}", file=sys.stderr)
    if not args.quiet:
        say(report)
    code = exit_status(result, no_fail=args.no_fail)
    if code == 1:
        from leapp_lab.model.trace_verdict import trace_verdict
        print(f"leapp-lab run: exit 1 ({_exit_reason(trace_verdict(report))}; --no-fail exits 0)",
              file=sys.stderr)
    elif code == 2 and result.unsaved and not result.script_raised:
        print("leapp-lab run: exit 2 (a run folder could not be written: the diagnosis above was not "
              "saved; free the disk or point the script's save_path somewhere writable)", file=sys.stderr)
    elif code == 2:
        print("leapp-lab run: exit 2 (the script raised)", file=sys.stderr)
    sys.stdout.flush()
    return code


def _exit_reason(verdict) -> str:
    """What made the verdict a defect, in the words the exit line has always used."""
    top = verdict.evidence[0]
    if top.kind in ("replay", "parity"):
        bad = [e for e in verdict.evidence if e.kind in ("replay", "parity")]
        by = {}
        for e in bad:
            by.setdefault("diverged" if e.where == "diverged" else "could not run", []).append(
                f"{e.graph}: {e.kind}")
        return "; ".join(f"{', '.join(names)} {what}" for what, names in by.items())
    return "a validation failed, a trace was refused, or no graph was compiled"

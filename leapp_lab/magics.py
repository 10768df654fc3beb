"""IPython extension: ``%load_ext leapp_lab``.

* ``%%leapp_trace NAME [options]`` runs the cell inside ``leapp_lab.trace(NAME, ...)`` in the user
  namespace and displays the trace view; the report is stored in ``--out VAR`` (default ``_leapp``).
* ``%leapp_prepare``, ``%leapp_compile``, ``%leapp_verify``, ``%leapp_diff``, ``%leapp_report``,
  ``%leapp_repair`` take the CLI's arguments (same argparse parser) and call the CLI module's
  ``execute(args)``; they return the report, so ``r = %leapp_verify ...`` works.
* ``%%leapp_prepare --onnx-out F --npz-out F --reference-out F [...]``: the cell defines ``model``
  (an ``nn.Module``) and ``args`` (a tuple of forward arguments) or ``samples`` (a list of them).

The magics hold no logic of their own beyond parsing and display. LEAPP identifies a node by the
caller's (file, line): the cell is compiled under the stable name ``<leapp-cell:NAME>`` and its
source registered with ``linecache``, so an edited or re-run cell keeps working and tracebacks show its lines.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import linecache
import shlex
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class
from IPython.display import display

from leapp_lab.views.progress import Progress, report_summary

DEFAULT_VAR = "_leapp"


class _ArgumentError(Exception):
    pass


class _HelpShown(Exception):     # -h / --help: argparse printed the help; the magic just returns
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting the kernel."""

    def error(self, message: str):  # noqa: D401
        raise _ArgumentError(f"{self.prog}: {message}")

    def exit(self, status: int = 0, message: str | None = None):
        if status == 0:
            raise _HelpShown()
        raise _ArgumentError(message or f"{self.prog}: exit {status}")


def trace_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="%%leapp_trace",
                description="Trace the cell with LEAPP (leapp_lab.trace) and show the trace view.")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--save-path", default=None, metavar="DIR")
    p.add_argument("--max-cached-io", type=int, default=None, metavar="N")
    p.add_argument("--no-validate", action="store_true")
    p.add_argument("--rtol", type=float, default=None)
    p.add_argument("--atol", type=float, default=None)
    p.add_argument("--strict", action="store_true")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--non-traced", default=None, metavar="A,B")
    p.add_argument("--no-global-patching", action="store_true")
    p.add_argument("--patching", default=None, metavar="VAR",
                   help="name of a variable in the notebook holding LEAPP's patching list")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--visualize", action="store_true")
    p.add_argument("--out", default=DEFAULT_VAR, metavar="VAR")
    p.add_argument("--quiet", action="store_true", help="store the report but do not display it")
    # deep checks (docs/deep-checks.md); --exporters / --isolate run the cell again
    p.add_argument("--replay", type=int, default=None, metavar="N")
    p.add_argument("--step-fn", default=None, metavar="VAR",
                   help="name of a function in the notebook: step_fn(inputs, reset) -> outputs")
    p.add_argument("--parity", type=int, default=None, metavar="N")
    p.add_argument("--exporters", default=None, metavar="all|NODE")
    p.add_argument("--isolate", action="store_true")
    p.add_argument("--engine", action="append", default=None, metavar="ENGINE",
                   help="nodes built for it and verified tap by tap (and replayed on it with --replay)")
    p.add_argument("--taps", action="append", default=None, metavar="all|NAME", help="with --engine")
    p.add_argument("--op-taps", action="store_true", help="with --engine: op taps too")
    p.add_argument("--local", action="store_true", help="with --engine: local error")
    return p


def deep_options(ns: argparse.Namespace, user_ns: dict) -> dict[str, Any]:
    """``leapp_lab.deep.run.run_deep`` keyword arguments from the deep-check flags."""
    from leapp_lab.cli import UsageError as CliUsageError
    from leapp_lab.cli.run import replay_engines
    try:
        engines = replay_engines(ns.engine, ns.replay, "%%leapp_trace")
    except CliUsageError as exc:
        raise UsageError(str(exc)) from None
    opts: dict[str, Any] = {"replay": ns.replay, "parity": ns.parity, "exporters": ns.exporters,
                            "isolate": ns.isolate, "engines": engines}
    if ns.step_fn is not None:
        fn = user_ns.get(ns.step_fn)
        if fn is None:
            raise UsageError(f"%%leapp_trace --step-fn {ns.step_fn}: no variable {ns.step_fn!r} in the "
                             f"notebook; define step_fn(inputs, reset) -> outputs first")
        if not callable(fn):
            raise UsageError(f"%%leapp_trace --step-fn {ns.step_fn}: {ns.step_fn!r} is a "
                             f"{type(fn).__name__}, not a function")
        opts["step_fn"] = fn
    for flag in ("replay", "parity"):
        if getattr(ns, flag) is not None and getattr(ns, flag) < 1:
            raise UsageError(f"%%leapp_trace --{flag} {getattr(ns, flag)}: must be at least 1")
    # --parity without --step-fn: the other checks run, parity is 'unavailable' (docs/deep-checks.md)
    return opts


def node_options(ns: argparse.Namespace) -> dict[str, Any]:
    """``leapp_lab.trace``'s engines / taps / op_taps / local from the flags (checked: usage error)."""
    from leapp_lab.cli import UsageError as CliUsageError
    from leapp_lab.cli.run import node_engine_options
    try:
        o = node_engine_options(ns, "%%leapp_trace")
    except CliUsageError as exc:
        raise UsageError(str(exc)) from None
    return o.to_dict() if o.wanted else {}


def trace_options(ns: argparse.Namespace, user_ns: dict) -> dict[str, Any]:
    """Map parsed flags to ``leapp_lab.trace`` keyword arguments (unset flags keep the API default)."""
    opts: dict[str, Any] = {}
    if ns.save_path is not None:
        from leapp_lab.model.errors import UserError
        from leapp_lab.model.safepaths import check_outputs
        try:        # a file where the folder goes, a FIFO: said now, in one line (docs/safety.md)
            check_outputs([(ns.save_path, "out-dir", "--save-path")])
        except UserError as exc:
            raise UsageError(f"%%leapp_trace {exc}") from None
        opts["save_path"] = ns.save_path
    if ns.max_cached_io is not None:
        opts["max_cached_io"] = ns.max_cached_io
    if ns.rtol is not None:
        opts["rtol"] = ns.rtol
    if ns.atol is not None:
        opts["atol"] = ns.atol
    for flag, key, value in (("no_validate", "validate", False), ("strict", "strict", True),
                             ("dry_run", "dry_run", True), ("no_global_patching", "global_patching", False),
                             ("verbose", "verbose", True), ("visualize", "visualize", True)):
        if getattr(ns, flag):
            opts[key] = value
    if ns.non_traced:
        opts["non_traced"] = tuple(x.strip() for x in ns.non_traced.split(",") if x.strip())
    if ns.patching:
        if ns.patching not in user_ns:
            raise UsageError(f"%%leapp_trace --patching {ns.patching}: no variable {ns.patching!r} in the notebook; "
                             f"define it first (a list of leapp patches)")
        opts["patching"] = user_ns[ns.patching]
    if not ns.out.isidentifier():
        raise UsageError(f"%%leapp_trace --out {ns.out!r}: not a valid Python variable name")
    return opts


def cell_filename(name: str) -> str:
    return f"<leapp-cell:{name}>"


def register_source(filename: str, source: str) -> None:
    """Let tracebacks (and LEAPP's own source lookups) see the cell's text under ``filename``."""
    lines = source.splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    # mtime None: linecache.checkcache keeps the entry (there is no file to compare against)
    linecache.cache[filename] = (len(source), None, lines, filename)


def _split(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"cannot split the arguments {line!r}: {exc}") from None


@magics_class
class LeappMagics(Magics):

    # -- %%leapp_trace ---------------------------------------------------------------------------
    @cell_magic
    def leapp_trace(self, line: str, cell: str):
        """%%leapp_trace NAME [--save-path DIR] [--max-cached-io N] [--no-validate] [--rtol R]
        [--atol A] [--strict] [--dry-run] [--non-traced A,B] [--no-global-patching]
        [--patching VAR] [--verbose] [--visualize] [--out VAR] [--quiet]
        [--replay N] [--step-fn VAR] [--parity N] [--exporters all|NODE] [--isolate]
        [--engine ENGINE]... [--taps all|NAME]... [--op-taps] [--local]

        Run the cell inside ``leapp_lab.trace(NAME, ...)`` and display the trace view; --engine:
        the nodes on engines (docs/trace.md). The deep checks (docs/deep-checks.md) run after it;
        --exporters and --isolate run the cell again."""
        __tracebackhide__ = True      # tracebacks start at the user's cell, not in this magic
        try:
            ns = trace_parser().parse_args(_split(line))
        except _HelpShown:      # --help printed the usage: the cell is not run
            return None
        except _ArgumentError as exc:
            raise UsageError(f"{exc}\nusage: {trace_parser().format_usage().strip()[7:]}") from None
        user_ns = self.shell.user_ns
        opts = trace_options(ns, user_ns)
        deep = deep_options(ns, user_ns)
        nodes = node_options(ns)
        filename = cell_filename(ns.name)
        register_source(filename, cell)
        source = self.shell.transform_cell(cell)      # %magics / !shell lines inside the cell
        code = compile(source, filename, "exec")

        import leapp_lab
        from leapp_lab.steps.trace_run import RandomState, requested
        progress = Progress(f"leapp_lab trace {ns.name}")
        progress("running the cell under LEAPP")
        session = None
        start_state = RandomState.capture() if requested(**{k: deep[k] for k in
                                                            ("replay", "parity", "exporters", "isolate")}) else None
        try:
            # the node engines are not trace options: the deep checks' re-runs of the cell skip them
            with leapp_lab.trace(ns.name, **opts, **nodes, progress=progress) as session:
                exec(code, self.shell.user_global_ns, user_ns)
                progress("compiling, validating and saving")
        except BaseException as exc:
            from leapp_lab.model.errors import UserError
            report = getattr(session, "report", None)
            if report is not None and start_state is not None and isinstance(exc, Exception):
                # LEAPP refused the compile (the cell itself ran): the deep checks still help
                self._deep(report, code, ns, opts, deep, start_state, progress)
            progress.finish("the cell raised; the partial report is below" if report is not None
                            else "the cell raised", failed=True)
            if report is not None:
                user_ns[ns.out] = report
                if not ns.quiet:
                    display(report)
            if isinstance(exc, UserError):      # a file or an option to fix: one line, no traceback
                raise UsageError(f"%%leapp_trace {ns.name}: {exc}") from None
            raise
        report = session.report
        if start_state is not None:
            self._deep(report, code, ns, opts, deep, start_state, progress)
        progress.finish(f"done: {report_summary(report)}")
        user_ns[ns.out] = report
        if not ns.quiet:
            display(report)

    def _deep(self, report, code, ns, opts, deep, start_state, progress) -> None:
        """--replay / --parity / --exporters / --isolate; the last two trace the cell again, from
        the random state it started from."""
        from leapp_lab.steps.trace_run import check_traced_cell
        user_ns = self.shell.user_ns
        check_traced_cell(report, lambda: exec(code, self.shell.user_global_ns, user_ns), ns.name, opts,
                          deep=deep, random_state=start_state, progress=progress)

    # -- CLI-shaped magics -----------------------------------------------------------------------
    def _run_cli(self, command: str, argv: list[str], extra: dict[str, Any] | None = None) -> Any:
        from leapp_lab.cli import UsageError as CliUsageError
        from leapp_lab.cli import build_parser
        from leapp_lab.model.errors import UserError
        from leapp_lab.model.safepaths import ENVIRONMENT_ERRNOS, oserror_line

        parser, _ = build_parser()
        _no_exit(parser)
        unknown: list[str] = []
        try:
            args, unknown = parser.parse_known_args([command, *argv])
            if unknown:     # named with the command's usage and its closest option, as the CLI does
                from leapp_lab.cli import unrecognized
                unrecognized(parser, command, unknown)
        except _HelpShown:      # -h / --help printed the command's help: nothing else to say
            return None
        except _ArgumentError as exc:
            # a stray word: most often "{v.path}" unquoted, split at a space of the path (docs/notebook.md)
            split = " (a path with a space splits into two arguments: quote it, e.g. \"{v.path}\")" \
                if "unrecognized arguments" in str(exc) and any(not a.startswith("-") for a in unknown) else ""
            raise UsageError(f"%leapp_{command}: {exc}{split}") from None
        for k, v in (extra or {}).items():
            setattr(args, k, v)
        try:
            mod = importlib.import_module(f"leapp_lab.cli.{command}")
        except ModuleNotFoundError as exc:
            raise UsageError(f"%leapp_{command}: this leapp_lab has no '{command}' command ({exc})") from None
        execute = getattr(mod, "execute", None)
        if execute is None:
            raise UsageError(f"%leapp_{command}: leapp_lab.cli.{command} has no execute(args)")
        progress = Progress(f"leapp_lab {command}")
        kwargs = {"progress": progress} if "progress" in inspect.signature(execute).parameters else {}
        try:
            report = execute(args, **kwargs)
        except (CliUsageError, UserError) as exc:     # bad input or output: one line, no traceback
            progress.finish("failed", failed=True)
            raise UsageError(f"%leapp_{command}: {exc}") from None
        except OSError as exc:
            # a full or read-only disk, a folder where a file goes: the machine's, one line (as the CLI)
            progress.finish("failed", failed=True)
            if exc.errno in ENVIRONMENT_ERRNOS or exc.filename is not None:
                raise UsageError(f"%leapp_{command}: {oserror_line(exc)}") from None
            raise
        except BaseException:
            progress.finish("failed", failed=True)
            raise
        progress.finish(f"done: {report_summary(report)}")
        self.shell.user_ns[DEFAULT_VAR] = report
        from leapp_lab.views.widget import plain_text_repr
        plain_text_repr(self.shell, type(report))
        return report

    @line_cell_magic
    def leapp_prepare(self, line: str, cell: str | None = None):
        """%leapp_prepare MODEL.py --onnx-out F --npz-out F --reference-out F [--debug-taps NAME|all ...]
        [--debug-plugin-taps] [--debug-op-taps]; or --from-trace VAR (a trace report, session or run
        folder) --node NODE instead of MODEL.py. As a cell magic, leave out MODEL.py: the cell defines ``model`` and ``args`` (or ``samples``)."""
        __tracebackhide__ = True      # a cell that raises: the traceback starts at the cell's line
        argv = _split(line)
        if cell is None:
            run = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--from-trace"), "")
            named = run.isidentifier() and run in self.shell.user_ns   # a trace report (or session)
            return self._run_cli("prepare", argv, extra={"from_trace": self.shell.user_ns[run]} if named else {})
        user_ns = self.shell.user_ns
        ns: dict[str, Any] = dict(user_ns)      # one namespace: classes and functions see the cell's names
        filename = cell_filename("prepare")
        register_source(filename, cell)
        try:
            exec(compile(self.shell.transform_cell(cell), filename, "exec"), ns)
        finally:    # what the cell defined stays available, as in a normal cell (also when it raised)
            defined = {k for k, v in ns.items() if k not in user_ns or user_ns[k] is not v}
            user_ns.update({k: ns[k] for k in defined})
        if "model" not in defined or not ({"args", "samples"} & defined):
            raise UsageError("%%leapp_prepare: the cell must define `model` (an nn.Module) and `args` "
                             "(a tuple of forward arguments) or `samples` (a list of such tuples)")
        source = {k: ns[k] for k in ("model", "args", "samples") if k in ns}
        source["__name__"] = "the %%leapp_prepare cell"     # what the report and its errors call it
        # the parser wants MODEL.py first; the cell's namespace replaces it after parsing
        return self._run_cli("prepare", ["<cell>", *argv], extra={"model": source})

    @line_magic
    def leapp_compile(self, line: str):
        """%leapp_compile MODEL.onnx --engine ENGINE [--npz F] [--out PATH] [--archive]"""
        return self._run_cli("compile", _split(line))

    @line_magic
    def leapp_verify(self, line: str):
        """%leapp_verify REFERENCE.npz BUILD [BUILD ...] [--max-mape PCT] [--max-mape-taps] [--verbose] [--out DIR]
        [--local] [--expected fp16|bf16|int8]

        Several BUILDs: one compare table, a column group per engine."""
        return self._run_cli("verify", _split(line))

    @line_magic
    def leapp_diff(self, line: str):
        """%leapp_diff RUN_A RUN_B [--fail-on-flip] [--out DIR] [--json F] [--html F]: two verify runs
        row by row (metric changes, verdict flips), shown as the compare view."""
        return self._run_cli("diff", _split(line))

    @line_magic
    def leapp_repair(self, line: str):
        """%leapp_repair REFERENCE.npz MODEL.onnx --engine ort-int8|ort-fp16 --target-nrmse X [--budget N]
        [--jobs N] [--dask ADDR] [--json F] [--out DIR] [--html F] [--rank output|excess]: the precision-repair
        sweep; shows its view."""
        return self._run_cli("repair", _split(line))

    @line_magic
    def leapp_report(self, line: str):
        """%leapp_report RUN -o report.html: write the standalone HTML report and show the view."""
        return self._run_cli("report", _split(line))


def _no_exit(parser: argparse.ArgumentParser) -> None:
    """Make a parser (and its subparsers) raise _ArgumentError instead of exiting the kernel."""
    def error(message: str, _p=parser):
        raise _ArgumentError(f"{_p.prog}: {message}")

    def exit_(status: int = 0, message: str | None = None, _p=parser):
        if status == 0:
            raise _HelpShown()
        raise _ArgumentError((message or "").strip() or f"{_p.prog} exited ({status})")

    parser.error = error          # type: ignore[method-assign]
    parser.exit = exit_           # type: ignore[method-assign]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _no_exit(sub)


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(LeappMagics)


def unload_ipython_extension(ipython: Any) -> None:
    mm = ipython.magics_manager
    for kind, names in LeappMagics.magics.items():     # what @magics_class registered
        for name in names:
            mm.magics[kind].pop(name, None)
    mm.registry.pop("LeappMagics", None)

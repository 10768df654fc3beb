"""``leapp-lab`` command line: thin argument parsing over the Python API.

Each subcommand lives in its own module ``leapp_lab.cli.<name>`` exposing
``add_parser(subparsers)`` and ``main(args) -> int``. A module that is missing or fails to import
only removes its own subcommand.

Exit status shared by every command (docs/safety.md): 2 and one line on stderr for input or output
the user can fix (a ``UserError``, or an ``OSError`` of the machine: a full or read-only disk, a
file where a folder is needed); 130 on Ctrl-C, 143 on SIGTERM (unwound the same way,
``leapp_lab.signals``), wherever the signal landed and whatever exception a library made of it;
3 and the traceback for anything else, which is a bug in leapp_lab. ``--debug`` (or ``LEAPP_LAB_DEBUG=1``) prints the traceback in every case.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

SUBCOMMANDS = ["run", "demo", "prepare", "compile", "verify", "diff", "report", "repair"]


class UsageError(Exception):
    """Bad input from the user: printed without a traceback, exit status 2."""


def say(text, file=None, flush: bool = False) -> None:
    """Print ``text`` with every character a terminal would act on escaped (``printable``): what a
    command prints names files, arrays and nodes from inputs someone else may have made."""
    from leapp_lab.model.messages import printable
    print(printable(str(text)), file=file, flush=flush)


def show(report) -> int:
    """Print a command's report to stdout; its exit status is the report's own."""
    say(report)
    sys.stdout.flush()
    return int(report.exit_code)


def given(**options):
    """The options the user gave: flags default to None, so an option left out is not passed and
    the API's own default applies (each default is written once, in the API signature)."""
    return {k: v for k, v in options.items() if v is not None}


#: exit status of an unexpected exception (a bug in leapp_lab; its traceback is printed)
EXIT_INTERNAL_ERROR = 3
#: exit status when the reader of stdout went away (``| head``): 128 + SIGPIPE, as the shell reports
EXIT_BROKEN_PIPE = 141


def build_parser(argv: list[str] | None = None) -> tuple[argparse.ArgumentParser, dict]:
    """The parser and each subcommand's ``main``. ``argv``: the command line about to be parsed;
    when it names a subcommand, only that one's module is imported and its parser built (the others'
    imports are start-up the command does not need); else (``--help``, no command, an unknown one)
    all of them, for the list."""
    parser = argparse.ArgumentParser(
        prog="leapp-lab",
        description="Find why and where an exported LEAPP model disagrees with its Python source.")
    from leapp_lab import __version__
    parser.add_argument("--version", action="version", version=f"leapp-lab {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="print the full traceback of any error (also: LEAPP_LAB_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    handlers = {}
    wanted = _command_in(argv)
    for name in SUBCOMMANDS if wanted is None else [wanted]:
        try:
            mod = importlib.import_module(f"leapp_lab.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"leapp_lab.cli.{name}":
                continue
            raise
        p = mod.add_parser(sub)
        if isinstance(p, argparse.ArgumentParser):    # also after the command: leapp-lab verify --debug
            p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                           help="print the full traceback of any error (also: LEAPP_LAB_DEBUG=1)")
        handlers[name] = mod.main
    if wanted is not None and wanted not in handlers:   # its module is missing: the full list's error
        return build_parser()
    return parser, handlers


def _command_in(argv: list[str] | None) -> str | None:
    """The subcommand ``argv`` names: its first word, after nothing but ``--debug`` (or an
    abbreviation of it). None for anything else, where argparse may need every subcommand (``-h``
    lists them, an unknown command names them)."""
    for a in argv or ():
        if not a.startswith("-"):
            return a if a in SUBCOMMANDS else None
        if not (len(a) >= 3 and "--debug".startswith(a)):
            return None
    return None


def main(argv: list[str] | None = None) -> int:
    """The ``leapp-lab`` command. Called as the process's entry point (``argv`` None: the console
    script, ``python -m leapp_lab.cli``), it ends the process itself once the command is done
    (``_end_process``); with an ``argv`` (a test, a notebook) it returns the exit status."""
    if argv is None:
        _quiet_threads()
    status = _run(argv)
    if argv is None:
        _end_process(status)
    return status


def _quiet_threads() -> None:
    """OpenMP threads that wait by sleeping, not spinning (unless the user chose): set before torch
    loads its OpenMP runtime. On a machine busy with other work, spinning threads turned each torch
    forward of prepare's eager and reference runs into a wait for a descheduled thread at every
    parallel region: 0.3-1.7 s per forward of the 17-block MobileNetV2-class net instead of 0.02-0.05
    s, measured on this 2-core machine at load 7 (bench/bench_loop.py, docs/verify.md). Only for the
    ``leapp-lab`` process itself (a script ``leapp-lab run`` runs in it too: how idle threads wait
    changes, no value does); a notebook's or a script's own process keeps its settings."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _end_process(status: int) -> None:
    """Exit as the interpreter would, minus its teardown: non-daemon threads joined and the
    ``threading`` / ``atexit`` hooks run (temporary folders, logging, pools), stdout and stderr
    flushed, then ``os._exit``. Tearing down torch's and onnx's modules and collecting every object
    a prepare made took 3-4 s of a 25 s prepare here, with every output long written (issue 23).
    ``LEAPP_LAB_FULL_EXIT=1`` keeps the interpreter's own exit (for a tool that reports at teardown)."""
    if os.environ.get("LEAPP_LAB_FULL_EXIT", "") not in ("", "0"):
        return
    import atexit
    import signal
    import threading

    from leapp_lab.signals import exit_status

    late: list[int] = []

    def hold(sig: int, frame) -> None:
        # the command is done and committed; the hooks below only clean up (temporary folders,
        # pools), so a Ctrl-C or SIGTERM now lets them finish, and the exit says it came. A second
        # one stops waiting for them (a thread that never ends).
        if late:
            os._exit(exit_status(late[0]))
        late.append(sig)

    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, hold)
    try:
        shutdown = getattr(threading, "_shutdown", None)   # what Py_FinalizeEx calls first
        if shutdown is not None:
            shutdown()
        atexit._run_exitfuncs()
    except BaseException:   # noqa: BLE001 - a hook that fails: let the interpreter exit its own way
        return
    if late and status not in (exit_status(signal.SIGINT), exit_status(signal.SIGTERM)):
        print("leapp-lab: interrupted after the command had finished and saved its outputs",
              file=sys.stderr)
        status = exit_status(late[0])
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a closed pipe: what the interpreter's last flush would drop
            pass
    os._exit(status)


def _run(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser, handlers = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    if extra:   # argparse's own error names the top parser: its usage lists no option of the command
        unrecognized(parser, args.command, extra)
    if not args.command:
        parser.print_help()
        return 2
    debug = bool(getattr(args, "debug", False)) or os.environ.get("LEAPP_LAB_DEBUG", "") not in ("", "0")
    from leapp_lab.signals import interruption, received, terminate_as_interrupt
    sig = None
    try:
        with terminate_as_interrupt():      # SIGTERM unwinds like Ctrl-C: nothing left behind, exit 143
            try:
                status = int(handlers[args.command](args) or 0)
            finally:
                sig = received()
    except BaseException as exc:  # noqa: BLE001 - every way out gets one exit status
        return _failed(args.command, exc, debug, sig)
    if sig is not None:     # a library swallowed the interrupt: the command still was interrupted
        return _failed(args.command, interruption(sig), debug, sig)
    return status


def unrecognized(parser: argparse.ArgumentParser, command: str | None, extra: list[str]) -> None:
    """Exit 2 (``parser.error`` of ``command``'s own parser) with that command's usage and the unknown
    arguments, with its closest option for a mistyped one (``--target-nrme`` -> ``--target-nrmse``).
    ``parser``: the top parser (CLI and magics alike)."""
    import difflib
    p = parser._subparsers._group_actions[0].choices.get(command, parser) if parser._subparsers else parser
    opts = [o for a in p._actions for o in a.option_strings if o.startswith("--")]
    typo = next((a.split("=")[0] for a in extra if a.startswith("--")), None)
    like = difflib.get_close_matches(typo, opts, n=1) if typo else []
    p.error(f"unrecognized arguments: {' '.join(extra)}" + (f" (did you mean {like[0]}?)" if like else ""))


def _failed(command: str, exc: BaseException, debug: bool, sig: int | None = None) -> int:
    """Exit status and stderr for an exception that left a command (see the module docstring).
    ``sig``: the signal that reached the command meanwhile, whatever exception it became (a Ctrl-C
    during ``import onnxruntime`` leaves as an ImportError from its native initialiser)."""
    import signal

    from leapp_lab._compat import UnsupportedLeapp
    from leapp_lab.model.errors import UserError
    from leapp_lab.model.safepaths import ENVIRONMENT_ERRNOS, oserror_line
    from leapp_lab.signals import EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated

    if isinstance(exc, SystemExit):
        raise exc
    if debug:
        traceback.print_exception(exc)
    if isinstance(exc, Terminated) or sig == signal.SIGTERM:
        print("leapp-lab: terminated (SIGTERM); nothing half-written was left behind", file=sys.stderr)
        return EXIT_TERMINATED
    if isinstance(exc, KeyboardInterrupt) or sig == signal.SIGINT:
        print("leapp-lab: interrupted; nothing half-written was left behind", file=sys.stderr)
        return EXIT_INTERRUPTED
    if isinstance(exc, (UsageError, UserError, UnsupportedLeapp)):
        say(f"leapp-lab {command}: error: {exc}", file=sys.stderr)
        return 2
    if isinstance(exc, BrokenPipeError) and exc.filename is None:
        # stdout closed early (``leapp-lab verify ... | head``): the work is done and saved, the
        # unread output is dropped without a word, as a SIGPIPE would; stdout goes to /dev/null so
        # the interpreter's last flush cannot fail again ("Exception ignored ... BrokenPipeError")
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_BROKEN_PIPE
    if isinstance(exc, OSError) and (exc.errno in ENVIRONMENT_ERRNOS or exc.filename is not None):
        say(f"leapp-lab {command}: error: {oserror_line(exc)}", file=sys.stderr)
        return 2
    if isinstance(exc, MemoryError):
        print(f"leapp-lab {command}: error: out of memory; an input is larger than this machine "
              f"can hold", file=sys.stderr)
        return 2
    if not debug:
        traceback.print_exception(exc)
    say(f"leapp-lab {command}: internal error (a bug in leapp_lab): {type(exc).__name__}: {exc}\n"
          f"please report it with the traceback above (exit {EXIT_INTERNAL_ERROR})", file=sys.stderr)
    return EXIT_INTERNAL_ERROR

"""``leapp-lab`` command line: thin argument parsing over the Python API.

Each subcommand lives in its own module ``leapp_lab.cli.<name>`` exposing
``add_parser(subparsers)`` and ``main(args) -> int``. A module that is missing or fails to import
only removes its own subcommand.
"""
from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = ["run", "demo", "prepare", "compile", "verify", "report", "repair"]


class UsageError(Exception):
    """Bad input from the user: printed without a traceback, exit status 2."""


def given(**options):
    """The options the user gave: flags default to None, so an option left out is not passed and
    the API's own default applies (each default is written once, in the API signature)."""
    return {k: v for k, v in options.items() if v is not None}


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    parser = argparse.ArgumentParser(
        prog="leapp-lab",
        description="Find why and where an exported LEAPP model disagrees with its Python source.")
    from leapp_lab import __version__
    parser.add_argument("--version", action="version", version=f"leapp-lab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    handlers = {}
    for name in SUBCOMMANDS:
        try:
            mod = importlib.import_module(f"leapp_lab.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"leapp_lab.cli.{name}":
                continue
            raise
        mod.add_parser(sub)
        handlers[name] = mod.main
    return parser, handlers


def main(argv: list[str] | None = None) -> int:
    parser, handlers = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    try:
        return int(handlers[args.command](args) or 0)
    except UsageError as exc:
        print(f"leapp-lab {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("leapp-lab: interrupted", file=sys.stderr)
        return 130

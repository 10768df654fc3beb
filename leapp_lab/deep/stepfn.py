"""The original Python pipeline, one step at a time: the ``step_fn`` of replay tier (b) and parity.

Protocol (docs/deep-checks.md)::

    def step_fn(inputs: dict[str, torch.Tensor], reset: bool) -> dict[str, torch.Tensor]

- ``inputs``: one value per pipeline input, keyed ``"node/port"`` exactly as
  ``InferenceManager.inputs`` names them (e.g. ``{"encoder/obs": tensor}``); private copies.
- ``reset``: True on the first step of every episode (step 0 and each requested reset): the
  function must first put its own state back to the pipeline's initial state, as the exported
  runtime does with ``InferenceManager.reset()``.
- returns the node outputs it computes, keyed ``"node/port"``; a port may be named as traced
  (``"encoder/h"``) or as compiled (``"encoder/h_out"``). Outputs it leaves out are not compared.

It is called under ``torch.no_grad()``, keyword ``reset=``.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

from leapp_lab.model.errors import InvalidOption, UnusableInput
from leapp_lab.model.trace import GraphReport
from leapp_lab.numerics.checks import to_numpy


def resolve_spec(spec: str, search: str | None = None) -> Callable:
    """``module:function`` or ``path/to/file.py:function`` -> the function (a class is
    instantiated once, with no arguments: a stateful step_fn).

    ``search`` (the script's folder) is put on ``sys.path`` first so a module beside the script
    imports. A file imported here runs its top level: guard a script's export with
    ``if __name__ == "__main__":``. Raises InvalidOption (a malformed spec, no such function) or
    UnusableInput (no such file or module; importing it raised or called ``sys.exit()``), both
    ValueErrors naming the spec.
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise InvalidOption(f"--step-fn {spec!r}: expected MODULE:FUNCTION or FILE.py:FUNCTION")
    mod_name, _, fn_name = spec.rpartition(":")
    if not mod_name or not fn_name.isidentifier():
        raise InvalidOption(f"--step-fn {spec!r}: expected MODULE:FUNCTION or FILE.py:FUNCTION")
    added = False
    if search and search not in sys.path:
        sys.path.insert(0, search)
        added = True
    name = mod_name
    try:
        if mod_name.endswith(".py") or "/" in mod_name:
            path = Path(mod_name)
            if not path.exists() and search:
                path = Path(search) / mod_name
            if not path.exists():
                raise UnusableInput(f"--step-fn {spec!r}: no such file {mod_name}")
            from leapp_lab.model.safepaths import check_input_file
            try:        # a FIFO, a device or a folder: say what it is, never open it
                check_input_file(path, "a Python file")
            except UnusableInput as exc:
                raise UnusableInput(f"--step-fn {spec!r}: {exc}") from None
            name = f"leapp_lab_step_fn_{path.stem}"
            loader = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(loader)
            sys.modules[name] = mod
            loader.loader.exec_module(mod)
        else:
            try:
                mod = importlib.import_module(mod_name)
            except ModuleNotFoundError as exc:
                if exc.name != mod_name:
                    raise
                raise UnusableInput(f"--step-fn {spec!r}: cannot import {mod_name!r} ({exc}); the "
                                    f"script's folder is on sys.path, or give FILE.py:FUNCTION") from None
    except UnusableInput:
        raise
    except SystemExit as exc:       # the user's module, imported: its own exit is not ours
        sys.modules.pop(name, None)
        raise UnusableInput(f"--step-fn {spec!r}: {mod_name} called sys.exit({exc.code!r}) while being "
                            f"imported; keep script code under `if __name__ == \"__main__\":`") from None
    except Exception as exc:
        sys.modules.pop(name, None)
        raise UnusableInput(f"--step-fn {spec!r}: importing {mod_name} failed: {type(exc).__name__}: "
                            f"{exc}") from None
    finally:
        if added:
            sys.path.remove(search)
    fn = getattr(mod, fn_name, None)
    if not callable(fn):
        raise InvalidOption(f"--step-fn {spec!r}: {mod_name} has no function {fn_name!r}")
    if isinstance(fn, type):        # a stateful step class: one instance for the whole run
        try:
            fn = fn()
        except Exception as exc:  # noqa: BLE001 - the user's constructor
            raise UnusableInput(f"--step-fn {spec!r}: {fn_name} is a class; it must be constructible "
                                f"with no arguments ({type(exc).__name__}: {exc})") from None
    return fn


def check_callable(step_fn: Any) -> None:
    if not callable(step_fn):
        raise TypeError(f"step_fn must be callable as step_fn(inputs, reset=...), got {type(step_fn).__name__}")
    try:
        sig = inspect.signature(step_fn)
    except (TypeError, ValueError):
        return
    params = sig.parameters
    if "reset" not in params and not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        raise TypeError(f"step_fn {getattr(step_fn, '__name__', step_fn)!r} must accept the keyword "
                        f"'reset': step_fn(inputs: dict[str, Tensor], reset: bool) -> dict[str, Tensor]")


def output_names(graph: GraphReport) -> dict[str, str]:
    """Every name a step_fn may use for a node output -> the output's ``node/port``."""
    names = {}
    for n in graph.nodes:
        for p in n.outputs():
            names[f"{n.name}/{p.name}"] = f"{n.name}/{p.name}"
            if p.traced_name:
                names.setdefault(f"{n.name}/{p.traced_name}", f"{n.name}/{p.name}")
    return names


def call(step_fn: Callable, inputs: dict, reset: bool, names: dict[str, str]) -> dict[str, np.ndarray]:
    """One step of the original pipeline: its outputs as numpy, keyed by the graph's output names."""
    import torch
    feed = {k: (v.detach().clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}
    with torch.no_grad():
        out = step_fn(feed, reset=bool(reset))
    if not isinstance(out, dict):
        raise TypeError(f"step_fn returned {type(out).__name__}; it must return a dict "
                        f"{{'node/port': tensor}} of node outputs")
    res = {}
    for key, value in out.items():
        if key not in names:
            raise KeyError(f"step_fn returned {key!r}, which is no node output of the graph; "
                           f"outputs: {sorted(set(names.values()))}")
        res[names[key]] = to_numpy(value)
    return res

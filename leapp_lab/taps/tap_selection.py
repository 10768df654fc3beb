"""Which manual taps get exposed, and the errors that say why a requested one cannot be.

Checked twice: against the eager runs before the export is paid for (typo -> close names, reached
by no sample or not by every sample, a dtype numpy cannot hold), and against the markers that
survived the export (optimised away, branch not taken while exporting, TorchScript fallback).
"""
from __future__ import annotations

import ast
import difflib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

import torch
from torch import nn

if TYPE_CHECKING:   # the checks before the export import no onnx (prepare's timings put it in the export)
    from leapp_lab.onnxio import graph_edit as ge
from .eager_capture import NO_NUMPY, EagerRuns
from .errors import TapError
from .loader import ModelSource
from .marker import Site, short_path


def declared_taps(files: Iterable[str]) -> dict[str, Site]:
    """tap names written literally in the source files: ``tap(x, "n")``, ``tap(x, name="n")``, ``Tap("n")``."""
    found: dict[str, Site] = {}
    for f in files:
        try:
            tree = ast.parse(Path(f).read_text(encoding="utf-8"), filename=f)
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            fname = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
            arg = None
            if fname == "tap":
                if len(node.args) >= 2:
                    arg = node.args[1]
                arg = next((k.value for k in node.keywords if k.arg == "name"), arg)
            elif fname == "Tap":
                if node.args:
                    arg = node.args[0]
                arg = next((k.value for k in node.keywords if k.arg == "name"), arg)
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.setdefault(arg.value, Site(f, node.lineno))
    return found


def short_site(site: Site | str | None, src: ModelSource) -> str | None:
    """``FILE:LINE`` relative to the model's folder; ExportMode records sites as strings."""
    if site is None:
        return None
    if isinstance(site, str):
        f, _, line = site.rpartition(":")
        return f"{short_path(f, src.base_dir)}:{line}" if f else site
    return f"{short_path(site.file, src.base_dir)}:{site.line}"


def _source_files(src: ModelSource, net: nn.Module) -> list[str]:
    import inspect
    files = []
    if src.base_dir is not None and os.path.isfile(src.label):
        files.append(str(Path(src.label).resolve()))
    torch_dir = os.path.dirname(torch.__file__)
    for m in net.modules():
        try:
            f = inspect.getsourcefile(type(m))
        except (TypeError, OSError):
            continue
        if f and not f.startswith(torch_dir) and f not in files:
            files.append(f)
    return files


def check_requested_reached(wanted: list[str], eager: EagerRuns, src: ModelSource, net: nn.Module) -> None:
    """Every requested tap ran on every sample; the first one that did not raises."""
    missing = [w for w in wanted if w not in eager.sites]
    if missing:
        # only now read the sources: a tap declared there but never run is a branch not taken
        declared = declared_taps(_source_files(src, net))
        name = missing[0]
        if name in declared:
            raise TapError(
                f"debug tap {name!r}: branch not taken — the tap() at "
                f"{short_site(declared[name], src)} was reached by none of the {len(eager.reached)} "
                f"sample(s) of {src.label}; feed inputs that take that branch (get_samples()), or "
                f"move the tap to a tensor every input reaches")
        known = sorted(set(eager.sites) | set(declared))
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = (f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else
                f"; the model's taps are {known}" if known else "; the model has no tap() markers")
        raise TapError(f"debug tap {name!r}: no such tap() in {src.label}{hint}")
    for name in wanted:
        for i, r in enumerate(eager.reached):
            if name not in r:
                raise TapError(
                    f"debug tap {name!r}: branch not taken on sample {i} (the tap() at "
                    f"{eager.sites[name]} ran on other samples only); a tap needs a value on every "
                    f"sample — split the samples, or tap a tensor every sample reaches")


def check_dtypes(eager: EagerRuns) -> None:
    for values in eager.taps:
        for name, v in values.items():
            if v.dtype in NO_NUMPY:
                raise TapError(
                    f"debug tap {name!r} (tap() at {eager.sites[name]}) has dtype "
                    f"{str(v.dtype).replace('torch.', '')}, which "
                    f"numpy cannot hold, so it cannot be compared; cast it to float32 before tap() "
                    f"(tap(x.float(), {name!r})) or tap a float32 tensor")


def exposed_markers(markers: list[ge.Marker], wanted: list[str], expose_all: bool,
                    export_hits: dict[str, Site], eager: EagerRuns, used_exporter: str) -> list[ge.Marker]:
    """The markers to expose, in request order; a requested tap with no marker raises."""
    by_name = {m.name: m for m in markers}
    for name in wanted:
        if name in by_name:
            continue
        if used_exporter != "dynamo":
            raise TapError(f"debug tap {name!r}: the TorchScript exporter (the dynamo exporter "
                           f"failed) cannot carry tap markers; fix the dynamo export to use taps")
        if name in export_hits:
            raise TapError(
                f"debug tap {name!r}: optimised away — the tap() at {export_hits[name]} ran during "
                f"export but its tensor did not survive into the ONNX graph (its value is unused, "
                f"so the exporter dropped it as dead code, or it was folded into a constant); use "
                f"the returned value (x = tap(x, {name!r})) or move the tap to a tensor that "
                f"survives, e.g. a module output")
        raise TapError(
            f"debug tap {name!r}: branch not taken during export — the tap() at "
            f"{eager.sites.get(name)} ran eagerly but not while torch.export traced the first "
            f"sample (get_fwd_args()); make the first sample take that branch")
    if expose_all:
        # "all": every marker that survived; unexposed_under_all warns about the rest
        return markers
    return [by_name[n] for n in wanted]


def unexposed_under_all(markers: list[ge.Marker], export_hits: dict[str, Site], eager: EagerRuns,
                        used_exporter: str) -> list[str]:
    """Warnings for the taps ``"all"`` cannot expose: under "all" these are not errors."""
    warnings = []
    if not eager.sites:
        warnings.append("--debug-taps all: the model calls no tap() or Tap(), so no tap is exposed; mark "
                        "tensors with tap(x, \"name\") (docs/taps.md), or tap every intermediate value "
                        "with --debug-op-taps")
    if used_exporter != "dynamo" and eager.sites:
        warnings.append(f"the TorchScript exporter cannot carry tap markers: {len(eager.sites)} "
                        f"tap(s) not exposed ({', '.join(sorted(eager.sites))})")
    kept = {m.name for m in markers}
    warnings += [f"tap {n!r} (tap() at {site}) was optimised away by the exporter (its value is unused "
                 f"or constant) and is not exposed; use the value tap() returns"
                 for n, site in export_hits.items() if n not in kept]
    warnings += [f"tap {n!r} (tap() at {site}) ran eagerly but not while the first sample was "
                 f"exported (branch not taken during export); it is not exposed"
                 for n, site in eager.sites.items() if n not in export_hits and export_hits]
    return warnings

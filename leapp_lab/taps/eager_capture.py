"""Torch eager runs in ``CaptureMode``: outputs, tap values and sites, timings, one run per sample.

Also the torch-to-numpy conversions every later step shares, so a dtype numpy cannot hold is
refused with the same advice wherever it shows up.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from .control_flow import tap_in_branch
from .errors import PrepareError, TapError, first_line
from .loader import ModelSource
from .marker import CaptureMode, Site, name_problem

NO_NUMPY = {torch.bfloat16} | {getattr(torch, n) for n in (
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz") if hasattr(torch, n)}


@dataclass
class EagerRuns:
    outputs: list[list[np.ndarray]]          # [sample][output]
    output_names: list[str]
    taps: list[dict[str, torch.Tensor]]      # [sample] name -> value
    sites: dict[str, Site]                   # every tap reached by any sample
    reached: list[set[str]]                  # [sample] names reached
    timings_ms: list[float]


def to_numpy(t: torch.Tensor, what: str, copy: bool = True) -> np.ndarray:
    """``copy=False``: share the tensor's memory where it can (a value nothing will write to again)."""
    if t.dtype in NO_NUMPY:
        raise TapError(f"{what} has dtype {str(t.dtype).replace('torch.', '')}, which numpy cannot "
                       f"hold; cast it to float32 before tap() (x.float()) or return it as float32")
    a = t.detach().to("cpu").contiguous().numpy()
    return a.copy() if copy else a


def flat_tensor_args(sample: Sequence[Any]) -> list[torch.Tensor]:
    from torch.utils import _pytree as pytree
    return [x for x in pytree.tree_leaves(tuple(sample)) if isinstance(x, torch.Tensor)]


def _tensor_leaves(obj: Any, label: str) -> tuple[list[torch.Tensor], list[str]]:
    """Flatten forward outputs; names from a returned dict's keys, else output_0, output_1, ..."""
    from torch.utils import _pytree as pytree
    leaves, _ = pytree.tree_flatten_with_path(obj)
    tensors, names = [], []
    top_dict = isinstance(obj, dict)
    for path, leaf in leaves:
        if not isinstance(leaf, torch.Tensor):
            continue
        if top_dict:
            parts = []
            for k in path:
                key = getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))
                parts.append(str(key))
            names.append(".".join(parts))
            problem = name_problem(names[-1])   # an output name is an npz member, as a tap's is
            if problem is not None:
                raise PrepareError(f"{label}: forward() returns an output named {names[-1]!r}, which "
                                   f"{problem.replace('rename it', 'rename the key')}")
        else:
            names.append(f"output_{len(tensors)}")
        tensors.append(leaf)
    if not tensors:
        raise PrepareError(f"{label}: the model's forward returned no tensors")
    return tensors, names


def _user_frame(exc: BaseException, src: ModelSource) -> str:
    """' at FILE:LINE' of the deepest traceback frame in the user's code (under the model's folder)."""
    import traceback
    base = src.base_dir.resolve() if src.base_dir is not None else None
    for f in reversed(traceback.extract_tb(exc.__traceback__)):
        fp = Path(f.filename).resolve()
        if base is not None and base in fp.parents and "site-packages" not in fp.parts:
            return f" at {fp.relative_to(base)}:{f.lineno}"
    return ""


def eager_runs(net: nn.Module, samples: list[tuple], expose: frozenset[str] | None,
               src: ModelSource, profile: Any = None) -> EagerRuns:
    """``profile``: a context manager entered around each capture run (``code_profile.ExecutedCode``:
    which code ``forward()`` executed, for prepare's key)."""
    from contextlib import nullcontext
    outputs, taps, reached, timings = [], [], [], []
    sites: dict[str, Site] = {}
    names: list[str] | None = None
    with torch.no_grad():
        for i, s in enumerate(samples):
            with CaptureMode(expose=expose) as cm:
                try:
                    with profile if profile is not None else nullcontext():
                        t_cap = time.perf_counter()
                        out = net(*s)
                        t_run = time.perf_counter()
                except TapError:
                    raise
                except Exception as exc:
                    if str(exc).startswith(("tap(", "Tap(")):   # misuse of tap(): its own message
                        raise PrepareError(f"{src.label}: {type(exc).__name__}: {first_line(exc)}") from exc
                    branch = tap_in_branch(exc, src)
                    if branch is not None:
                        raise PrepareError(f"{src.label}: {branch}") from exc
                    raise PrepareError(f"{src.label}: the model's forward raised on sample {i}"
                                       f"{_user_frame(exc, src)}: {type(exc).__name__}: {first_line(exc)}; "
                                       f"{src.raised_hint}") from exc
            if i == 0:      # timed after the capture run, which warmed the model up
                t0 = time.perf_counter()
                net(*s)
                timings.append(1000.0 * (time.perf_counter() - t0))
            else:           # warm already: the capture run is the timing (one forward per sample: a
                # model that keeps state across calls sees the calls it saw before); it includes the
                # capture and the profile hooks (about 0.7 us per Python call)
                timings.append(1000.0 * (t_run - t_cap))
            tensors, n = _tensor_leaves(out, src.label)
            if names is None:
                names = n
            elif n != names:
                raise PrepareError(f"{src.label}: sample {i} returns outputs {n}, sample 0 {names}; "
                                   f"every sample must return the same structure")
            arrs = []
            for name, tsr in zip(n, tensors):
                if tsr.dtype in NO_NUMPY:  # an output is always compared; a tap must cast itself
                    tsr = tsr.float()
                arrs.append(to_numpy(tsr, f"output {name!r}"))
            outputs.append(arrs)
            taps.append(cm.values)
            reached.append(set(cm.hits))
            for k, v in cm.hits.items():
                sites.setdefault(k, v)
    return EagerRuns(outputs, names or [], taps, sites, reached, timings)

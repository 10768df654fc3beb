"""A tap() inside a ``torch.cond`` / ``torch.while_loop`` branch.

Run eagerly, those operators compile their branches with torch.compile, and tap() cannot be traced
there (it records its call site with ``sys._getframe`` and checks its name with ``unicodedata``):
torch raises ``UncapturedHigherOrderOpError``, whose text points at torch, not at the tap. This
module recognises that error and names the tap and its line instead."""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Iterator

from .loader import ModelSource
from .marker import short_path

_LEAPP = Path(__file__).resolve().parents[1]
_TORCH = Path(__import__("torch").__file__).resolve().parent
_HOP = re.compile(r"Higher Order Operator: (torch\.\w+)")


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _under(filename: str, root: Path) -> bool:
    try:
        return root in Path(filename).resolve().parents
    except (OSError, ValueError):
        return False


def _tap_name(line: str) -> str | None:
    """The literal name of a ``tap(x, "name")`` call on ``line``, or None."""
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return None
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) in ("tap", "tap_at"):
            args = n.args[1:2] + [k.value for k in n.keywords if k.arg == "name"]
            if args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                return args[0].value
    return None


def tap_in_branch(exc: BaseException, src: ModelSource) -> str | None:
    """The sentence for a tap inside a torch.cond / torch.while_loop branch, or None when ``exc``
    is something else."""
    for e in _chain(exc):
        if type(e).__name__ != "UncapturedHigherOrderOpError":
            continue
        frames = list(getattr(e, "real_stack", None) or [])
        i = next((k for k, f in enumerate(frames) if _under(f.filename, _LEAPP)), None)
        if i is None:
            return None
        k = i - 1
        while k >= 0 and _under(frames[k].filename, _TORCH):
            k -= 1
        m = _HOP.search(str(e))
        hop = m.group(1) if m else (getattr(e, "_hop_name", None) or "torch.cond / torch.while_loop")
        part = "body" if hop == "torch.while_loop" else "branch"
        name = _tap_name(frames[k].line or "") if k >= 0 else None
        what = (f"the tap named {name!r}" if name else
                "a Tap module" if frames[i].name == "forward" else "a tap() call")
        where = f" at {short_path(frames[k].filename, src.base_dir)}:{frames[k].lineno}" if k >= 0 else ""
        return (f"{what}{where} is inside a {hop} {part}, which torch's export cannot trace (torch "
                f"compiles the {part}, and tap() records its call site); move the tap outside the {part} "
                f"(tap the {hop.split('.')[-1]}'s result)")
    return None

"""The parts of prepare's content key that need torch: the user's code, the weights, the samples.

``code_parts``: the digest of every file of the user's own modules the model reaches (MODEL.py's
globals, the modules of the classes in ``net.modules()``, and what those modules' globals reach in
turn), never a file of the standard library, of site-packages / dist-packages or of leapp_lab
(versions and leapp_lab's code are their own part); and of that code as this process runs it (the
compiled code of its functions and classes, the plain values and tensors they read): code without a
file (a notebook cell's class), and a module edited since it was imported, count as they run. ``tensor_digest`` / ``weights_digest`` / ``samples_digest``: the
dtype, shape and bytes of every parameter and buffer, of every sample's leaves.

A part that cannot be hashed faithfully raises ``Unhashable``: prepare then runs without the cache
rather than risk reusing outputs of another model.
"""
from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
import types
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn


class Unhashable(Exception):
    """Something the key must cover has no faithful digest (the reason is the message)."""


def _library_roots() -> tuple[str, ...]:
    roots = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}   # leapp_lab itself
    return tuple(sorted(os.path.join(os.path.realpath(r), "") for r in roots if r))


def _is_library(path: str, roots: tuple[str, ...]) -> bool:
    """A file of the standard library, site-packages or leapp_lab; also the interpreter's own code
    (``<frozen ...>``) and generated code (``<string>``: a dataclass's ``__init__``). A notebook cell
    (``<ipython-input-...>``, ``<leapp-cell:...>``, a kernel's temporary file) is the user's."""
    if path.startswith("<frozen") or path == "<string>":
        return True
    real = os.path.realpath(path)
    parts = Path(real).parts
    return "site-packages" in parts or "dist-packages" in parts or real.startswith(roots)


def _code_bytes(code: types.CodeType, h: Any) -> None:
    """What a code object computes (its bytecode, names and constants, nested code included); not
    marshal, whose bytes depend on reference counts."""
    h.update(code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars)).encode())
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_bytes(c, h)
        else:
            h.update(repr(c).encode())


def _names(code: types.CodeType) -> set[str]:
    """The global names a code object (nested code included) reads."""
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names(c)
    return out


_SCALARS = (bool, int, float, complex, str, bytes, type(None))


def _plain(v: Any, depth: int = 0) -> bool:
    """A value whose repr is its content: scalars, and small tuples / lists / dicts of them."""
    if isinstance(v, _SCALARS):
        return True
    if depth < 3 and isinstance(v, (tuple, list)) and len(v) <= 256:
        return all(_plain(x, depth + 1) for x in v)
    if depth < 3 and isinstance(v, dict) and len(v) <= 256:
        return all(isinstance(k, _SCALARS) and _plain(x, depth + 1) for k, x in v.items())
    return False


class _Walk:
    """The code the model reaches, as its files hold it (``files``) and as this process runs it
    (``live``). Both count: a module edited on disk but still imported as it was (a notebook)
    differs from its file, so neither the edit nor a later restart goes unseen."""

    def __init__(self, roots: tuple[str, ...]):
        self.roots, self.files, self.live = roots, {}, hashlib.sha256()
        self.seen: set[int] = set()
        self.todo: list[Any] = []

    def user_code(self, fn: types.FunctionType) -> bool:
        return not _is_library(fn.__code__.co_filename, self.roots)

    def value(self, name: str, v: Any) -> None:
        """A global or closure value the model's code may read."""
        if _plain(v):
            self.live.update(f"{name}={v!r}\0".encode())
        elif isinstance(v, torch.Tensor):
            self.live.update(f"{name}=tensor\0".encode())
            tensor_digest(v, self.live, f"the global {name!r}")
        elif isinstance(v, np.ndarray) and v.dtype != object:
            self.live.update(f"{name}=array{v.dtype}{v.shape}\0".encode())
            self.live.update(memoryview(np.ascontiguousarray(v)).cast("B"))
        else:
            self.todo.append(v)

    def function(self, fn: types.FunctionType) -> None:
        if not self.user_code(fn):
            return
        self.live.update(f"def {fn.__qualname__}\0".encode())
        _code_bytes(fn.__code__, self.live)
        if _plain(fn.__defaults__) and _plain(fn.__kwdefaults__):
            self.live.update(repr((fn.__defaults__, fn.__kwdefaults__)).encode())
        for k in sorted(_names(fn.__code__) & set(fn.__globals__)):
            self.value(k, fn.__globals__[k])
        for cell in fn.__closure__ or ():
            try:
                self.value("<closure>", cell.cell_contents)
            except ValueError:      # an empty cell
                pass
        if hasattr(fn, "__wrapped__"):
            self.todo.append(fn.__wrapped__)

    def klass(self, cls: type) -> None:
        methods = []
        for k, v in vars(cls).items():
            if isinstance(v, (staticmethod, classmethod)):
                v = v.__func__
            if isinstance(v, property):
                methods += [f for f in (v.fget, v.fset) if isinstance(f, types.FunctionType)]
            elif isinstance(v, types.FunctionType):
                methods.append(v)
            elif isinstance(v, type):
                self.todo.append(v)
            elif not k.startswith("__") and _plain(v):
                self.live.update(f"{cls.__qualname__}.{k}={v!r}\0".encode())
        if any(self.user_code(m) for m in methods):
            self.live.update(f"class {cls.__qualname__}\0".encode())
            for m in methods:
                self.function(m)
        self.todo.extend(b for b in cls.__mro__[1:] if b is not object)

    def module(self, mod: types.ModuleType) -> None:
        f = getattr(mod, "__file__", None)
        if not (isinstance(f, str) and f.endswith(".py") and os.path.isfile(f)) or _is_library(f, self.roots):
            return
        with open(f, "rb") as fh:
            self.files[f] = hashlib.sha256(fh.read()).hexdigest()
        for k, v in sorted(vars(mod).items()):
            if not k.startswith("__"):
                self.value(k, v)     # not the module's name: a copied project loads under another

    def run(self, roots: list[Any]) -> None:
        self.todo.extend(roots)
        while self.todo:
            obj = self.todo.pop()
            if id(obj) in self.seen or isinstance(obj, _SCALARS):
                continue
            self.seen.add(id(obj))
            if isinstance(obj, types.ModuleType):
                self.module(obj)
            elif isinstance(obj, (type, types.FunctionType)):
                mod = sys.modules.get(getattr(obj, "__module__", None) or "")
                if mod is not None:
                    self.todo.append(mod)
                self.klass(obj) if isinstance(obj, type) else self.function(obj)
            else:                               # an instance: its class's code, and its plain
                t = type(obj)                   # attributes when that class is the user's
                self.todo.append(t)
                if hasattr(obj, "__dict__") and any(self.user_code(f) for f in vars(t).values()
                                                    if isinstance(f, types.FunctionType)):
                    for k, v in sorted(vars(obj).items()):
                        self.value(f"{t.__qualname__}().{k}", v)


def code_parts(namespace: dict | None, net: nn.Module, base: Path | None = None) -> dict[str, str]:
    """``{"user code": digest}``: the user's module files the model reaches, and its code as this
    process runs it. A file under ``base`` (MODEL.py's folder) counts by its path relative to it, so
    a project folder moved or copied whole keeps its key."""
    w = _Walk(_library_roots())
    w.run([v for k, v in (namespace or {}).items() if not k.startswith("__")]
          + [type(m) for m in net.modules()])
    h = hashlib.sha256()
    named = {}
    for f, d in w.files.items():
        rel = os.path.relpath(f, base) if base is not None else f
        named[f if rel.startswith("..") else rel] = d
    for f in sorted(named):
        h.update(f"{f}\0{named[f]}\0".encode())
    h.update(w.live.digest())
    return {"user code": h.hexdigest()}


def tensor_digest(t: torch.Tensor, h: Any, what: str) -> None:
    if t.is_quantized or t.is_sparse or t.device.type == "meta" or t.is_nested:
        raise Unhashable(f"{what} is a {t.layout} / {t.device.type} tensor")
    h.update(f"{t.dtype}{tuple(t.shape)}\0".encode())
    flat = t.detach().to("cpu").contiguous().reshape(-1)
    if flat.numel():
        h.update(memoryview(flat.view(torch.uint8).numpy()))


def weights_digest(net: nn.Module) -> str:
    """Every parameter and buffer (persistent or not) by name, dtype, shape and bytes, and every
    submodule's plain attributes (a stride or an activation name read from a config file)."""
    h = hashlib.sha256()
    for name, m in net.named_modules(remove_duplicate=False):
        plain = sorted((k, v) for k, v in vars(m).items() if _plain(v))
        h.update(f"m:{name}:{type(m).__qualname__}:{plain!r}\0".encode())
    for kind, items in (("p", net.named_parameters(remove_duplicate=False)),
                        ("b", net.named_buffers(remove_duplicate=False))):
        for name, t in items:
            h.update(f"{kind}:{name}\0".encode())
            if t is None:
                continue
            tensor_digest(t, h, f"the model's {name!r}")
    return h.hexdigest()


def samples_digest(samples: list[tuple]) -> str:
    """Every sample's leaves: tensors by dtype, shape and bytes, plain values by repr; any other
    object has no faithful digest."""
    from torch.utils import _pytree as pytree
    h = hashlib.sha256()
    for i, s in enumerate(samples):
        leaves, spec = pytree.tree_flatten(tuple(s))
        h.update(f"sample {i}: {spec}\0".encode())
        for x in leaves:
            if isinstance(x, torch.Tensor):
                tensor_digest(x, h, f"sample {i}")
            elif x is None or isinstance(x, (bool, int, float, complex, str, bytes)):
                h.update(f"{type(x).__name__}:{x!r}\0".encode())
            else:
                raise Unhashable(f"sample {i} holds a {type(x).__name__}")
    return h.hexdigest()

"""A faithful digest of what a model holds: every value reachable from it, or ``Unhashable``.

prepare's key (steps/prepare_cache.py) must change whenever anything the model's ``forward()`` can
read changes: a tensor attribute read from a JSON config, a numpy array from a ``.npy``, a config
dict of any size, a class attribute, a function chosen at run time and kept as an attribute. So
``Walk`` digests values by content, recursively, with no size cut-off and no silent skip:

- numbers, strings, bytes, None by type and value; tensors and arrays by dtype, shape and bytes;
- lists, tuples, dicts, sets by their items; any other object by its class and its ``__dict__`` /
  ``__slots__``;
- code by what it computes: a function by its bytecode, constants, defaults and closure (the
  globals it reads when it runs are keyed with the code that ran, ``code_profile``); a class by its methods, class attributes and bases. A function, class or module
  of an *excluded* file (the standard library and the packages the key's versions part covers:
  torch, numpy, leapp_lab ...) is keyed by its name, as the version stands for its code.

A value with no faithful digest (a lock, a generator, a C object with hidden state, a quantized
tensor) raises ``Unhashable`` naming where it is held: the step then runs without the cache.
"""
from __future__ import annotations

import enum
import functools
import hashlib
import os
import pathlib
import re
import sys
import sysconfig
import types
from importlib import util as _import_util
from typing import Any, Iterable

import numpy as np
import torch
from torch import nn

from .content_key import Unhashable, tensor_digest

#: beyond this many objects a model's state is not keyed (a dataset held as an attribute)
MAX_OBJECTS = 2_000_000
_BOOKKEEPING = frozenset({"__dict__", "__weakref__", "__module__", "__doc__", "__qualname__",
                          "__annotations__", "__slots__", "__orig_bases__", "__parameters__"})
_REPR_TYPES = (torch.dtype, torch.device, torch.layout, torch.memory_format, torch.finfo, torch.iinfo,
               range, slice, type(Ellipsis), type(NotImplemented))
_C_CALLABLES = (types.BuiltinFunctionType, types.MethodWrapperType, types.WrapperDescriptorType,
                types.MethodDescriptorType, types.ClassMethodDescriptorType)


def excluded_roots(packages: Iterable[str]) -> tuple[str, ...]:
    """The folders whose code the key holds by version instead of by content: the standard library
    (the Python version), each of ``packages`` (its version) and leapp_lab (its code digest)."""
    roots = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib")}
    roots.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for name in packages:
        try:
            spec = _import_util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        for loc in (getattr(spec, "submodule_search_locations", None) or ()):
            roots.add(loc)
    return tuple(sorted(os.path.join(os.path.realpath(r), "") for r in roots if r))


class Walk:
    """One sha256 over the values given to ``value``, in order. ``excluded``: ``excluded_roots``."""

    def __init__(self, excluded: tuple[str, ...]):
        self.excluded = excluded
        self.h = hashlib.sha256()
        #: where code goes (bytecode, a user class's name): ``h`` unless split by ``module_state``
        self.code_h = self.h
        self.memo: dict[int, int] = {}
        self.keep: list[Any] = []        # holds what memo names, so no id is reused meanwhile
        self.count = 0
        self._real: dict[str, bool] = {}

    def hexdigest(self) -> str:
        return self.h.hexdigest()

    def put(self, s: str) -> None:
        self.h.update(s.encode("utf-8", "surrogatepass"))
        self.h.update(b"\0")

    def put_code(self, s: str) -> None:
        self.code_h.update(s.encode("utf-8", "surrogatepass"))
        self.code_h.update(b"\0")

    def is_excluded_file(self, path: str | None) -> bool:
        """Code of the standard library, of a versioned package or of leapp_lab; also the
        interpreter's frozen modules. Code without a file (a notebook cell) is never excluded."""
        if not path:
            return True
        if path.startswith("<frozen"):
            return True
        if path.startswith("<"):
            return False
        hit = self._real.get(path)
        if hit is None:
            hit = self._real[path] = os.path.realpath(path).startswith(self.excluded)
        return hit

    def is_excluded_module(self, name: str | None) -> bool:
        if not name:
            return True
        top = name.split(".")[0]
        if top in sys.builtin_module_names or top in getattr(sys, "stdlib_module_names", ()):
            return True
        mod = sys.modules.get(name) or sys.modules.get(top)
        f = getattr(mod, "__file__", None)
        return mod is None or f is None or self.is_excluded_file(f)

    def tname(self, t: type) -> str:
        """A class's name in the key: a user's class by its qualified name alone (MODEL.py may be
        imported under another module name elsewhere; the class's content is keyed by ``klass``)."""
        return f"{t.__module__}.{t.__qualname__}" if self.is_excluded_module(t.__module__) else t.__qualname__

    # -- values -------------------------------------------------------------------------------
    def value(self, v: Any, what: str) -> None:
        self.count += 1
        if self.count > MAX_OBJECTS:
            raise Unhashable(f"{what}: the model holds more than {MAX_OBJECTS:,} objects")
        t = type(v)
        if v is None or t in (bool, int, float, complex):
            return self.put(f"{t.__name__}:{v!r}")
        if t is str:
            return self.put(f"str:{len(v)}:{v}")
        if t is bytes:
            self.put(f"bytes:{len(v)}")
            return self.h.update(v)
        if isinstance(v, _REPR_TYPES):
            return self.put(f"{t.__qualname__}:{v!r}")
        i = self.memo.get(id(v))
        if i is not None:
            return self.put(f"ref:{i}")
        self.memo[id(v)] = len(self.memo)
        self.keep.append(v)
        try:
            self._object(v, t, what)
        except RecursionError:
            raise Unhashable(f"{what}: nested too deeply to be keyed") from None

    def _object(self, v: Any, t: type, what: str) -> None:
        if isinstance(v, torch.Tensor):
            return tensor_digest(v, self.h, what)
        if isinstance(v, np.ndarray):
            return self._array(v, what)
        if isinstance(v, np.generic):
            return self.put(f"np:{v.dtype.str}:{v.tobytes().hex()}")
        if isinstance(v, enum.Enum):
            self.put(f"enum:{self.tname(t)}.{v.name}")
            return self.value(v.value, what)
        if isinstance(v, (bool, int, float, complex, str, bytes)):     # a subclass of a scalar
            self.put(f"{self.tname(t)}:{v!r}")
            return self._state(v, t, what)
        if isinstance(v, (list, tuple)):
            self.put(f"seq:{self.tname(t)}:{len(v)}")
            for j, x in enumerate(v):
                self.value(x, f"{what}[{j}]")
            return None
        if isinstance(v, dict):
            self.put(f"dict:{self.tname(t)}:{len(v)}")
            for k, x in list(v.items()):
                self.value(k, f"{what} (a key)")
                self.value(x, f"{what}[{k!r}]")
            return None
        if isinstance(v, (set, frozenset)):
            return self._set(v, t, what)
        if isinstance(v, (types.FunctionType, types.MethodType, functools.partial, type,
                          types.ModuleType, types.CodeType, staticmethod, classmethod, property)
                      ) or isinstance(v, _C_CALLABLES):
            return self._code(v, what)
        if isinstance(v, pathlib.PurePath):
            return self.put(f"path:{v}")
        if isinstance(v, re.Pattern):
            return self.put(f"re:{v.flags}:{v.pattern!r}")
        if t.__module__ == "logging" and hasattr(v, "name") and hasattr(v, "handlers"):
            return self.put(f"logger:{v.name}")     # writes log lines; computes nothing
        self.put(f"obj:{self.tname(t)}")
        self.value(t, f"{what}'s class")
        self._state(v, t, what)

    def _state(self, v: Any, t: type, what: str) -> None:
        """An instance's own values: its ``__dict__`` and ``__slots__``; without either (a C object
        whose state Python cannot see) it has no faithful digest."""
        d = getattr(v, "__dict__", None)
        slots = _slots(t)
        if not isinstance(d, dict) and not slots and not isinstance(v, (int, float, complex, str, bytes)):
            raise Unhashable(f"{what} is a {self.tname(t)}, whose state cannot be read")
        if isinstance(d, dict):
            for k, x in list(d.items()):
                if isinstance(v, nn.Module) and k in ("_parameters", "_buffers"):
                    # their bytes are the key's state_dict part; here their names and presence
                    self.put(f"{k}:{[(n, p is None) for n, p in x.items()]!r}")
                    continue
                self.put(f".{k}")
                self.value(x, f"{what}.{k}")
        for s in slots:
            if s not in ("__dict__", "__weakref__") and hasattr(v, s):
                self.put(f".{s}")
                self.value(getattr(v, s), f"{what}.{s}")

    def _array(self, v: np.ndarray, what: str) -> None:
        self.put(f"array:{v.dtype.str}:{v.shape}")
        if v.dtype.hasobject:
            for j, x in enumerate(v.ravel().tolist()):
                self.value(x, f"{what}[{j}]")
        elif v.size:
            self.h.update(memoryview(np.ascontiguousarray(v)).cast("B"))

    def _set(self, v: Any, t: type, what: str) -> None:
        """Items in an order of their own digests: a set's iteration order is not its content."""
        digests = []
        for x in v:
            sub = Walk(self.excluded)
            sub.value(x, f"{what} (an item)")
            self.count += sub.count
            digests.append(sub.hexdigest())
        self.put(f"set:{self.tname(t)}:{sorted(digests)}")

    # -- code ---------------------------------------------------------------------------------
    def _code(self, v: Any, what: str) -> None:
        if isinstance(v, types.FunctionType):
            return self.function(v, what)
        if isinstance(v, types.MethodType):
            self.put("method")
            self.value(v.__func__, what)
            return self.value(v.__self__, f"{what}.__self__")
        if isinstance(v, functools.partial):
            self.put("partial")
            for part, x in (("func", v.func), ("args", v.args), ("keywords", v.keywords)):
                self.value(x, f"{what}.{part}")
            return None
        if isinstance(v, (staticmethod, classmethod)):
            self.put(type(v).__name__)
            return self.value(v.__func__, what)
        if isinstance(v, property):
            self.put("property")
            for x in (v.fget, v.fset, v.fdel):
                self.value(x, what)
            return None
        if isinstance(v, types.CodeType):
            return code_bytes(v, self.code_h)
        if isinstance(v, types.ModuleType):
            return self.module(v, what)
        if isinstance(v, type):
            return self.klass(v, what)
        # a C function or method: by its name; its extension module's file when that is not versioned
        mod = getattr(v, "__module__", None)
        self.put(f"c:{mod}.{getattr(v, '__qualname__', getattr(v, '__name__', '?'))}")
        owner = getattr(v, "__self__", None)
        if owner is not None and not isinstance(owner, types.ModuleType):
            self.value(owner, f"{what}.__self__")
        if isinstance(mod, str) and not self.is_excluded_module(mod):
            self.file(getattr(sys.modules.get(mod), "__file__", None))
        return None

    def file(self, path: str | None) -> None:
        if path and os.path.isfile(path):
            h = hashlib.sha256()
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            self.put(f"file:{h.hexdigest()}")

    def function(self, fn: types.FunctionType, what: str) -> None:
        code = fn.__code__
        if self.is_excluded_file(code.co_filename):
            return self.put(f"fn:{fn.__module__}.{fn.__qualname__}")
        self.put(f"def {fn.__qualname__}")
        code_bytes(code, self.code_h)
        self.value(fn.__defaults__, f"{what}'s defaults")
        self.value(fn.__kwdefaults__, f"{what}'s defaults")
        for j, cell in enumerate(fn.__closure__ or ()):
            try:
                x = cell.cell_contents
            except ValueError:          # an empty cell
                self.put("empty cell")
                continue
            self.value(x, f"{what}'s closure {code.co_freevars[j]!r}")
        # not the globals it reads: those a function reads when it runs in forward() are keyed with
        # the code that ran (code_profile); those __init__ read are in the state they built
        if fn.__dict__:
            self.value(dict(fn.__dict__), f"{what}'s attributes")

    def globals_read(self, code: types.CodeType, g: dict, who: str, nested: bool = True) -> None:
        """The globals ``code`` reads (by name, nested code too unless ``nested`` is false)."""
        names = names_read(code) if nested else set(code.co_names)
        for k in sorted(names & g.keys()):
            if not k.startswith("__"):
                self.put(f"global {k}")
                self.value(g[k], f"the global {k!r} read by {who}")

    def klass(self, cls: type, what: str) -> None:
        mod = sys.modules.get(cls.__module__)
        f = getattr(mod, "__file__", None)
        if cls.__module__ == "builtins" or self.is_excluded_file(f) and not _cell_class(cls, f):
            return self.put(f"class:{cls.__module__}.{cls.__qualname__}")
        self.put(f"class {cls.__qualname__}")
        for k, x in list(vars(cls).items()):
            if k not in _BOOKKEEPING and not isinstance(x, types.GetSetDescriptorType | types.MemberDescriptorType):
                self.put(f"attr {k}")
                self.value(x, f"{cls.__qualname__}.{k}")
        for b in cls.__bases__:
            if b is not object:
                self.value(b, f"a base of {cls.__qualname__}")
        if type(cls) is not type:
            self.value(type(cls), f"the metaclass of {cls.__qualname__}")

    def module(self, mod: types.ModuleType, what: str) -> None:
        self.put(f"module:{mod.__name__}")
        if self.is_excluded_module(mod.__name__):
            return None
        for k, x in sorted(vars(mod).items()):
            if not k.startswith("__"):
                self.put(f"global {k}")
                self.value(x, f"{mod.__name__}.{k}")
        return None


@functools.lru_cache(maxsize=4096)
def _slots(t: type) -> tuple[str, ...]:
    out: list[str] = []
    for c in t.__mro__:
        s = c.__dict__.get("__slots__", ())
        out += [s] if isinstance(s, str) else list(s) if isinstance(s, (tuple, list)) else []
    return tuple(out)


def _cell_class(cls: type, f: str | None) -> bool:
    """A class defined in a notebook cell or an exec'd string has no module file: its own code."""
    return f is None and any(isinstance(x, types.FunctionType) and not x.__code__.co_filename.startswith("<frozen")
                             and (x.__code__.co_filename.startswith("<") or os.path.isfile(x.__code__.co_filename))
                             for x in vars(cls).values())


def names_read(code: types.CodeType) -> set[str]:
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= names_read(c)
    return out


def code_bytes(code: types.CodeType, h: Any) -> None:
    """What a code object computes: bytecode, names, constants (nested code included); not marshal,
    whose bytes depend on reference counts, and not line numbers. A frozenset constant is written
    sorted (its repr's order depends on string hashing, which differs between processes)."""
    h.update(code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, code.co_argcount,
                   code.co_kwonlyargcount, code.co_posonlyargcount, code.co_flags)).encode())
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            code_bytes(c, h)
        elif isinstance(c, frozenset):
            h.update(f"frozenset{sorted(map(repr, c))}".encode())
        else:
            h.update(repr(c).encode())
        h.update(b"\0")


def module_state_digest(net: nn.Module, excluded: tuple[str, ...]) -> tuple[str, str]:
    """(values, code) of everything ``net`` holds besides its parameters' and buffers' bytes: every
    submodule's attributes (tensors, arrays, numbers, strings, dicts, lists, objects, callables),
    hooks, and the classes of all of them with their class attributes. ``values`` is the state;
    ``code`` the bytecode of the functions and classes among them (the key's user code part)."""
    w = Walk(excluded)
    w.code_h = hashlib.sha256()
    w.value(net, "the model")
    return w.hexdigest(), w.code_h.hexdigest()

"""Load a MODEL.py (or a module / namespace / dict) into what prepare needs.

MODEL.py defines ``Model`` (an ``nn.Module`` class or a zero-argument factory) and
``get_fwd_args()`` (a tuple of forward arguments); optionally ``get_samples()`` (a list of such
tuples; default ``[get_fwd_args()]``) and ``get_ort_session_options()`` (onnxruntime
``SessionOptions`` with custom-op libraries registered, used to recompute references of custom-op
boundaries) and ``get_custom_translation_table()`` (``{torch op overload: onnxscript function}``,
passed to ``torch.onnx.export(custom_translation_table=...)`` for custom torch ops). A dict or namespace may instead give ``model`` (an instance) and ``args`` / ``samples``.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import types
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from .errors import PrepareError, UserExit

SEED = 0


@dataclass
class ModelSource:
    label: str                          # file path, or a description of the object
    base_dir: Path | None               # where relative source paths are shortened from
    make_model: Callable[[], nn.Module]
    get_samples: Callable[[], list[tuple]]
    ort_session_options: Callable[[], Any] | None = None
    translation_table: Callable[[], dict] | None = None
    file: Path | None = None            # the source file, absolute (prepare records it)
    sha256: str | None = None           # of the bytes that were executed (of ``file`` for a module)
    output_names: list[str] | None = None   # given names of the outputs (a traced LEAPP node's ports)
    namespace: dict | None = None       # MODEL.py's globals (or the given dict): where the key's code walk starts
    #: what to check when forward() raises on a sample (the default speaks of a MODEL.py)
    raised_hint: str = "check get_fwd_args()/get_samples() against forward()"
    #: folders on sys.path while the model is built and run, as under ``python MODEL.py``: MODEL.py's
    #: own folder (and the folder above its package), so a module imported inside forward() is found
    import_dirs: list[str] = field(default_factory=list)

    @contextmanager
    def importable(self):
        """``import_dirs`` first on sys.path for the block; taken off again after it (a notebook's
        sys.path stays as it was)."""
        added = [d for d in self.import_dirs if d not in sys.path]
        for d in reversed(added):
            sys.path.insert(0, d)
        try:
            yield
        finally:
            for d in added:
                try:
                    sys.path.remove(d)
                except ValueError:
                    pass


def source_digest(source: bytes) -> str:
    return hashlib.sha256(source).hexdigest()


def read_source(path: str | os.PathLike) -> tuple[Path, bytes]:
    """(absolute path, bytes) of a MODEL.py; the bytes are what is hashed and executed, so a
    file replaced in between cannot run unchecked."""
    path = Path(path).resolve()
    if not path.is_file():
        raise PrepareError(f"{path}: no such model file")
    try:
        return path, path.read_bytes()
    except OSError as exc:
        raise PrepareError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def load_module(path: str | os.PathLike, source: bytes | None = None) -> types.ModuleType:
    """Import MODEL.py under a private, path-derived module name (re-importing re-executes it).
    ``source``: the file's bytes as already read (and checked) by the caller; executed as they are,
    never a cached ``.pyc`` and never a second read of the file."""
    if source is None:
        path, source = read_source(path)
    else:
        path = Path(path).resolve()
    try:
        return _exec_module(path, _module_name(path), None, source)
    except PrepareError as exc:
        # MODEL.py inside a package with relative imports (``from .layers import Head``): import it
        # as ``pkg.model``, as ``python -m pkg.model`` would. Only then, so that every model that
        # imports as a plain file keeps its stem as module name (and its ONNX bytes).
        package = _package_of(path)
        cause = exc.__cause__
        if package is None or not (isinstance(cause, ImportError) and "relative import" in str(cause)):
            raise
        return _exec_module(path, f"{package[0]}.{path.stem}", package, source)


def _exec_module(path: Path, name: str, package: tuple[str, Path] | None, source: bytes) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PrepareError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    added = [str(path.parent)] + ([str(package[1])] if package else [])
    for d in added:
        sys.path.insert(0, d)
    sys.modules[name] = module
    try:
        if package:
            importlib.import_module(package[0])
        # what the loader's exec_module does, on the bytes given (dont_inherit: this module's
        # __future__ imports stay out of the user's code)
        exec(compile(source, str(path), "exec", dont_inherit=True), module.__dict__)
    except SystemExit as exc:
        sys.modules.pop(name, None)
        raise UserExit(f"{path}: called sys.exit({exc.code!r}) while being imported; prepare imports "
                           f"the file, so keep script code under `if __name__ == \"__main__\":`") from None
    except Exception as exc:
        sys.modules.pop(name, None)
        raise PrepareError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from exc
    finally:
        for d in added:
            try:
                sys.path.remove(d)
            except ValueError:
                pass
    return module


def _package_of(path: Path) -> tuple[str, Path] | None:
    """(dotted package name, folder above it) when MODEL.py sits in a package (``__init__.py`` next
    to it), so ``from .layers import Head`` works as it does for ``python -m pkg.model``. None when
    the package name is taken in this process by another folder, or is not an identifier."""
    parts, d = [], path.parent
    while (d / "__init__.py").is_file():
        parts.insert(0, d.name)
        d = d.parent
    if not parts or not all(p.isidentifier() for p in parts) or not path.stem.isidentifier():
        return None
    top = sys.modules.get(parts[0])
    if top is not None:
        f = getattr(top, "__file__", None)
        if not f or Path(f).resolve().parent != (d / parts[0]).resolve():
            return None
    return ".".join(parts), d


def _module_name(path: Path) -> str:
    """The file's stem when that name is free (the exporter writes the module name into node
    metadata, so ``my_model.Model`` keeps the ONNX independent of where the file lives); else a
    private, path-derived name that cannot shadow another module."""
    stem = path.stem
    if stem.isidentifier():
        existing = sys.modules.get(stem)
        if existing is not None:
            f = getattr(existing, "__file__", None)
            if f and Path(f).resolve() == path:
                return stem
        else:
            try:
                spec = importlib.util.find_spec(stem)
            except (ImportError, ValueError):
                spec = None
            if spec is None or (spec.origin and Path(spec.origin).resolve() == path):
                return stem
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    return f"_leapp_lab_model_{stem}_{digest}"


def model_source(obj: Any, source: bytes | None = None) -> ModelSource:
    """``source``: with a path, the bytes to execute as that file (``load_module``)."""
    if isinstance(obj, (str, os.PathLike)):
        path, data = (Path(obj).resolve(), source) if source is not None else read_source(obj)
        module = load_module(path, data)
        src = _from_namespace(vars(module), str(Path(obj)), path.parent)
        src.file, src.sha256 = path, source_digest(data)
        package = _package_of(path) if "." in module.__name__ else None
        src.import_dirs = [str(path.parent)] + ([str(package[1])] if package else [])
        return src
    if isinstance(obj, types.ModuleType):
        f = getattr(obj, "__file__", None)
        return _with_file(_from_namespace(vars(obj), f or obj.__name__, Path(f).resolve().parent if f else None), f)
    if isinstance(obj, dict):
        label = obj.get("__name__")     # the %%leapp_prepare cell names itself; else <namespace>
        return _from_namespace(obj, label if isinstance(label, str) else "<namespace>", None)
    f = getattr(obj, "__file__", None)
    if isinstance(f, str):
        return _with_file(_from_namespace(vars(obj), f, Path(f).resolve().parent), f)
    return _from_namespace(vars(obj), f"<{type(obj).__name__}>", None)


def _with_file(src: ModelSource, f: str | None) -> ModelSource:
    """A module's source file and its digest as on disk now (what a later re-run would execute)."""
    if f:
        src.import_dirs = [str(Path(f).resolve().parent)]
    if f and Path(f).suffix == ".py" and Path(f).is_file():
        try:
            path, data = read_source(f)
            src.file, src.sha256 = path, source_digest(data)
        except PrepareError:
            pass
    return src


def _user_call(label: str, what: str, fn: Callable[[], Any]) -> Any:
    """Call the user's ``fn``; its exceptions (and sys.exit()) become a PrepareError naming it."""
    try:
        return fn()
    except PrepareError:
        raise
    except SystemExit as exc:
        raise UserExit(f"{label}: {what} called sys.exit({exc.code!r}); prepare needs it to "
                           f"return") from None
    except Exception as exc:
        msg = str(exc).strip().splitlines()
        raise PrepareError(f"{label}: {what} raised {type(exc).__name__}: "
                           f"{msg[0][:300] if msg else ''}") from exc


def _seeded(fn: Callable[[], Any]) -> Callable[[], Any]:
    def call() -> Any:
        torch.manual_seed(SEED)
        return fn()
    return call


def _from_namespace(ns: dict[str, Any], label: str, base: Path | None) -> ModelSource:
    if "Model" in ns:
        factory = ns["Model"]
        if not callable(factory):
            raise PrepareError(f"{label}: Model must be an nn.Module class or a zero-argument factory")

        def make() -> nn.Module:
            torch.manual_seed(SEED)
            try:
                m = _user_call(label, "Model()", factory)
            except PrepareError as exc:
                if isinstance(exc.__cause__, TypeError):
                    raise PrepareError(f"{label}: Model() must take no arguments "
                                       f"({exc.__cause__})") from exc.__cause__
                raise
            if not isinstance(m, nn.Module):
                raise PrepareError(f"{label}: Model() returned {type(m).__name__}, not an nn.Module")
            return m.eval()
    elif isinstance(ns.get("model"), nn.Module):
        instance = ns["model"]

        def make() -> nn.Module:
            return instance.eval()
    else:
        raise PrepareError(f"{label}: defines no Model (an nn.Module class or a zero-argument factory); "
                           f"add `Model = MyNet` or `def Model(): return MyNet(...)`")

    fn_name = "samples"
    if callable(ns.get("get_samples")):
        samples_fn = _seeded(ns["get_samples"])
        fn_name = "get_samples()"
    elif callable(ns.get("get_fwd_args")):
        fwd = ns["get_fwd_args"]
        fn_name = "get_fwd_args()"
        samples_fn = _seeded(lambda: [fwd()])
    elif "samples" in ns:
        samples_fn = lambda: list(ns["samples"])  # noqa: E731
    elif "args" in ns:
        samples_fn = lambda: [ns["args"]]  # noqa: E731
    else:
        raise PrepareError(f"{label}: defines no get_fwd_args() (nor get_samples()); add `def get_fwd_args(): "
                           f"return (torch.randn(1, 8),)` returning the forward arguments as a tuple")

    def samples() -> list[tuple]:
        raw = _user_call(label, fn_name, samples_fn)
        if raw is None or isinstance(raw, (str, bytes, dict, torch.Tensor)) or not hasattr(raw, "__iter__"):
            raise PrepareError(f"{label}: {fn_name} returned {type(raw).__name__}; it must return a list "
                               f"of samples, each a tuple of forward arguments")
        out = []
        for i, s in enumerate(list(raw)):
            if isinstance(s, torch.Tensor):
                s = (s,)
            if not isinstance(s, (tuple, list)):
                what = ("returned" if fn_name == "get_fwd_args()" else f"gave, as sample {i},")
                raise PrepareError(f"{label}: {fn_name} {what} a {type(s).__name__}; each sample must be "
                                   f"a tuple of forward arguments")
            out.append(tuple(s))
        if not out:
            raise PrepareError(f"{label}: get_samples() returned no samples")
        return out

    opts = ns.get("get_ort_session_options")
    table = ns.get("get_custom_translation_table")
    return ModelSource(label, base, make, samples, opts if callable(opts) else None,
                       table if callable(table) else None, namespace=ns)

"""onnxruntime sessions for the ``ort*`` engines: options (custom-op library), loading with errors
that name the op, offline graph optimisation, kernel counts, and the runner."""
from __future__ import annotations

import collections
import functools
import importlib.util
import os
import re
import sys
from pathlib import Path

import onnx

from leapp_lab.egress import quiet_sessions
from leapp_lab.onnxio.split import EXTERNAL_MIN_BYTES
from leapp_lab.onnxio.manifest import IDENTITY_PREFIX as TAP_NODE_PREFIX

from .base import CompileError, Runner

_DEFAULT_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")
#: threads per onnxruntime session (default: onnxruntime's, one per core); a sweep's process pool
#: sets it in its workers so that N parallel builds do not each take every core
ENV_THREADS = "LEAPP_LAB_ORT_THREADS"


def session_options(optimize: bool, optimized_path: Path | None = None, spin: bool = True,
                    external_folder: Path | None = None, optimized_data: str | None = None):
    """``spin=False``: idle intra-op threads sleep instead of spinning (for a session that runs
    beside other work in this process: spinning threads took the CPU the scoring needed).
    ``external_folder``: where the external data of a model given as bytes lies.
    ``optimized_data``: the file (beside ``optimized_path``) that takes the optimised graph's
    weights, so that the graph is read back without them."""
    import onnxruntime as ort

    quiet_sessions(ort)   # before the process's first session (every session of leapp_lab's engines)
    so = ort.SessionOptions()
    if external_folder is not None:
        so.add_session_config_entry("session.model_external_initializers_file_folder_path", str(external_folder))
    if not spin:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.log_severity_level = 3
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED if optimize
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    # int8 QDQ stays int8 (S8S8) when onnxruntime fuses it: by default x86 builds rewrite it to
    # U8S8 (qdq_s8_to_u8), whose kernels on AVX2 CPUs without VNNI saturate their int16 pair sums.
    # Measured on conv_net (tests/models): output NRMSE 0.49 % as QDQ, 5.7 % fused U8S8 on an AVX2
    # EPYC, 0.49 % fused S8S8 -- the engine's error should be int8 rounding, not this CPU's kernel
    so.add_session_config_entry("session.qdqisint8allowed", "1")
    if optimized_path is not None:
        so.optimized_model_filepath = str(optimized_path)
        if optimized_data is not None:
            so.add_session_config_entry("session.optimized_model_external_initializers_file_name", optimized_data)
            so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes",
                                        str(EXTERNAL_MIN_BYTES))
    # one-shot sessions: a build runs each a handful of times, so onnxruntime's arena (which
    # keeps the largest activation set of any run) and memory-pattern planning buy nothing
    # and hold memory; measured in docs/verify.md ("Memory")
    so.enable_cpu_mem_arena = False
    threads = os.environ.get(ENV_THREADS, "").strip()
    if threads.isdigit() and int(threads) > 0:
        so.intra_op_num_threads = int(threads)
    lib = extensions_library()
    if lib is not None:
        try:  # custom-domain kernels of onnxruntime-extensions (and @onnx_op Python ops of this process)
            so.register_custom_ops_library(lib)
        except Exception:  # noqa: BLE001 - optional; a custom op it would have served fails below, by name
            pass
    return so


def extensions_library() -> str | None:
    """The onnxruntime-extensions custom-op library, or None when it is not installed. Found
    without importing the package when this process has not imported it (its ``__init__`` imports
    torch: a second, every first session of a verify --local paid it); when it is imported (a
    module defined ``@onnx_op`` ops), its own ``get_library_path``."""
    mod = sys.modules.get("onnxruntime_extensions")
    if mod is not None:
        try:
            return mod.get_library_path()
        except Exception:  # noqa: BLE001 - a broken install: no library, as when absent
            return None
    return _installed_extensions_library()


@functools.cache
def _installed_extensions_library() -> str | None:
    """The library file in the installed package's folder, without importing the package."""
    try:
        spec = importlib.util.find_spec("onnxruntime_extensions")
    except (ImportError, ValueError):
        return None
    for d in (spec.submodule_search_locations or []) if spec is not None else []:
        hits = [h for h in sorted(Path(d).glob("_extensions_pydll.*")) if h.suffix in (".so", ".pyd", ".dylib")]
        if hits:
            return str(hits[0])
    return None


def custom_ops(model: onnx.ModelProto) -> dict[str, str]:
    """``domain::OpType`` -> first node name, for every node outside the default ONNX domains."""
    out: dict[str, str] = {}
    for n in model.graph.node:
        if n.domain not in _DEFAULT_DOMAINS:
            out.setdefault(f"{n.domain}::{n.op_type}", n.name or "?")
    return out


def make_session(model: onnx.ModelProto | bytes | str | Path, *, optimize: bool,
                 optimized_path: Path | None = None, what: str = "model", spin: bool = True,
                 external_folder: Path | None = None, optimized_data: str | None = None):
    import onnxruntime as ort

    src = model.SerializeToString() if isinstance(model, onnx.ModelProto) else (
        str(model) if isinstance(model, Path) else model)
    try:
        return ort.InferenceSession(src, session_options(optimize, optimized_path, spin, external_folder,
                                                         optimized_data),
                                    providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - rethrown with the op named
        msg = str(exc)
        proto = model if isinstance(model, onnx.ModelProto) else None
        if proto is None:
            try:
                proto = onnx.load_from_string(src) if isinstance(src, bytes) else onnx.load(src)
            except Exception:  # noqa: BLE001
                proto = None
        ops = custom_ops(proto) if proto is not None else {}
        named = [k for k in ops if k.split("::")[1] in msg] or list(ops)
        if ops and re.search(r"implementation|not a registered|No Op registered|custom", msg, re.I):
            raise CompileError(
                f"onnxruntime cannot run custom op {', '.join(named)} (node {ops[named[0]]!r}) in {what}: "
                f"no kernel is registered for it. Register one with onnxruntime-extensions "
                f"(@onnx_op in a module imported before compile) or build a TensorRT engine with its "
                f"plugin. onnxruntime said: {msg.strip().splitlines()[-1][:300]}") from None
        raise CompileError(f"onnxruntime cannot load {what}: {msg.strip()[:600]}") from None


def optimize_offline(model: onnx.ModelProto, out: Path, data: str | None = None,
                     weights_dir: Path | None = None) -> onnx.ModelProto:
    """onnxruntime's own graph optimisation, saved (the engine graph). ``data``: the file beside
    ``out`` that takes its weights; the graph returned then references them there, unread.
    ``weights_dir``: where the external data of ``model`` itself lies."""
    make_session(model, optimize=True, optimized_path=out, what="the converted model",
                 external_folder=weights_dir, optimized_data=data)
    return onnx.load(str(out), load_external_data=data is None)


def count_ops(model: onnx.ModelProto) -> dict[str, int]:
    c = collections.Counter(
        (n.op_type if n.domain in _DEFAULT_DOMAINS else f"{n.domain}::{n.op_type}")
        for n in model.graph.node if not n.name.startswith(TAP_NODE_PREFIX))
    return dict(sorted(c.items()))


def session_kernels(model: onnx.ModelProto | Path, workdir: Path, tag: str, optimize: bool, keep: bool = False,
                    weights_dir: Path | None = None):
    """Op counts of the graph onnxruntime really runs for ``model`` (its optimized_model_filepath);
    ``keep``: ``(counts, the session)``, for a runner of the same artifact to run on (one session
    creation, not two)."""
    p = workdir / f".kernels-{tag}.onnx"
    sess = make_session(model, optimize=optimize, optimized_path=p, what=f"the {tag} engine",
                        external_folder=weights_dir, optimized_data=f".kernels-{tag}.data")
    counts = count_ops(onnx.load(str(p), load_external_data=False))
    return (counts, sess) if keep else counts


class OrtRunner(Runner):
    name = "onnxruntime"

    def __init__(self, artifact: Path | onnx.ModelProto | bytes, optimize: bool = False, spin: bool = True,
                 session=None):
        """``session``: one already made for this artifact with these options (used once)."""
        super().__init__()
        self.artifact = artifact
        self.optimize = optimize
        self.spin = spin
        self.session = None
        self._made = session

    def _activate_impl(self) -> None:
        if self._made is not None:
            self.session, self._made = self._made, None
            return
        self.session = make_session(self.artifact, optimize=self.optimize, what=str(
            self.artifact if isinstance(self.artifact, Path) else "the engine"), spin=self.spin)

    def _run_impl(self, feed, output_names):
        names = output_names or self.output_names
        try:
            vals = self.session.run(names, feed)
        except Exception as exc:  # noqa: BLE001
            raise CompileError(f"onnxruntime failed to run the engine: {str(exc).strip()[:600]}") from None
        return dict(zip(names, vals))

    def _deactivate_impl(self) -> None:
        self.session = None

    @property
    def input_names(self) -> list[str]:
        return [i.name for i in self.session.get_inputs()]

    @property
    def output_names(self) -> list[str]:
        return [o.name for o in self.session.get_outputs()]

"""LEAPP's process-wide state: reset it, capture its log, keep its console quiet.

LEAPP keeps one session per process in singletons (ExportManager, TracingLock, the 'leapp'
logger). A body that raises between ``start()`` and ``stop()`` leaves torch/numpy patched,
``torch.jit`` disabled and a node "tracing" forever (notes §1, §10). ``hard_reset`` is the tested
recovery recipe from the notes.
"""
from __future__ import annotations

import contextlib
import logging
import warnings
from dataclasses import dataclass

from leapp_lab.model.messages import strip_ansi
from leapp_lab.model.trace import LogRecord

_LEVEL_NAMES = {10: "DEBUG", 20: "INFO", 25: "SECTION", 30: "WARNING", 31: "SYSTEM", 40: "ERROR",
                41: "FATAL", 50: "CRITICAL"}
FATAL = 41


def manager():
    import leapp
    return leapp.ExportManager()


def session_open() -> bool:
    from leapp.export_manager import ExportManager
    return bool(ExportManager.is_interpret_graph_enabled())


def hard_reset() -> None:
    """Bring LEAPP back to its import-time state without restarting the process.

    Patches removed (torch.tensor/np.array restored, torch.jit enabled), no node left tracing,
    tensors promoted in place by a dead trace reusable (their node is marked captured).
    """
    from leapp.export_manager import ExportManager
    from leapp.utils.tracing_lock import TracingLock

    mgr = manager()
    TracingLock().reset()
    for node in list(mgr.get_nodes().values()):
        tracker = getattr(node, "_buffer_tracker", None)
        if tracker is not None:
            with contextlib.suppress(Exception):
                tracker.restore()           # real buffers back into the nn.Modules
        node._model_captured = True         # tensors promoted into this node become inactive
    ExportManager.set_interpret_graph(False)
    if mgr.patcher.installed:
        mgr.patcher.uninstall()             # restores torch/numpy functions, torch.jit enabled
    mgr.reset_nodes()


class LogCapture(logging.Handler):
    """Keeps every LEAPP record (DEBUG included), ANSI-free, with the [SECTION] it falls in.

    Must be inserted at index 0 of the 'leapp' logger *after* ``leapp.start()`` (start() drops all
    handlers; the console formatter mutates records, so we must see them first) — notes §9.
    """

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[LogRecord] = []
        self.section: str | None = None
        self._propagate: bool | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = strip_ansi(record.getMessage())
        except Exception:  # a record whose args do not format: keep the raw text
            msg = strip_ansi(str(record.msg))
        level = _LEVEL_NAMES.get(record.levelno) or strip_ansi(record.levelname)
        if record.levelno == 25:
            self.section = msg.strip()
            msg = msg.rstrip("\n")
        self.records.append(LogRecord(level=level, levelno=int(record.levelno), message=msg,
                                      section=self.section))

    def attach(self) -> None:
        lg = logging.getLogger("leapp")
        if self not in lg.handlers:
            lg.handlers.insert(0, self)
        # LEAPP's logger is DEBUG and propagates. Once anything has called logging.basicConfig()
        # (onnxruntime's quantize_static does, through logging.warning), every LEAPP record, FX
        # dumps included, is printed again by the root handler: a notebook cell drowns in DEBUG
        # lines. LEAPP's own console handler, log.txt and this capture keep everything.
        if self._propagate is None:
            self._propagate = lg.propagate
            lg.propagate = False

    def detach(self) -> None:
        lg = logging.getLogger("leapp")
        lg.removeHandler(self)
        if self._propagate is not None:
            lg.propagate = self._propagate
            self._propagate = None

    def fatal_messages(self) -> list[str]:
        return [r.message for r in self.records if r.levelno == FATAL]


def _drop(record: logging.LogRecord) -> bool:
    return False


def quiet_console() -> None:
    """Silence LEAPP's console handler for this session (log.txt and LogCapture keep everything).

    A filter rather than a level: ``compile_graph(verbose=...)`` resets the level.
    """
    from leapp.utils.logging import _get_logger
    h = _get_logger().console_handler
    if h is not None and _drop not in h.filters:
        h.addFilter(_drop)


def loud_console() -> None:
    from leapp.utils.logging import _get_logger
    h = _get_logger().console_handler
    if h is not None:
        h.removeFilter(_drop)


def flush_file_log() -> None:
    from leapp.utils.logging import _get_logger
    fh = getattr(_get_logger(), "file_handler", None)
    if fh is not None:
        with contextlib.suppress(Exception):
            fh.flush()


@dataclass
class _Saved:
    logger: logging.Logger
    level: int


@contextlib.contextmanager
def exporter_noise_suppressed(enabled: bool = True):
    """Hide torch/onnx deprecation chatter and 'torchvision is not installed' lines while exporting."""
    if not enabled:
        yield
        return
    saved = []
    for name in ("torch.onnx._internal.exporter._registration", "torch.onnx"):
        lg = logging.getLogger(name)
        saved.append(_Saved(lg, lg.level))
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        for s in saved:
            s.logger.setLevel(s.level)

"""SIGTERM handled like Ctrl-C (docs/safety.md, "The signal rule").

A CI job that times out, ``timeout``, ``kill`` and a container stop send SIGTERM, not SIGINT. With
Python's default the process dies on the spot: no ``finally`` runs, so a sweep's pool workers, the
fork server and the resource tracker live on holding the caller's stdout/stderr (a CI step waiting
for the output hangs), and ``runs/.tmp-*``, ``.NAME.tmp-*``, ``repair/<id>/`` and ``pymp-*`` stay
behind. :func:`terminate_as_interrupt` makes SIGTERM raise :class:`Terminated`, a
``KeyboardInterrupt``: every cleanup written for Ctrl-C (staged writes, run folders, the pool's
``_stop_workers``, archive extraction folders, multiprocessing's atexit) runs for it as well, and
the CLI exits 143 (128 + SIGTERM), as a process killed by it would.

A signal is also *recorded* (:func:`received`): a library that turns the exception into another
one (onnxruntime's native module initialiser makes a Ctrl-C during ``import onnxruntime`` an
``ImportError``) or swallows it cannot make the command exit as if nothing happened, and a commit
(:func:`commit_guard`) refuses to go ahead after one.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

#: the exit status of a command stopped by SIGTERM (128 + 15, what a shell reports for it)
EXIT_TERMINATED = 128 + signal.SIGTERM


#: the exit status of a command stopped by Ctrl-C (128 + SIGINT)
EXIT_INTERRUPTED = 128 + signal.SIGINT

#: the signals that reached the handlers of :func:`terminate_as_interrupt` since it was entered
_received: list[int] = []


class Terminated(KeyboardInterrupt):
    """SIGTERM reached the process: unwound exactly like Ctrl-C, exit :data:`EXIT_TERMINATED`."""


def received() -> int | None:
    """The first signal (SIGINT or SIGTERM) that reached the command since it started, whatever
    became of its exception; None when none did."""
    return _received[0] if _received else None


def exit_status(sig: int) -> int:
    """The exit status of a command stopped by ``sig``: 143 for SIGTERM, 130 for Ctrl-C."""
    return EXIT_TERMINATED if sig == signal.SIGTERM else EXIT_INTERRUPTED


def interruption(sig: int) -> KeyboardInterrupt:
    """The exception a command unwinds with for ``sig``."""
    return Terminated(f"terminated (signal {sig})") if sig == signal.SIGTERM else KeyboardInterrupt()


def _raise_interrupt(sig: int, frame) -> None:
    _received.append(sig)
    raise KeyboardInterrupt


def _raise_terminated(sig: int, frame) -> None:
    _received.append(sig)
    # one unwinding is enough: a second SIGTERM (a CI runner that signals twice, or the whole
    # process group) must not cut the cleanup of the first short. Not SIG_IGN: children started
    # during the cleanup would inherit an ignored SIGTERM across exec.
    signal.signal(signal.SIGTERM, lambda s, f: None)
    raise Terminated(f"terminated (signal {sig})")


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """In the block, SIGTERM raises :class:`Terminated` in the main thread, and both it and Ctrl-C
    are recorded (:func:`received`, for the block only); the previous handlers are put back after
    it. Ctrl-C keeps a handler someone else installed (a notebook kernel's). Outside the main
    thread (where no handler can be set) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received.clear()
    old = {signal.SIGTERM: signal.signal(signal.SIGTERM, _raise_terminated)}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        old[signal.SIGINT] = signal.signal(signal.SIGINT, _raise_interrupt)
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        _received.clear()     # what follows in this process (a notebook, a test) starts afresh


def check_not_interrupted() -> None:
    """Raise the interruption of a signal that reached the command earlier and was swallowed or
    turned into another exception on the way (see the module doc): nothing commits after one."""
    sig = received()
    if sig is not None:
        raise interruption(sig)


#: staged blocks open (:func:`transaction`), the handlers a commit inside one swapped for holding,
#: and the signals held until the outermost block ends
_open = [0]
_saved: dict[int, object] = {}
_held: list[int] = []


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def transaction() -> Iterator[None]:
    """A block whose commits belong together (``staged``: the files renamed at its end, and the
    run folders committed inside it). Once one of them has committed (:func:`commit_guard`), a
    Ctrl-C or SIGTERM is held back until the block ends, so the others commit too."""
    if not _main_thread():
        yield
        return
    _open[0] += 1
    try:
        yield
    finally:
        _open[0] -= 1
        if _open[0] == 0 and _saved:
            for s, handler in _saved.items():
                signal.signal(s, handler)
            _saved.clear()
            if _held:
                sig = _held[0]
                _held.clear()
                signal.raise_signal(sig)    # to the handler that was in place: raised here, at once


@contextlib.contextmanager
def commit_guard() -> Iterator[None]:
    """The renames that commit outputs, as one step: refused when a signal already reached the
    command (:func:`check_not_interrupted`), and a Ctrl-C or SIGTERM that lands during them is
    delivered once they are done (inside a :func:`transaction`: once it ends), so outputs are
    never half old and half new."""
    check_not_interrupted()
    if not _main_thread() or _saved:
        yield
        return
    if _open[0] == 0:
        with signals_deferred():
            yield
        return
    _saved.update({s: signal.signal(s, lambda sig, frame: _held.append(sig))
                   for s in (signal.SIGINT, signal.SIGTERM)})
    yield


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM held back for a few statements, then delivered as they would have been.

    For creating a temporary folder and recording it for its cleanup as one step: a signal that
    lands after ``tempfile.mkdtemp``'s ``mkdir`` but before its result is assigned unwinds with the
    folder made and nobody holding its name, so no ``finally`` can remove it. Python runs signal
    handlers in the main thread, so swapping the Python-level handlers is enough (blocking the
    signal would not be: the kernel may deliver it to any other thread). Outside the main thread
    it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    sigs = (signal.SIGINT, signal.SIGTERM)
    old = {s: signal.signal(s, lambda sig, frame: held.append(sig)) for s in sigs}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        if held:
            signal.raise_signal(held[0])    # to the handler that was in place: raised here, at once

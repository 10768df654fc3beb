"""SIGTERM handled like Ctrl-C (docs/safety.md, "The signal rule").

A CI job that times out, ``timeout``, ``kill`` and a container stop send SIGTERM, not SIGINT. With
Python's default the process dies on the spot: no ``finally`` runs, so a sweep's pool workers, the
fork server and the resource tracker live on holding the caller's stdout/stderr (a CI step waiting
for the output hangs), and ``runs/.tmp-*``, ``.NAME.tmp-*``, ``repair/<id>/`` and ``pymp-*`` stay
behind. :func:`terminate_as_interrupt` makes SIGTERM raise :class:`Terminated`, a
``KeyboardInterrupt``: every cleanup written for Ctrl-C (staged writes, run folders, the pool's
``_stop_workers``, archive extraction folders, multiprocessing's atexit) runs for it as well, and
the CLI exits 143 (128 + SIGTERM), as a process killed by it would.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

#: the exit status of a command stopped by SIGTERM (128 + 15, what a shell reports for it)
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM reached the process: unwound exactly like Ctrl-C, exit :data:`EXIT_TERMINATED`."""


def _raise_terminated(sig: int, frame) -> None:
    # one unwinding is enough: a second SIGTERM (a CI runner that signals twice, or the whole
    # process group) must not cut the cleanup of the first short. Not SIG_IGN: children started
    # during the cleanup would inherit an ignored SIGTERM across exec.
    signal.signal(signal.SIGTERM, lambda s, f: None)
    raise Terminated(f"terminated (signal {sig})")


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """In the block, SIGTERM raises :class:`Terminated` in the main thread; the previous handler is
    put back after it. Outside the main thread (where no handler can be set) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


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

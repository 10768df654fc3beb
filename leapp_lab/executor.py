"""The one executor every sweep runs through (``concurrent.futures.Executor``).

``sweep_executor(jobs=None, dask=None)`` yields ``(executor, info)``:

* ``dask`` (an address such as ``tcp://HOST:8786``, or a ``distributed.Client``), else the
  ``LEAPP_LAB_DASK`` environment variable: the Dask cluster's executor
  (``distributed.Client(address).get_executor()``), one task per worker thread;
* else ``jobs`` > 1 (default: the CPU count, at most 8): a local process pool;
* ``jobs`` = 1: in this process, one task after the other (no pickling, easiest to debug).

What is submitted must be a picklable top-level function of plain arguments (paths, names,
numbers) that reads its inputs from disk, writes its own folder and returns a small result: so the
same call runs in a thread, a local process or on another machine of the cluster (which must see
the same paths). ``leapp_lab.steps.repair_tasks`` holds those functions.
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any, Iterator

ENV_DASK = "LEAPP_LAB_DASK"
MAX_DEFAULT_JOBS = 8
#: seconds a stopped sweep gives each pool worker to unwind its build before it is killed
STOP_GRACE_S = 10


class ExecutorUnavailable(RuntimeError):
    """The executor asked for cannot be made (distributed not installed, scheduler unreachable)."""


@dataclass
class ExecutorInfo:
    """What a sweep ran on: ``kind`` inline | process | dask | the class name of an executor the
    caller passed; ``workers``: how many tasks run at once; ``address``: the Dask scheduler."""
    kind: str
    workers: int
    address: str | None = None


class InlineExecutor(cf.Executor):
    """Runs each task in the calling thread when it is submitted (``jobs=1``)."""

    def submit(self, fn, /, *args: Any, **kwargs: Any) -> cf.Future:
        f: cf.Future = cf.Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - delivered through the future, as a pool would
            f.set_exception(exc)
        return f


def default_jobs() -> int:
    return max(1, min(MAX_DEFAULT_JOBS, os.cpu_count() or 1))


def dask_address(dask: Any = None) -> Any:
    """The Dask scheduler to use: ``dask`` if given, else $LEAPP_LAB_DASK, else None."""
    if dask is not None and dask != "":
        return dask
    return os.environ.get(ENV_DASK) or None


#: imported once by the fork server, so that each pool worker starts as a cheap fork of it instead
#: of importing onnxruntime (and torch, which onnxruntime-extensions imports) again: seconds each
PRELOAD = ("leapp_lab.steps.repair_tasks", "leapp_lab.engines.onnxrt", "leapp_lab.steps.verify",
           "onnxruntime.quantization", "onnxruntime_extensions")


#: the fork server listens on an AF_UNIX socket, TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX, whose path
#: holds at most 107 bytes (Linux); a longer one failed every pool with "AF_UNIX path too long"
SOCKET_PATH_MAX = 107


#: a worker died: the usual cause is a script without a main guard (a pool imports __main__ in
#: its workers, which ran the script, and its repair, again), said instead of a bare BrokenProcessPool
BROKEN_POOL = ("a worker process of the sweep's process pool died. Most often the script that calls "
               "leapp_lab.repair has no `if __name__ == \"__main__\":` guard: every worker imports it, "
               "which runs it again; guard its entry point, or pass jobs=1 (--jobs 1) to build in this "
               "process. Otherwise a worker was killed (out of memory?)")


def _process_context():
    # not fork: the parent may hold threads (onnxruntime, torch, a Jupyter kernel) that a forked
    # child would inherit in an undefined state; the fork server is a fresh single-threaded process.
    # spawn (each worker imports what it needs itself: slower to start) where there is no fork
    # server, or where TMPDIR is too long a path for its socket
    methods = multiprocessing.get_all_start_methods()
    listener = os.path.join(tempfile.gettempdir(), "pymp-XXXXXXXX", "listener-XXXXXXXX")
    if "forkserver" not in methods or len(os.fsencode(listener)) > SOCKET_PATH_MAX:
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["__main__", *PRELOAD])   # no effect once the server runs
    return ctx


@contextlib.contextmanager
def sweep_executor(jobs: int | None = None, dask: Any = None, executor: cf.Executor | None = None,
                   work: int | None = None) -> Iterator[tuple[cf.Executor, ExecutorInfo]]:
    """``(executor, info)`` for a sweep (module doc); shut down (and a client we opened closed) on
    exit. ``executor``: use this one as is (the caller owns it; ``jobs`` says how many it runs
    at once, default 1). ``work``: the most tasks the sweep ever has at once; a local pool starts
    no more workers than that (``--jobs 1000`` for four builds a round started 121 processes that
    had nothing to do), and one task at a time runs in this process."""
    if executor is not None:
        yield executor, ExecutorInfo(type(executor).__name__, int(jobs or 1))
        return
    addr = dask_address(dask)
    if addr is not None:
        with _dask(addr) as pair:
            yield pair
        return
    n = default_jobs() if jobs is None else int(jobs)
    if n < 1:
        raise ValueError(f"jobs={n}: must be >= 1 (1 runs the builds in this process)")
    if work is not None:
        n = max(1, min(n, int(work)))
    if n == 1:
        yield InlineExecutor(), ExecutorInfo("inline", 1)
        return
    threads = max(1, (os.cpu_count() or 1) // n)
    # the workers' temporary folder: what a build's libraries leave there when it is stopped
    # mid-write (onnxruntime's ort.quant.*, by a SIGTERM or a kill) goes with the pool
    from leapp_lab.signals import signals_deferred
    scratch = None
    try:
        with signals_deferred():    # a Ctrl-C cannot land between the mkdir and the name's keeper
            scratch = tempfile.mkdtemp(prefix="leapp-lab-pool-")
        with _Pool(max_workers=n, mp_context=_process_context(),
                   initializer=_worker_init, initargs=(threads, scratch)) as ex:
            try:
                _start_workers(ex, n)
                yield ex, ExecutorInfo("process", n)
            except BaseException as exc:
                _stop_workers(ex)
                if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, or SIGTERM (leapp_lab.signals)
                    _stop_fork_server()
                if isinstance(exc, cf.process.BrokenProcessPool):
                    raise cf.process.BrokenProcessPool(BROKEN_POOL) from exc
                raise
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


class _Pool(cf.ProcessPoolExecutor):
    """The local process pool: each task runs through :func:`_task`, so that a worker whose task a
    SIGTERM unwound ends there instead of going back to the pool's queue (see :func:`_unwind`)."""

    def submit(self, fn, /, *args: Any, **kwargs: Any) -> cf.Future:
        return super().submit(_task, fn, *args, **kwargs)


#: set in a pool worker by its first SIGTERM (:func:`_unwind`)
_terminating = False


def _task(fn, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    finally:
        if _terminating:
            # unwound by SIGTERM (its folders removed): end the worker now. Back at the queue it
            # would wait for ever, SIGTERM ignored, holding the caller's stdout/stderr, when the
            # whole process group was signalled and the sweep's process is gone
            os._exit(128 + 15)


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM (where a Python handler is set: the CLI's, ``leapp_lab.signals``) are
    held back in the block and delivered to their handlers right after it."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = {s: signal.signal(s, lambda sig, frame: got.append(sig))
           for s in (signal.SIGINT, signal.SIGTERM) if callable(signal.getsignal(s))}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    for s in dict.fromkeys(got):
        old[s](s, None)             # raises KeyboardInterrupt (Ctrl-C) or Terminated (SIGTERM)


def _start_workers(ex: cf.ProcessPoolExecutor, n: int) -> None:
    """Start every worker of the pool now, with Ctrl-C (and SIGTERM) held back until they run. The
    pool forks a worker on demand, at a submit; a Ctrl-C that lands while it does leaves a worker
    the pool does not know, blocked on the pool's queue for ever, and the pool's shutdown waiting
    on it."""
    with _sigint_held():
        cf.wait([ex.submit(os.getpid) for _ in range(n)])


def _stop_workers(ex: cf.ProcessPoolExecutor) -> None:
    """The sweep stopped (Ctrl-C, an error): drop the builds not started and stop the running ones
    now, before the caller removes their folders (a build can take minutes; waiting for it would
    keep writing into a folder about to go)."""
    terminate = getattr(ex, "terminate_workers", None)      # Python 3.14+
    if terminate is not None:
        terminate()
        return
    procs = list((getattr(ex, "_processes", None) or {}).values())   # shutdown() forgets them
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()           # a build unwinds (_worker_init): its temporary folders go
    for p in procs:
        p.join(timeout=STOP_GRACE_S)
    for p in procs:
        if p.is_alive():            # stuck in native code: no more waiting
            p.kill()
            p.join(timeout=STOP_GRACE_S)


def _stop_fork_server() -> None:
    """End the fork server the pool's workers were forked from, now: left to notice that this
    process is gone, it first unloads onnxruntime and torch (seconds), holding the caller's
    stdout/stderr all the while. A later pool in this process starts a new one (multiprocessing
    restarts a fork server it finds dead)."""
    import signal
    from multiprocessing import forkserver
    pid = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
    if pid:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)     # it holds nothing of ours to clean up


def _profiler(dask_worker, on: bool) -> bool:
    """Start or stop a Dask worker's statistical profiler; returns whether it was running."""
    pc = dask_worker.periodic_callbacks.get("profile")
    if pc is None:
        return False
    was = pc.is_running()
    pc.start() if on else pc.stop()
    return was


def _pause_profilers(client) -> list[str]:
    """Stop the workers' statistical profilers for the sweep: sampling every thread's stack every
    10 ms made these Python-heavy builds ~3x slower (measured on a LocalCluster). Returns the workers
    whose profiler ran, to restart them afterwards."""
    try:
        return [w for w, was in client.run(_profiler, on=False).items() if was]
    except Exception:  # noqa: BLE001 - only a speed-up
        return []


def _resume_profilers(client, workers: list[str]) -> None:
    if workers:
        try:
            client.run(_profiler, on=True, workers=workers)
        except Exception:  # noqa: BLE001 - a worker that left
            pass


def _preload() -> bool:
    """Import the sweep's modules (leapp_lab first: its import turns onnxruntime's telemetry off
    before onnxruntime loads, leapp_lab.egress). Returns whether telemetry is off in this process:
    False on a Dask worker that had loaded onnxruntime, telemetry on, before."""
    import importlib

    from leapp_lab import egress
    for mod in PRELOAD:
        try:
            importlib.import_module(mod)
        except ImportError:
            pass
    return not egress.ort_loaded_first


def _worker_init(threads: int, scratch: str | None = None) -> None:
    """A pool worker's onnxruntime sessions share the cores with the other workers (unless the
    user set LEAPP_LAB_ORT_THREADS). A terminal's Ctrl-C reaches the workers too: they ignore it
    and the sweep's process stops them (``_stop_workers``, SIGTERM); a worker that died of it while
    taking or returning a task could leave the pool's queue locked, and the sweep hanging.
    ``scratch``: the worker's temporary folder (TMPDIR), removed with the pool."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _unwind)
    os.environ.setdefault("LEAPP_LAB_ORT_THREADS", str(threads))
    if scratch is not None:
        import tempfile
        os.environ["TMPDIR"] = tempfile.tempdir = scratch


def _unwind(sig: int, frame: Any) -> None:
    """SIGTERM in a pool worker (``_stop_workers``, or a SIGTERM to the whole process group): unwind
    the running build, so that its folders and onnxruntime's temporary files are removed, then end
    (:func:`_task`; an idle worker ends at once). Further SIGTERMs (the pool's own, once it sees a
    worker gone) would cut that cleanup short: they are ignored; a worker that has not ended after
    STOP_GRACE_S (stuck in native code) is killed, by ``_stop_workers`` or, when the sweep's process
    is gone too, by itself."""
    import signal
    import threading
    global _terminating
    _terminating = True
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    last = threading.Timer(STOP_GRACE_S, os._exit, (128 + sig,))
    last.daemon = True              # never what keeps a worker that ended in time from exiting
    last.start()
    raise SystemExit(128 + sig)


#: seconds a sweep waits for a Dask scheduler's port to answer (as distributed.Client's timeout)
CONNECT_TIMEOUT_S = 20


def _check_address(addr: str) -> None:
    """A malformed address, or a tcp/tls scheduler whose port does not answer, is said before a
    ``distributed.Client`` is made: a Client whose connection failed lingers, and closing it (at the
    latest when the process exits) waits up to 40 s more."""
    from distributed.comm import get_address_host_port, parse_address
    from distributed.comm.registry import get_backend
    try:
        scheme, _ = parse_address(addr)
        get_backend(scheme)
        host, port = get_address_host_port(addr) if scheme in ("tcp", "tls") else (None, None)
    except ValueError as exc:
        raise ExecutorUnavailable(f"--dask {addr!r} is not a Dask scheduler address ({exc}); give "
                                  f"tcp://HOST:PORT (the scheduler's default port is 8786)") from None
    if host is None:
        return
    import socket
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ExecutorUnavailable(f"cannot reach the Dask scheduler at {addr!r} ({exc.strerror or exc}); "
                                  f"is `dask scheduler` running there and the address right?") from None


@contextlib.contextmanager
def _dask(addr: Any) -> Iterator[tuple[cf.Executor, ExecutorInfo]]:
    try:
        import distributed
    except ImportError:
        raise ExecutorUnavailable(
            f"a Dask cluster was asked for ({addr!r}, from --dask or ${ENV_DASK}) but the 'distributed' "
            "package is not installed: pip install 'leapp-lab[dask]' (or unset it to use a local "
            "process pool)") from None
    own = not isinstance(addr, distributed.Client)
    if own:
        _check_address(str(addr))
        try:
            client = distributed.Client(addr, timeout=f"{CONNECT_TIMEOUT_S}s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise ExecutorUnavailable(f"cannot reach the Dask scheduler at {addr!r} ({type(exc).__name__}: "
                                      f"{exc}); is `dask scheduler` running there and the address right?"
                                      ) from None
    else:
        client = addr
    try:
        info = client.scheduler_info()
        workers = sum(int(w.get("nthreads", 1) or 1) for w in info.get("workers", {}).values())
        address = getattr(client.scheduler, "address", None) or str(addr)
        try:   # every worker imports onnxruntime & co. now, all at once, not at its first build
            loud = sorted(w for w, quiet in client.run(_preload).items() if not quiet)
        except Exception:  # noqa: BLE001 - a worker that cannot import them fails its builds, by name
            loud = []
        if loud:
            import warnings
            warnings.warn(f"Dask worker(s) {', '.join(loud)} loaded onnxruntime before leapp_lab with its "
                          f"telemetry on: they send events to Microsoft. Start the workers with "
                          f"ORT_DISABLE_TELEMETRY=1 in their environment (docs/safety.md, 'No egress').",
                          RuntimeWarning, stacklevel=3)
        paused = _pause_profilers(client)
        ex = client.get_executor(pure=False)
        try:
            yield ex, ExecutorInfo("dask", max(1, workers), address)
        finally:
            ex.shutdown(wait=True)
            _resume_profilers(client, paused)
    finally:
        if own:
            client.close()

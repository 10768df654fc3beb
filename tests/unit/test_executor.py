"""leapp_lab.executor: one concurrent.futures executor for sweeps (in process, process pool, Dask)."""
import concurrent.futures as cf
import os

import pytest

from leapp_lab.executor import ENV_DASK, InlineExecutor, dask_address, sweep_executor


def _pid_and_threads(x):
    return x * x, os.getpid(), os.environ.get("LEAPP_LAB_ORT_THREADS")


def _boom(x):
    raise ValueError(f"bad {x}")


def test_inline_runs_in_this_process_and_delivers_exceptions_through_the_future():
    with sweep_executor(jobs=1) as (ex, info):
        assert isinstance(ex, InlineExecutor) and info.kind == "inline" and info.workers == 1
        f = ex.submit(_pid_and_threads, 3)
        assert f.done() and f.result()[:2] == (9, os.getpid())
        g = ex.submit(_boom, 1)
        with pytest.raises(ValueError, match="bad 1"):
            g.result()


def test_process_pool_runs_elsewhere_and_shares_the_cores(monkeypatch):
    monkeypatch.delenv("LEAPP_LAB_ORT_THREADS", raising=False)
    monkeypatch.delenv(ENV_DASK, raising=False)
    with sweep_executor(jobs=2) as (ex, info):
        assert info.kind == "process" and info.workers == 2
        res = [f.result() for f in [ex.submit(_pid_and_threads, i) for i in range(4)]]
        with pytest.raises(ValueError, match="bad 2"):
            ex.submit(_boom, 2).result()
    assert [r[0] for r in res] == [0, 1, 4, 9]
    assert all(r[1] != os.getpid() for r in res)
    assert {r[2] for r in res} == {str(max(1, (os.cpu_count() or 1) // 2))}


def test_a_given_executor_is_used_as_is():
    with cf.ThreadPoolExecutor(2) as pool:
        with sweep_executor(jobs=2, executor=pool) as (ex, info):
            assert ex is pool and info.kind == "ThreadPoolExecutor" and info.workers == 2
        assert ex.submit(_pid_and_threads, 2).result()[0] == 4      # not shut down: the caller owns it


def test_dask_address_argument_wins_over_the_environment(monkeypatch):
    monkeypatch.delenv(ENV_DASK, raising=False)
    assert dask_address() is None and dask_address("") is None
    monkeypatch.setenv(ENV_DASK, "tcp://env:8786")
    assert dask_address() == "tcp://env:8786"
    assert dask_address("tcp://arg:8786") == "tcp://arg:8786"


def test_bad_jobs_is_refused(monkeypatch):
    monkeypatch.delenv(ENV_DASK, raising=False)
    with pytest.raises(ValueError, match="jobs=0"):
        with sweep_executor(jobs=0):
            pass


def test_a_tmpdir_too_long_for_the_fork_servers_socket_runs_the_pool_by_spawn(tmp_path):
    """The fork server's AF_UNIX socket lives in TMPDIR; past 107 bytes of path every pool failed
    ("AF_UNIX path too long", an internal error): the pool then starts its workers by spawn."""
    import subprocess
    import sys
    long_tmp = tmp_path / ("t" * 90)
    long_tmp.mkdir()
    code = ("import os, multiprocessing\nfrom leapp_lab.executor import sweep_executor\n"
            "with sweep_executor(jobs=2) as (ex, info):\n"
            "    pids = {ex.submit(os.getpid).result() for _ in range(4)}\n"
            "print(info.kind, info.workers, os.getpid() not in pids, ex._mp_context.get_start_method())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, TMPDIR=str(long_tmp)))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["process", "2", "True", "spawn"]
    assert list(long_tmp.iterdir()) == []                # the pool's scratch folder went with it


def test_a_broken_pool_names_the_missing_main_guard(monkeypatch):
    """A script calling leapp_lab.repair at top level (as README's 'From Python' lines read) got a
    bare BrokenProcessPool: the fork server imports __main__, which ran the script again."""
    import leapp_lab.executor as exe

    class FakePool(cf.ThreadPoolExecutor):
        def __init__(self, max_workers, mp_context=None, initializer=None, initargs=()):
            super().__init__(max_workers)
    monkeypatch.setattr(exe, "_Pool", FakePool)
    monkeypatch.setattr(exe, "_start_workers", lambda ex, n: None)
    monkeypatch.setattr(exe, "_stop_workers", lambda ex: None)
    with pytest.raises(cf.process.BrokenProcessPool, match=r'if __name__ == "__main__":.*jobs=1'):
        with sweep_executor(jobs=2):
            raise cf.process.BrokenProcessPool("A child process terminated abruptly")

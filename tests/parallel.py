"""How the suite is split between pytest-xdist workers (``scripts/test.sh``: ``-n 2 --dist loadgroup``;
docs/contributing.md, "The test suite").

A unit of work goes to one worker as a whole, and the units start heaviest first:

- each test module is a unit, so its module fixtures and module-level caches (prepared models,
  executed notebooks) are built once;
- every browser test is in one unit ("browser"): one Chromium and one JupyterLab server in all;
- the tests that time a process against a bound, signal a running process pool or run one of the
  benchmarks (two pool workers each) are one unit ("timing"): they run one after another, never two
  at once (the other worker still runs its own unit beside them).

pytest-xdist's own ``xdist_group`` mark is not used: with pytest 9.2 its nodeid suffix no longer
reaches the scheduler (pytest-xdist 3.8), so the grouping lives in :class:`UnitScheduling`.
"""
from __future__ import annotations

#: modules of the "timing" unit (run one after another on one worker)
TIMING = (
    "tests/integration/test_safety_signals.py",        # SIGTERM to a pool sweep: pipes closed within 6 s
    "tests/integration/test_safety_interrupts.py",     # Ctrl-C / SIGTERM at exact points of prepare, compile
    "tests/integration/test_safety_new_commands.py",   # Ctrl-C into a pool sweep as it writes a build
    "tests/integration/test_safety_egress.py",         # a traced sweep of 20 s with two pool workers
    "tests/integration/test_safety_check_first.py",    # refusals within 60 s
    "tests/integration/test_safety_exits.py",          # exits within 30 s
    "tests/integration/test_safety_files.py",          # special files refused within 5 s each
    "tests/integration/test_repair.py",                # two-worker pool and Dask LocalCluster sweeps
    "tests/integration/test_repair_jobs.py",           # repair --jobs 1000: the pool's workers counted
    "tests/integration/test_bench_verify.py",          # the benchmarks: timings of fresh processes
    "tests/integration/test_bench_local.py",
    "tests/integration/test_bench_repair.py",          # one worker against two
    "tests/integration/test_bench_replay_engine.py",
    "tests/integration/test_bench_loop.py",
)

#: units that start first, heaviest first (measured with the suite on two workers; the rest follow
#: in collection order, which keeps the light unit tests for the end, to even the two workers out)
FIRST = ("browser", "timing", "tests/integration/test_notebooks.py", "tests/integration/test_hazards.py",
         "tests/integration/test_corpus.py",
         "tests/integration/test_safety_bounds.py", "tests/integration/test_node_engines.py",
         "tests/integration/test_verify_expected.py", "tests/integration/test_safety_exec.py",
         "tests/integration/test_safety_fx_graphs.py",
         "tests/integration/test_node_taps.py", "tests/integration/test_run_cli.py",
         "tests/unit/test_metrics_backends.py", "tests/integration/test_replay_taps.py",
         "tests/integration/test_prepare_from_trace.py", "tests/integration/test_safety_commit.py",
         "tests/integration/test_safety_inputs.py", "tests/integration/test_prepare_cache.py",
         "tests/integration/test_cache_stale.py")


def unit_of(nodeid: str) -> str:
    """The unit of work of a test (by its node id, ``path::name[params]``)."""
    path = nodeid.split("::", 1)[0]
    if path.startswith("tests/browser/") or path == "tests/integration/test_bench_graphs.py":
        return "browser"
    if path in TIMING:
        return "timing"
    return path


def order(items: list) -> None:
    """Sort ``items`` (in place) unit by unit, :data:`FIRST` first; within a unit, as collected."""
    rank = {u: i for i, u in enumerate(FIRST)}
    first_seen: dict[str, int] = {}
    for i, item in enumerate(items):
        first_seen.setdefault(unit_of(item.nodeid), i)
    pos = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda it: (rank.get(unit_of(it.nodeid), len(rank)), first_seen[unit_of(it.nodeid)],
                               pos[id(it)]))


def make_scheduler(config, log):
    """pytest-xdist's LoadScope scheduling with :func:`unit_of` as the scope, in collection order."""
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False      # keep the order of order(): heaviest units first
    return UnitScheduling(config, log)

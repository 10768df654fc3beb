"""``diff_stats`` by the numba kernel and by its numpy fallback: the same bits on every kind of input,
whatever the thread count; the backend is chosen by ``LEAPP_LAB_METRICS`` or by whether numba
imports; and the kernel's compile cache copes with a read-only install."""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from leapp_lab.numerics.backend import BACKEND_ENV, resolve_backend
from leapp_lab.numerics.metrics import diff_stats, diff_sums, diff_sums_rows, merge_sums

try:
    import numba  # noqa: F401
    NUMBA_ERR = None
except Exception as exc:  # noqa: BLE001
    NUMBA_ERR = f"numba is not importable here ({type(exc).__name__}: {exc})"
needs_numba = pytest.mark.skipif(NUMBA_ERR is not None, reason=NUMBA_ERR or "")
ROOT = Path(__file__).resolve().parents[2]


def _bits(st) -> dict:
    """Every field, floats by repr (so -0.0 != 0.0 and the last bit counts), histogram included."""
    return {f.name: repr(getattr(st, f.name)) for f in dataclasses.fields(st)}


def _cases():
    rng = np.random.default_rng(0)
    out = []
    for n in (0, 1, 15, 16, 17, 1000, 65_536, 65_537, 200_003):
        r = rng.standard_normal(n).astype(np.float32)
        out.append((f"f32-{n}", (r + rng.standard_normal(n).astype(np.float32) * 1e-2).astype(np.float32), r))
    x = rng.standard_normal(150_000) * np.exp(rng.uniform(-30, 30, 150_000))
    out.append(("f64-wide-range", x * (1 + 1e-7 * rng.standard_normal(x.size)), x))
    y, z = x.copy(), x.copy()
    y[::97], y[5::1001], z[3::501] = np.nan, np.inf, -np.inf
    out.append(("nonfinite", y, z))
    out.append(("all-nonfinite", np.full(1000, np.nan), np.full(1000, np.inf)))
    # the kernel counts bins every fused.SUB elements: a non-finite pair after some were counted,
    # and one in the last, partial step only
    w = x[:70_001].copy()
    w[9_000] = np.nan
    out.append(("nonfinite-late", w, x[:70_001]))
    v = x[:4_100].copy()
    v[-1] = np.inf
    out.append(("nonfinite-tail", v, x[:4_100]))
    with np.errstate(over="ignore"):
        out.append(("f16", (x * 1e-25).astype(np.float16), (x * 1.001e-25).astype(np.float16)))
        out.append(("f16-inf-nan", np.array([np.inf, np.nan, 1, 2], np.float16), np.ones(4, np.float16)))
    out.append(("int", rng.integers(-999, 999, 5000).astype(np.int32), rng.integers(-999, 999, 5000)))
    out.append(("uint64", rng.integers(0, 2**62, 5000, dtype=np.uint64) * 3, rng.integers(0, 2**63, 5000, dtype=np.uint64)))
    out.append(("bool", rng.random(5000) > 0.5, rng.random(5000) > 0.5))
    out.append(("zeros-signed", -np.zeros(100), np.zeros(100)))
    out.append(("overflowing-diff", np.array([1e308, 1.0, 2.0]), np.array([-1e308, 1.5, 2.0])))
    out.append(("subnormal", np.array([5e-324, 1e-310, 0.0]), np.array([0.0, 0.0, 1e-320])))
    out.append(("big-endian", np.arange(100, dtype=">f4"), np.arange(100, dtype="<f8") * 1.01))
    return out


@needs_numba
@pytest.mark.parametrize("rtol", [0.0, 1e-3])
@pytest.mark.parametrize("chunk", [5, 4096, 1 << 16])
def test_numba_and_numpy_agree_to_the_bit(rtol, chunk):
    for name, e, r in _cases():
        if chunk == 5:
            # blocks of 5: every case's first 20,000 pairs are 4,000 blocks, each partial in its lanes
            # (the kernel's many-block paths); the cases' sizes around 2^16 matter at chunk 2^16, and
            # numpy's fallback takes a Python step per block (21 s of the suite at full size)
            e, r = e[:20_000], r[:20_000]
        a = diff_stats(e, r, rtol=rtol, chunk=chunk, backend="numba")
        b = diff_stats(e, r, rtol=rtol, chunk=chunk, backend="numpy")
        assert _bits(a) == _bits(b), name


@pytest.mark.parametrize("backend", [pytest.param("numba", marks=needs_numba), "numpy"])
def test_thread_count_changes_no_bit(backend):
    rng = np.random.default_rng(1)
    r = rng.standard_normal(2_000_003) * np.exp(rng.uniform(-10, 10, 2_000_003))  # 31 blocks: 4 items
    e = r * (1 + 1e-6 * rng.standard_normal(r.size))
    want = _bits(diff_stats(e, r, rtol=1e-3, backend="numpy", threads=1))
    for t in (1, 2, 3, 8):
        assert _bits(diff_stats(e, r, rtol=1e-3, backend=backend, threads=t)) == want, t


@pytest.mark.parametrize("backend", [pytest.param("numba", marks=needs_numba), "numpy"])
@pytest.mark.parametrize("shape,dtype", [((16, 5000), np.float32), ((3, 1_200_000), np.float32),
                                         ((4, 7, 9), np.float16), ((2, 0), np.float32), ((5, 1), np.int16)])
def test_samples_in_one_call_equal_one_call_per_sample(tmp_path, backend, shape, dtype):
    rng = np.random.default_rng(2)
    r = rng.standard_normal(shape).astype(dtype)
    e = (r + rng.standard_normal(shape) * 0.01).astype(dtype)
    np.savez(tmp_path / "x.npz", e=e, r=r)
    from leapp_lab.compare.npzio import NpzArrays
    with NpzArrays(tmp_path / "x.npz") as z:  # read-only memory maps, as verify reads them
        (j, got), = diff_sums_rows([(z["e"], z["r"])], rtol=1e-3, backend=backend, threads=2)
    want = [diff_sums(e[i], r[i], rtol=1e-3, backend="numpy") for i in range(shape[0])]
    assert j == 0 and [_bits(g) for g in got] == [_bits(w) for w in want]
    whole = merge_sums(want)
    chained = want[0]
    for w in want[1:]:
        chained = chained.merge(w)
    assert _bits(whole) == _bits(chained)


def test_backend_choice_and_errors(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "numpy")
    assert resolve_backend() == "numpy" and resolve_backend("numpy") == "numpy"
    monkeypatch.setenv(BACKEND_ENV, "fortran")
    with pytest.raises(ValueError, match=r"LEAPP_LAB_METRICS='fortran'.*numba, numpy, auto"):
        diff_stats(np.ones(3), np.ones(3))
    monkeypatch.delenv(BACKEND_ENV)
    assert resolve_backend() == ("numba" if NUMBA_ERR is None else "numpy")


def _run(code: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    # cwd: `python -c` imports from the current folder first
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env}, cwd=cwd)


def test_without_numba_auto_falls_back_and_forcing_numba_says_why(tmp_path):
    # a platform without numba: make `import numba` fail in a fresh interpreter
    code = ("import sys; sys.modules['numba'] = None\n"
            "import numpy as np\n"
            "from leapp_lab.numerics.metrics import diff_stats\n"
            "from leapp_lab.numerics.backend import resolve_backend\n"
            "print(resolve_backend(), diff_stats(np.arange(5.0), np.arange(5.0) * 2).mape)\n")
    r = _run(code, {"PYTHONPATH": str(ROOT), BACKEND_ENV: "auto"}, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["numpy", "40.0"]  # mean(0, 1/2, 2/4, 3/6, 4/8) = 0.4
    r = _run(code, {"PYTHONPATH": str(ROOT), BACKEND_ENV: "numba"}, tmp_path)
    assert r.returncode != 0
    assert "LEAPP_LAB_METRICS=numba, but numba cannot be used here" in r.stderr
    assert "LEAPP_LAB_METRICS=numpy" in r.stderr


def _lock(dirs: list[Path]) -> None:
    """Make folders unwritable, for root too (whom file modes do not stop): mode 555 plus the
    immutable attribute where running as root."""
    for d in dirs:
        d.chmod(0o555)
    if os.geteuid() == 0:
        r = subprocess.run(["chattr", "+i", *map(str, dirs)], capture_output=True, text=True)
        if r.returncode != 0:
            _unlock(dirs)
            pytest.skip(f"cannot make a folder read-only for root here (chattr +i: {r.stderr.strip()})")


def _unlock(dirs: list[Path]) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", *map(str, dirs)], capture_output=True)
    for d in dirs:
        d.chmod(0o755)


@needs_numba
def test_read_only_install_compiles_into_a_writable_cache(tmp_path):
    # the package copied into folders nobody may write (a system-wide install), HOME read-only too:
    # numba cannot cache beside the module nor in ~/.cache, so the kernel caches under TMPDIR
    if shutil.which("chattr") is None and os.geteuid() == 0:
        pytest.skip("running as root without chattr: a read-only folder cannot be made")
    site = tmp_path / "site"
    shutil.copytree(ROOT / "leapp_lab", site / "leapp_lab",
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    dirs = [p for p in site.rglob("*") if p.is_dir()] + [site, home]
    _lock(dirs)
    try:
        assert not os.access(site / "leapp_lab" / "numerics", os.W_OK) or os.geteuid() == 0
        code = ("import numpy as np, numba\n"
                "from leapp_lab.numerics.metrics import diff_stats\n"
                "s = diff_stats(np.arange(10.0), np.arange(10.0) + 1, backend='numba')\n"
                "print(s.max_abs, numba.config.CACHE_DIR)\n")
        env = {"PYTHONPATH": str(site), "HOME": str(home), "TMPDIR": str(tmp), "NUMBA_CACHE_DIR": "",
               "PYTHONDONTWRITEBYTECODE": "1"}
        r = _run(code, env, tmp_path)
        assert r.returncode == 0, r.stderr
        val, cache = r.stdout.split()
        assert val == "1.0" and cache.startswith(str(tmp))
        assert list(Path(cache).rglob("*.nbi"))  # compiled code was cached there
        assert not list(site.rglob("*.nbi"))
        r = _run(code, env, tmp_path)  # and the next process loads it
        assert r.returncode == 0 and r.stdout.split()[0] == "1.0", r.stderr
    finally:
        _unlock(dirs)


@pytest.mark.parametrize("backend", [pytest.param("numba", marks=needs_numba), "numpy"])
@pytest.mark.parametrize("chunk", [16, 20, 100, 1000])
def test_runs_of_small_samples_in_one_kernel_call_change_no_bit(backend, chunk):
    """Small samples go to the kernel several at a time (at most PIECE blocks per call); a sample's
    non-finite pairs, maxima and histogram stay its own, whatever run of samples it shares a call with."""
    rng = np.random.default_rng(3)
    r = rng.standard_normal((7, 50)) * np.exp(rng.uniform(-20, 20, (7, 50)))
    e = r * (1 + 1e-5 * rng.standard_normal(r.shape))
    e[1, 3], r[2, 7], e[4, :] = np.nan, np.inf, -np.inf          # one sample entirely non-finite
    e[5] = r[5]                                                  # one sample exactly equal
    (j, got), = diff_sums_rows([(e, r)], rtol=1e-3, chunk=chunk, backend=backend, threads=2)
    want = [diff_sums(e[i], r[i], rtol=1e-3, chunk=chunk, backend="numpy") for i in range(7)]
    assert j == 0 and [_bits(g) for g in got] == [_bits(w) for w in want]
    assert [g.nonfinite_pairs for g in got] == [0, 1, 1, 0, 50, 0, 0]
    # all finite: numpy scores runs of one-block samples side by side (2 at a time at chunk 100)
    f = r * (1 + 1e-5 * rng.standard_normal(r.shape))
    (_, got), = diff_sums_rows([(f, r)], rtol=1e-3, chunk=chunk, backend=backend, threads=2)
    assert [_bits(g) for g in got] == [_bits(diff_sums(f[i], r[i], rtol=1e-3, chunk=chunk, backend="numpy"))
                                       for i in range(7)]


@pytest.mark.parametrize("backend", [pytest.param("numba", marks=needs_numba), "numpy"])
@pytest.mark.parametrize("chunk", [20, 100, 1 << 16])
def test_light_pass_keeps_the_full_pass_bits_of_what_it_reports(backend, chunk):
    """The light pass (local error records) gives the full pass's bits for nrmse, cosine, max_abs
    and the non-finite counts, on either backend, small and multi-block samples alike, and leaves
    what it skips NaN or empty (never a plausible wrong number)."""
    rng = np.random.default_rng(4)
    rows = []
    for shape in ((7, 50), (3, 70_000), (4, 1)):
        r = rng.standard_normal(shape) * np.exp(rng.uniform(-20, 20, shape))
        rows.append(((r * (1 + 1e-4 * rng.standard_normal(shape))).astype(np.float32), r))
    rows[0][0][1, 3], rows[0][1][2, 7] = np.nan, np.inf
    full = dict(diff_sums_rows(rows, rtol=0.0, chunk=chunk, backend="numpy", threads=1))
    light = dict(diff_sums_rows(rows, rtol=0.0, chunk=chunk, backend=backend, threads=2, light=True))
    kept = ("n", "nonfinite_engine", "nonfinite_reference", "nonfinite_pairs", "sum_sq", "sum_er",
            "sum_ee", "sum_rr", "max_abs")
    from leapp_lab.model.metrics import Metrics
    for j in full:
        assert len(light[j]) == len(full[j])
        for a, b in zip(light[j], full[j]):
            assert {k: repr(getattr(a, k)) for k in kept} == {k: repr(getattr(b, k)) for k in kept}
            assert np.isnan(a.sum_abs) and np.isnan(a.sum_ape) and a.max_excess == -np.inf
            assert not a.hist.counts and a.hist.zero == 0
        ma, mb = Metrics().fill(merge_sums(light[j])), Metrics().fill(merge_sums(full[j]))
        assert (repr(ma.nrmse), repr(ma.cosine), repr(ma.max_abs)) == (repr(mb.nrmse), repr(mb.cosine),
                                                                        repr(mb.max_abs))
        assert ma.p50 is None
    assert [s.nonfinite_pairs for s in light[0]] == [0, 1, 1, 0, 0, 0, 0]


@pytest.mark.parametrize("light", [False, True])
def test_rows_of_one_size_scored_together_change_no_bit(monkeypatch, light):
    """numpy scores the one-block samples of every row of a size in one group (several rows, a
    row split over groups at the cap, a non-finite value making its group fall back to one
    sample at a time): each sample's record has the bits of a call of its own."""
    import leapp_lab.numerics.kernel as K
    monkeypatch.setattr(K, "GROUP_SAMPLES", 5)
    rng = np.random.default_rng(5)
    rows = []
    for shape in ((3, 40), (4, 40), (2, 7, 9), (6, 40), (1, 63), (2, 200)):
        r = rng.standard_normal(shape) * np.exp(rng.uniform(-20, 20, shape))
        rows.append(((r * (1 + 1e-5 * rng.standard_normal(shape))).astype(np.float32), r))
    rows[3][0][4, 2] = np.nan            # in the second group of size 40
    got = dict(diff_sums_rows(rows, rtol=1e-3, chunk=100, backend="numpy", threads=1, light=light))
    assert sorted(got) == list(range(len(rows)))
    for j, (e, r) in enumerate(rows):
        e2, r2 = e.reshape(e.shape[0], -1), r.reshape(r.shape[0], -1)
        want = [next(iter(diff_sums_rows([(e2[i:i + 1], r2[i:i + 1])], rtol=1e-3, chunk=100,
                                         backend="numpy", threads=1, light=light)))[1][0]
                for i in range(e.shape[0])]
        if not light:   # and each of those is the plain one-array pass
            assert [_bits(w) for w in want] == [_bits(diff_sums(e2[i], r2[i], rtol=1e-3, chunk=100,
                                                                backend="numpy")) for i in range(e.shape[0])]
        assert [_bits(g) for g in got[j]] == [_bits(w) for w in want], j
    assert [s.nonfinite_pairs for s in got[3]] == [0, 0, 0, 0, 1, 0]
    if NUMBA_ERR is None:   # the compiled kernel (no groups, its own loops) agrees to the bit
        nb = dict(diff_sums_rows(rows, rtol=1e-3, chunk=100, backend="numba", threads=2, light=light))
        assert {j: [_bits(s) for s in v] for j, v in nb.items()} == {j: [_bits(s) for s in v] for j, v in got.items()}


@pytest.mark.parametrize("backend", [pytest.param("numba", marks=needs_numba), "numpy"])
def test_rows_given_as_lists_of_samples_score_as_stacked(backend):
    """Local values come as one array per sample: scored as they are (numpy groups copy them once)
    or stacked, they give the bits of the stacked array, a non-finite sample included."""
    rng = np.random.default_rng(6)
    rows = []
    for shape in ((5, 40), (3, 70_000), (4, 8, 5)):
        r = rng.standard_normal(shape)
        rows.append((list((r + 1e-3 * rng.standard_normal(shape)).astype(np.float32)), r))
    rows[0][0][2] = rows[0][0][2].copy()
    rows[0][0][2][7] = np.inf
    r16 = rng.standard_normal((3, 70_000)).astype(np.float16)
    rows.append((list(r16 + np.float16(0.01)), r16))                          # float16 on both sides
    rows.append((list(r16), r16.astype(np.float32) * 1.001))                  # float16 against float32
    rows.append(([r16[0], r16[1].astype(np.float32), r16[2]], r16))           # mixed dtypes in one row
    for light in (False, True):
        got = dict(diff_sums_rows(rows, rtol=1e-3, chunk=100, backend=backend, threads=2, light=light))
        want = dict(diff_sums_rows([(np.stack(e), r) for e, r in rows], rtol=1e-3, chunk=100, backend="numpy",
                                   threads=1, light=light))
        assert {j: [_bits(s) for s in v] for j, v in got.items()} == {j: [_bits(s) for s in v] for j, v in want.items()}
    assert [s.nonfinite_pairs for s in got[0]] == [0, 0, 1, 0, 0]
    with pytest.raises(ValueError, match="shape mismatch"):
        list(diff_sums_rows([(rows[0][0][:3], rows[0][1])], backend="numpy"))


def test_side_by_side_pool_yields_each_item_once_raises_and_bounds_what_runs_ahead():
    """The thread pool (concurrent.futures) of the kernel: every item once, a failure raised in the
    caller's thread, and no more than two items per thread submitted ahead of the caller."""
    import threading

    from leapp_lab.numerics.kernel import _side_by_side
    lock, state = threading.Lock(), {"started": 0}

    def fn(k):
        with lock:
            state["started"] += 1
        return k * k

    seen = []
    for k, out in _side_by_side(range(50), fn, 3):
        assert out == k * k
        with lock:      # items started so far: those yielded plus at most the window (2 per thread)
            assert state["started"] <= len(seen) + 1 + 6
        seen.append(k)
    assert sorted(seen) == list(range(50))

    def bad(k):
        if k == 7:
            raise ValueError("item 7")
        return k
    with pytest.raises(ValueError, match="item 7"):
        list(_side_by_side(range(40), bad, 2))

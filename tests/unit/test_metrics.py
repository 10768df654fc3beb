import numpy as np
import pytest

from leapp_lab.numerics.metrics import diff_stats
from leapp_lab.model.hist import Hist as LogHistogram
from tests import oracle


@pytest.mark.parametrize("n,chunk", [(10, 4), (100_003, 4096), (7, 1 << 16)])
def test_metrics_match_independent_formula(n, chunk):
    rng = np.random.default_rng(n)
    r = rng.standard_normal(n).astype(np.float32)
    e = (r + rng.standard_normal(n).astype(np.float32) * 1e-2).astype(np.float32)
    s = diff_stats(e, r, rtol=1e-3, chunk=chunk)
    ref = oracle.metrics(e, r)
    for k, v in ref.items():
        assert getattr(s, k) == pytest.approx(v, rel=1e-12, abs=1e-15), k
    d = np.abs(e.astype(np.float64) - r)
    assert s.min_atol == pytest.approx(max(0.0, (d - 1e-3 * np.abs(r.astype(np.float64))).max()), rel=1e-12)
    assert np.allclose(e, r, rtol=1e-3, atol=s.min_atol * (1 + 1e-9))
    assert s.hist.total == n


def test_nonfinite_counted_not_dropped():
    r = np.array([1.0, 2.0, np.nan, 4.0, 5.0])
    e = np.array([1.0, np.inf, 3.0, 4.5, 5.0])
    s = diff_stats(e, r)
    assert (s.nonfinite_engine, s.nonfinite_reference, s.nonfinite_pairs) == (1, 1, 2)
    assert s.max_abs == 0.5 and s.mse == pytest.approx(0.25 / 3)
    fr = np.array([1.0, 4.0, 5.0])  # the finite pairs' reference values
    assert s.nrmse == pytest.approx(np.sqrt(0.25 / 3) / np.sqrt(np.mean(fr ** 2)), rel=1e-12)
    assert s.hist.total == 3 and s.hist.zero == 2


def test_cosine_edge_cases():
    z = np.zeros(4)
    assert diff_stats(z, z).cosine == 1.0
    assert diff_stats(np.ones(4), z).cosine == 0.0
    # nrmse has no scale when the reference is all zero: None (cosine covers that case)
    assert diff_stats(z, z).nrmse is None and diff_stats(np.ones(4), z).nrmse is None
    assert diff_stats(z, np.ones(4)).nrmse == 1.0


def test_histogram_bins_and_percentiles():
    d = np.array([0.0, 0.0, 1e-6, 1e-3, 1e-3, 1.0, 100.0])
    s = diff_stats(d, np.zeros_like(d))
    h = s.hist
    assert h.zero == 2 and h.total == 7
    edges = h.edges()
    # every non-zero value falls inside the edges of its own bin
    for v in d[d > 0]:
        i = np.searchsorted(edges, v, side="right") - 1
        assert edges[i] <= v < edges[i + 1]
    assert s.percentile(0) == 0.0
    assert s.percentile(100) == pytest.approx(100.0, rel=0.2)
    assert 1e-3 / 1.25 <= s.percentile(50) <= 1e-3 * 1.25


def test_merge_equals_whole():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 1000)), rng.standard_normal((2, 1000))
    whole = diff_stats(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]), rtol=1e-2)
    merged = diff_stats(a[0], a[1], rtol=1e-2).merge(diff_stats(b[0], b[1], rtol=1e-2))
    for k in ("max_abs", "mse", "mape", "nrmse", "cosine", "min_atol"):
        assert getattr(merged, k) == pytest.approx(getattr(whole, k), rel=1e-12)
    assert merged.hist.counts == whole.hist.counts and merged.hist.first_bin == whole.hist.first_bin
    assert LogHistogram.from_dict(merged.hist.to_dict()).counts == merged.hist.counts


def test_nrmse_merged_over_samples_equals_independent_formula():
    # samples of very different scale: a mean of per-sample nrmse would be wrong, the merge is exact
    rng = np.random.default_rng(3)
    parts = [(s * rng.standard_normal(500), s) for s in (1e-3, 1.0, 50.0)]
    pairs = [(r + rng.standard_normal(r.size) * 1e-2, r) for r, _ in parts]
    merged = diff_stats(*pairs[0]).merge(diff_stats(*pairs[1])).merge(diff_stats(*pairs[2]))
    e = np.concatenate([p[0] for p in pairs]); r = np.concatenate([p[1] for p in pairs])
    want = oracle.nrmse(e, r)
    assert merged.nrmse == pytest.approx(want, rel=1e-12)
    assert merged.nrmse != pytest.approx(np.mean([diff_stats(*p).nrmse for p in pairs]), rel=1e-3)


def test_one_histogram_merge_is_the_histogram_of_the_union():
    """``Hist.sum`` is the one merge (a row's samples in ``merge_sums``, two records in ``add`` /
    ``Sums.merge``): the histogram of the union's |diff|, binned independently from the bit
    patterns, and every way of merging gives it."""
    from leapp_lab.model.hist import NBINS, SHIFT
    from leapp_lab.numerics.metrics import diff_sums, merge_sums

    rng = np.random.default_rng(3)
    parts = [(rng.normal(size=n) * s, rng.normal(size=n) * s) for n, s in ((50, 1e-3), (80, 10.0), (0, 1.0), (7, 0.0))]
    parts[3] = (np.ones(7), np.ones(7))                    # exact zeros only: no non-zero bin
    sums = [diff_sums(e, r) for e, r in parts]
    d = np.abs(np.concatenate([e for e, _ in parts]) - np.concatenate([r for _, r in parts]))
    want = np.bincount(np.right_shift(d.view(np.int64), SHIFT), minlength=NBINS)
    union = LogHistogram.of_counts(want)
    assert LogHistogram.sum(s.hist for s in sums) == union
    assert merge_sums(sums).hist == union
    pairwise = sums[0].hist
    for s in sums[1:]:
        pairwise = pairwise.add(s.hist)
    assert pairwise == union and union.total == d.size and union.zero == 7
    assert LogHistogram.sum([LogHistogram(2, 5, []), LogHistogram(1, 9, [])]) == LogHistogram(3, 5, [])

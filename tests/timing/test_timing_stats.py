import math

import pytest

from flashinfer_bench.timing.stats import ci_width_pct, median_ci, median_ci_ranks, summarize


def test_summarize_hand_computed():
    # sorted: 1 2 3 4 100 ; median 3; numpy linear quartiles q25=2, q75=4 -> IQR 2, fences [-1, 7]
    s = summarize([3.0, 1.0, 4.0, 2.0, 100.0])
    assert s.median_ms == 3.0
    assert s.min_ms == 1.0 and s.max_ms == 100.0
    assert s.iqr_ms == pytest.approx(2.0)
    assert s.outliers == 1
    mean = 110.0 / 5
    var = sum((x - mean) ** 2 for x in [1, 2, 3, 4, 100]) / 4  # ddof=1
    assert s.std_ms == pytest.approx(math.sqrt(var))
    assert s.n == 5
    # n=5 is below the size where a 95% interval exists: the interval is [min, max]
    assert (s.ci95_low_ms, s.ci95_high_ms) == (1.0, 100.0)


def test_summarize_even_count_median_is_midpoint():
    s = summarize([4.0, 1.0, 3.0, 2.0])
    assert s.median_ms == 2.5
    assert s.outliers == 0


def test_single_sample():
    s = summarize([7.5])
    assert (s.median_ms, s.std_ms, s.min_ms, s.max_ms, s.iqr_ms) == (7.5, 0.0, 7.5, 7.5, 0.0)
    assert (s.ci95_low_ms, s.ci95_high_ms, s.n, s.outliers) == (7.5, 7.5, 1, 0)


def test_empty_rejected():
    with pytest.raises(ValueError):
        summarize([])


@pytest.mark.parametrize(
    ("n", "lo", "coverage"),
    [
        # P(B<=0)=1/64 <= 0.025 < P(B<=1)=7/64  -> ranks (1, 6), coverage 1 - 2/64
        (6, 1, 1 - 2 / 64),
        # P(B<=1)=11/1024 <= 0.025 < P(B<=2)=56/1024 -> ranks (2, 9)
        (10, 2, 1 - 2 * 11 / 1024),
        # P(B<=5)=0.02069 <= 0.025 < P(B<=6)=0.05766 (n=20) -> ranks (6, 15)
        (20, 6, 1 - 2 * sum(math.comb(20, i) for i in range(6)) / 2**20),
    ],
)
def test_median_ci_ranks_match_binomial_table(n, lo, coverage):
    got_lo, got_hi, got_cov = median_ci_ranks(n)
    assert (got_lo, got_hi) == (lo, n + 1 - lo)
    assert got_cov == pytest.approx(coverage)
    assert got_cov >= 0.95


def test_median_ci_ranks_too_few_samples():
    lo, hi, cov = median_ci_ranks(5)
    assert (lo, hi) == (1, 5)
    assert cov == pytest.approx(1 - 2 / 32)
    assert cov < 0.95


def test_median_ci_ranks_large_n_is_near_normal_approximation():
    n = 10_000
    lo, hi, cov = median_ci_ranks(n)
    # normal approximation: n/2 - 1.96 * sqrt(n)/2 ~= 4902
    assert abs(lo - (n / 2 - 1.96 * math.sqrt(n) / 2)) <= 2
    assert hi == n + 1 - lo
    assert 0.95 <= cov < 0.96


def test_median_ci_picks_order_statistics():
    samples = [10.0, 1.0, 9.0, 2.0, 8.0, 3.0, 7.0, 4.0, 6.0, 5.0]
    assert median_ci(samples) == (2.0, 9.0)  # ranks 2 and 9 of 1..10


def test_ci_width_pct():
    assert ci_width_pct(9.0, 11.0, 10.0) == pytest.approx(20.0)
    assert ci_width_pct(0.0, 0.0, 0.0) == 0.0
    assert ci_width_pct(0.0, 1.0, 0.0) == math.inf


def test_stats_ci_width_property_and_dict():
    s = summarize([float(x) for x in range(1, 11)])
    assert s.ci95_width_pct == pytest.approx(100 * (9 - 2) / 5.5)
    assert s.to_dict()["n"] == 10

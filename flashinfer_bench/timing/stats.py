"""Summary statistics over a list of timing samples.

Pure Python and numpy: nothing here measures anything, so every function can be checked by hand.

The 95% confidence interval of the median uses the order-statistic (binomial) method: the number of
samples below the true median is Binomial(n, 1/2), so the interval [x_(j), x_(n+1-j)] of the sorted
samples (1-based ranks) covers the median with probability 1 - 2 * P(B <= j - 1). We take the largest
j whose coverage is still at least 95%. It is distribution-free and deterministic (no resampling), which
keeps results reproducible. Below six samples no such j exists; the interval is then [min, max] and its
coverage (reported by :func:`median_ci_ranks`) is under 95%.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

CONFIDENCE = 0.95
# Tukey's fences: a sample further than this many IQRs outside the quartiles is an outlier.
TUKEY_K = 1.5


@dataclass(frozen=True)
class SampleStats:
    """Summary of timing samples, all in milliseconds."""

    median_ms: float
    std_ms: float
    """Sample standard deviation (ddof=1); 0.0 for a single sample."""
    min_ms: float
    max_ms: float
    iqr_ms: float
    """Interquartile range, q75 - q25 with numpy's linear interpolation."""
    ci95_low_ms: float
    ci95_high_ms: float
    """Order-statistic 95% confidence interval of the median (see module docstring)."""
    n: int
    outliers: int
    """Number of samples outside Tukey's fences (q25 - 1.5 IQR, q75 + 1.5 IQR)."""

    @property
    def ci95_width_pct(self) -> float:
        """Width of the median's confidence interval as a percentage of the median (inf if median is 0)."""
        return ci_width_pct(self.ci95_low_ms, self.ci95_high_ms, self.median_ms)

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


def _log_binom_pmf_half(n: int, k: int) -> float:
    """log P(B = k) for B ~ Binomial(n, 1/2), stable for large n."""
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2.0)


def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int, float]:
    """1-based ranks (lo, hi) of the order statistics bounding the median's confidence interval.

    Returns ``(lo, hi, coverage)`` with ``hi == n + 1 - lo``. When n is too small for the requested
    confidence, returns ``(1, n, coverage)`` with coverage below ``confidence``.
    """
    if n < 1:
        raise ValueError("need at least one sample")
    tail_limit = (1.0 - confidence) / 2.0
    lo = 0
    cdf = 0.0  # P(B <= lo - 1) for the candidate rank lo
    for j in range(1, n // 2 + 2):
        cdf_j = cdf + math.exp(_log_binom_pmf_half(n, j - 1))  # P(B <= j - 1)
        if cdf_j > tail_limit:
            break
        lo, cdf = j, cdf_j
    if lo == 0:
        return 1, n, 1.0 - 2.0 * math.exp(_log_binom_pmf_half(n, 0))
    return lo, n + 1 - lo, 1.0 - 2.0 * cdf


def median_ci(samples: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Order-statistic confidence interval of the median."""
    ordered = sorted(samples)
    lo, hi, _ = median_ci_ranks(len(ordered), confidence)
    return ordered[lo - 1], ordered[hi - 1]


def ci_width_pct(low: float, high: float, median: float) -> float:
    """(high - low) as a percentage of the median."""
    if median <= 0.0:
        return 0.0 if high == low else math.inf
    return 100.0 * (high - low) / median


def summarize(samples: Sequence[float]) -> SampleStats:
    """All statistics of :class:`SampleStats` for a non-empty list of samples (ms)."""
    if len(samples) == 0:
        raise ValueError("cannot summarize an empty list of samples")
    arr = np.asarray(samples, dtype=np.float64)
    q25, q75 = (float(q) for q in np.percentile(arr, [25.0, 75.0]))
    iqr = q75 - q25
    low_fence, high_fence = q25 - TUKEY_K * iqr, q75 + TUKEY_K * iqr
    ci_low, ci_high = median_ci(arr.tolist())
    return SampleStats(
        median_ms=float(np.median(arr)),
        std_ms=float(np.std(arr, ddof=1)) if arr.size > 1 else 0.0,
        min_ms=float(arr.min()),
        max_ms=float(arr.max()),
        iqr_ms=iqr,
        ci95_low_ms=ci_low,
        ci95_high_ms=ci_high,
        n=int(arr.size),
        outliers=int(np.count_nonzero((arr < low_fence) | (arr > high_fence))),
    )

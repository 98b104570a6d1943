"""Distribution-free 95% confidence interval of the median from timing samples."""

from __future__ import annotations

import math
from collections.abc import Sequence


def median_ci95(samples_ms: Sequence[float]) -> tuple[float, float]:
    """Order-statistic interval: ranks n/2 -/+ 1.96*sqrt(n)/2 (normal approximation of Binomial(n, 1/2)).

    With fewer than 6 samples the interval is the sample range.
    """
    xs = sorted(samples_ms)
    n = len(xs)
    if n == 0:
        return math.nan, math.nan
    half_width = 1.96 * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half_width))
    hi = min(n - 1, math.ceil(n / 2 + half_width) - 1)
    if n < 6:
        lo, hi = 0, n - 1
    return xs[lo], xs[hi]

"""Keep sampling until the median is known precisely enough, or the time budget is spent."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from .stats import ci_width_pct, median_ci

# Upper bound on samples when neither a target nor a budget stops the loop sooner.
MAX_SAMPLES = 100_000
# Budget used when only target_ci_pct is given, so a noisy kernel cannot sample forever.
DEFAULT_BUDGET_S = 10.0


@dataclass(frozen=True)
class AdaptiveOutcome:
    samples: list[float]
    target_met: bool
    """True when target_ci_pct was given and the interval got narrower than it (False otherwise)."""
    ci_width_pct: float


def sample_until(
    measure_batch: Callable[[int], list[float]],
    batch_size: int,
    target_ci_pct: float | None,
    time_budget_s: float | None,
    clock: Callable[[], float] = time.monotonic,
) -> AdaptiveOutcome:
    """Take ``batch_size`` samples, then more batches while the 95% CI of the median is wider than
    ``target_ci_pct`` percent of the median and ``time_budget_s`` (counted from the start) is not spent.

    With only ``time_budget_s``, batches continue until the budget is spent. With neither, one batch.
    The first batch is always taken, whatever the budget.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    if target_ci_pct is not None and target_ci_pct <= 0:
        raise ValueError("target_ci_pct must be positive")
    budget = time_budget_s if time_budget_s is not None else DEFAULT_BUDGET_S
    start = clock()
    samples = list(measure_batch(batch_size))

    def width() -> float:
        low, high = median_ci(samples)
        return ci_width_pct(low, high, statistics.median(samples))

    if target_ci_pct is None and time_budget_s is None:
        return AdaptiveOutcome(samples, False, width())
    while True:
        current = width()
        if target_ci_pct is not None and current < target_ci_pct:
            return AdaptiveOutcome(samples, True, current)
        if clock() - start >= budget or len(samples) >= MAX_SAMPLES:
            return AdaptiveOutcome(samples, False, current)
        samples.extend(measure_batch(batch_size))

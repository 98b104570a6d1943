"""How noisy a recorded latency is: read from the optional ``performance.extra`` mapping of a trace.

The keys (docs/reports.md) are ours; upstream's reader drops the mapping, and a trace without it (upstream's,
or one written before the evaluators recorded it) gets ``None`` here, and a caller falls back to an assumed
noise, labelled as such. A value of the wrong type or out of range is treated as absent: a report never fails
on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flashinfer_bench.data import Performance
from flashinfer_bench.data import performance_extra as key

#: The relative noise assumed for a latency recorded without its spread (both sides of a comparison).
DEFAULT_NOISE = 0.05


@dataclass(frozen=True)
class Spread:
    """What a trace says about its latency's noise; every field may be missing."""

    timing_method: str | None = None
    latency_ci95_ms: tuple[float, float] | None = None
    latency_std_ms: float | None = None
    samples: int | None = None
    trial_latencies_ms: tuple[float, ...] = ()
    reference_ci95_ms: tuple[float, float] | None = None
    settings: Mapping[str, Any] | None = None
    #: Trials whose latency the judge's clock set, its timing claim not believed (bench/judge/schedule.py):
    #: a bound that moves with the host's speed, not a measurement of the solution's kernels.
    judge_estimated_trials: int = 0

    def interval(self, latency_ms: float) -> tuple[float, float] | None:
        """Where ``latency_ms`` lies at 95%, [low, high]: the wider, at each end, of its recorded interval and its
        trials' latencies' half range either side of it; None when neither was recorded. ``low`` is 0 or less
        when the trials spread by more than the latency itself: nothing then bounds it from below."""
        ends = []
        if self.latency_ci95_ms is not None:
            ends.append(self.latency_ci95_ms)
        if len(self.trial_latencies_ms) >= 2:
            half = (max(self.trial_latencies_ms) - min(self.trial_latencies_ms)) / 2
            ends.append((latency_ms - half, latency_ms + half))
        if not ends:
            return None
        return min(low for low, _ in ends), max(high for _, high in ends)

    def relative_noise(self, latency_ms: float) -> float | None:
        """How far ``interval`` reaches from ``latency_ms`` at its farther end, as a fraction of it."""
        interval = self.interval(latency_ms) if latency_ms > 0 else None
        if interval is None:
            return None
        low, high = interval
        return max(high - latency_ms, latency_ms - low) / latency_ms


def read_spread(performance: Performance | None) -> Spread:
    extra = performance.extra if performance is not None else None
    if not isinstance(extra, Mapping):
        return Spread()
    method = extra.get(key.TIMING_METHOD)
    settings = extra.get(key.SETTINGS)
    trials = extra.get(key.TRIAL_LATENCIES_MS)
    trial_values = tuple(trials) if isinstance(trials, list) and all(map(_positive, trials)) else ()
    samples = extra.get(key.SAMPLES)
    estimated = extra.get(key.JUDGE_ESTIMATED_TRIALS)
    return Spread(
        timing_method=method if isinstance(method, str) and method else None,
        latency_ci95_ms=_interval(extra.get(key.LATENCY_CI95_MS)),
        latency_std_ms=_number(extra.get(key.LATENCY_STD_MS)),
        samples=samples if _count(samples) else None,
        trial_latencies_ms=tuple(float(v) for v in trial_values),
        reference_ci95_ms=_interval(extra.get(key.REFERENCE_CI95_MS)),
        settings=settings if isinstance(settings, Mapping) else None,
        judge_estimated_trials=estimated if _count(estimated) else 0,
    )


def _number(value: Any) -> float | None:
    """A finite non-negative number, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def _count(value: Any) -> bool:
    """A positive int (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _positive(value: Any) -> bool:
    number = _number(value)
    return number is not None and number > 0


def _interval(value: Any) -> tuple[float, float] | None:
    """[low, high] with 0 < low <= high, else None."""
    if not isinstance(value, list) or len(value) != 2 or not all(map(_positive, value)):
        return None
    low, high = float(value[0]), float(value[1])
    return (low, high) if low <= high else None

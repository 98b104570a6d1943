"""The curves of a report: fast_p (p from 0 past the largest speed-up) and win@p (p from 0 to 1), as exact step
functions."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence

from flashinfer_bench.report.summary import Tally, fraction_at_least

WIN_P_MAX = 1.0
#: How far past the largest speed-up a fast_p curve reaches, so that its last step shows.
FAST_P_HEADROOM = 1.1

Curve = list[tuple[float, float]]


def step_curve(values: Sequence[float], total: int, p_max: float) -> Curve:
    """The breakpoints of p -> share of ``total`` items whose value is at least p, for p in [0, p_max].

    Drawn as steps (each point's share holds until the next point's p): the first point is (0, share at 0),
    then one point per distinct value v in [0, p_max), at p = v, with the share of the values above v, and a
    last point at p_max. Empty when there are no items.
    """
    if not total:
        return []
    ordered = sorted(values)
    curve: Curve = [(0.0, fraction_at_least(ordered, total, 0.0) or 0.0)]
    for value in sorted({v for v in ordered if 0.0 <= v < p_max}):
        curve.append((value, (len(ordered) - bisect_right(ordered, value)) / total))
    curve.append((p_max, fraction_at_least(ordered, total, p_max) or 0.0))
    return curve


def fast_p_range(speedups: Iterable[float]) -> float:
    """The p up to which fast_p is drawn: FAST_P_HEADROOM past the largest speed-up, rounded up to 1, 2 or 5
    times a power of ten, and at least 1 (faster than the reference or not is the first question)."""
    target = max((FAST_P_HEADROOM * s for s in speedups if s > 0), default=1.0)
    if target <= 1.0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(target))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= target)


def fast_p_curve(tally: Tally) -> Curve:
    """fast_p for p from 0 to ``fast_p_range``: the share of the evaluations that passed with a speed-up of at
    least p. Empty when no speed-up was measured (the reference was not timed)."""
    if not tally.measured_speedups:
        return []
    return step_curve(tally.speedups, tally.evaluated, fast_p_range(tally.measured_speedups))


def win_p_curve(tally: Tally) -> Curve:
    """win@p for p from 0 to 1: the share of the workloads where the group is within 1/p of the fastest."""
    return step_curve(tally.to_fastest, len(tally.to_fastest), WIN_P_MAX)

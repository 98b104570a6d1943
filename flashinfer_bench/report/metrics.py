"""The curves of a report: fast_p (p from 0 to 10) and win@p (p from 0 to 1), as exact step functions."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from flashinfer_bench.report.summary import Tally, fraction_at_least

FAST_P_MAX = 10.0
WIN_P_MAX = 1.0

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


def fast_p_curve(tally: Tally) -> Curve:
    """fast_p for p from 0 to 10: the share of the evaluations that passed with a speed-up of at least p. Empty
    when no speed-up was measured (the reference was not timed)."""
    if not tally.measured_speedups:
        return []
    return step_curve(tally.speedups, tally.evaluated, FAST_P_MAX)


def win_p_curve(tally: Tally) -> Curve:
    """win@p for p from 0 to 1: the share of the workloads where the group is within 1/p of the fastest."""
    return step_curve(tally.to_fastest, len(tally.to_fastest), WIN_P_MAX)

"""fast_p and win@p curves (report/metrics.py): exact steps that agree with the summary's own numbers."""

import random

import pytest
from report_fixtures import make_trace

from flashinfer_bench.report.metrics import fast_p_curve, fast_p_range, step_curve, win_p_curve
from flashinfer_bench.report.summary import fraction_at_least, summarize


def value_at(curve, p):
    """The drawn step curve at p: the share of the last point before p."""
    before = [share for point_p, share in curve if point_p < p]
    return before[-1] if before else curve[0][1]


FAST_P_MAX = 10.0


def test_steps_agree_with_the_count_everywhere():
    rng = random.Random(7)
    values = [0.0, 0.0, 1.0, 1.0, 2.5] + [rng.uniform(0, 12) for _ in range(40)]
    total = len(values) + 5  # five items that have no value (they failed)
    curve = step_curve(values, total, FAST_P_MAX)
    assert curve[0] == (0.0, len(values) / total) and curve[-1][0] == FAST_P_MAX
    for p in [rng.uniform(0, FAST_P_MAX) for _ in range(500)] + [0.5, 1.5, 9.99]:
        assert value_at(curve, p) == pytest.approx(fraction_at_least(values, total, p)), p
    assert [p for p, _ in curve] == sorted(p for p, _ in curve)


def test_curves_of_a_summary():
    traces = [make_trace("d", "s", f"w{i}", latency=1.0, reference=r) for i, r in enumerate((0.5, 1.0, 3.0))]
    traces.append(make_trace("d", "s", "w9", "RUNTIME_ERROR"))
    summary = summarize(traces)["d"]["s"]
    curve = fast_p_curve(summary)
    assert curve == [(0.0, 0.75), (0.5, 0.5), (1.0, 0.25), (3.0, 0.0), (5.0, 0.0)]  # up to past the largest, 3
    assert value_at(curve, 1.0) == summary.fast_p(1.0) == 0.5
    assert win_p_curve(summary) == [(0.0, 1.0), (1.0, 1.0)]  # the only solution: fastest on its 3 workloads
    assert step_curve([], 0, 1.0) == []
    unmeasured = summarize([make_trace("d", "s", "w", reference=0.0)])["d"]["s"]
    assert fast_p_curve(unmeasured) == []


@pytest.mark.parametrize(("speedups", "expected"), [
    ([0.01, 0.02], 1.0), ([0.5, 0.95], 2.0), ([3.0], 5.0), ([9.0], 10.0), ([30.0, 2.0], 50.0), ([0.0], 1.0),
])
def test_fast_p_spans_the_data_and_ends_past_it(speedups, expected):
    assert fast_p_range(speedups) == expected
    assert expected > max(speedups)  # the last step (to 0) is drawn

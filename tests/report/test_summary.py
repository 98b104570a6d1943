"""The numbers of `report summary` (report/summary.py), checked against hand-computed values."""

import math

import pytest
from report_fixtures import make_trace

from flashinfer_bench.report.summary import latest_traces, summarize, summarize_authors

AUTHORS = {"a1": "ann", "a2": "ann", "b1": "bo"}


def traces():
    # workload: (solution, status, latency), reference latency 2.0 everywhere
    table = {
        "w1": [("a1", "PASSED", 1.0), ("a2", "PASSED", 0.5), ("b1", "PASSED", 0.25)],
        "w2": [("a1", "PASSED", 4.0), ("a2", "INCORRECT_NUMERICAL", None), ("b1", "PASSED", 2.0)],
        "w3": [("a1", "RUNTIME_ERROR", None), ("a2", "PASSED", 1.0), ("b1", "COMPILE_ERROR", None)],
    }
    return [make_trace("d", solution, workload, status, latency or 1.0)
            for workload, rows in table.items() for solution, status, latency in rows]


def test_per_solution_numbers():
    summaries = summarize(traces(), AUTHORS)["d"]
    a1, a2, b1 = summaries["a1"], summaries["a2"], summaries["b1"]
    assert (a1.author, b1.author) == ("ann", "bo")
    # a1: speed-ups 2.0 (w1), 0.5 (w2); w3 failed
    assert (a1.evaluated, a1.passed) == (3, 2) and a1.success_rate == pytest.approx(2 / 3)
    assert a1.mean_speedup == pytest.approx(1.25) and a1.geomean_speedup == pytest.approx(1.0)
    assert a1.fast_p(1.0) == pytest.approx(1 / 3) and a1.fast_p(2.0) == pytest.approx(1 / 3)
    assert a1.fast_p(0.0) == a1.success_rate and a1.fast_p(2.01) == 0.0
    # fastest per workload: w1 b1 (0.25), w2 b1 (2.0), w3 a2 (1.0); a1 won none of its 3
    assert a1.win_rate == 0.0 and a2.win_rate == pytest.approx(1 / 3) and b1.win_rate == pytest.approx(2 / 3)
    assert a1.win_at(0.1) == pytest.approx(2 / 3)  # w1: 0.25/1.0, w2: 2.0/4.0; w3 failed
    assert b1.geomean_speedup == pytest.approx(math.sqrt(8.0 * 1.0))


def test_per_author_counts_an_authors_best_solution_once_per_workload():
    authors = summarize_authors(traces(), AUTHORS)
    ann, bo = authors["ann"], authors["bo"]
    assert (ann.evaluated, ann.passed, bo.evaluated, bo.passed) == (6, 4, 3, 2)
    # ann's best: w1 0.5 (fastest 0.25), w2 4.0 (fastest 2.0), w3 1.0 (the fastest)
    assert sorted(ann.to_fastest) == [0.5, 0.5, 1.0]
    assert ann.win_rate == pytest.approx(1 / 3) and bo.win_rate == pytest.approx(2 / 3)
    assert ann.fast_p(2.0) == pytest.approx(3 / 6)  # a1 on w1 (2.0), a2 on w1 (4.0) and on w3 (2.0)
    assert ann.definitions == {"d"}


def test_the_latest_trace_counts_whatever_the_order_read():
    newer = make_trace("d", "a1", "w1", "INCORRECT_NUMERICAL", timestamp="2026-11-21T09:00:00")
    older = make_trace("d", "a1", "w1", "PASSED", timestamp="2026-11-20T09:00:00")
    assert latest_traces([newer, older]) == [newer]
    assert summarize([newer, older])["d"]["a1"].passed == 0
    assert summarize([newer, older])["d"]["a1"].author == "unknown"


def test_speedups_that_were_not_measured():
    """profile_baseline: false writes speed-up 0.0: no mean, no fast_p above 0, the success rate at 0."""
    summary = summarize([make_trace("d", "s", "w1", reference=0.0), make_trace("d", "s", "w2", "TIMEOUT")])["d"]["s"]
    assert summary.mean_speedup is None and summary.geomean_speedup is None
    assert summary.fast_p(1.0) is None and summary.fast_p(0.0) == 0.5
    assert summary.win_rate == 1.0  # the only correct solution of w1

"""Two runs compared (report/compare.py): verdicts decided by both sides' noise, the fallback, status changes."""

import math

import pytest
from report_fixtures import make_trace

from flashinfer_bench.report.compare import (
    DEFAULT_MIN_CHANGE,
    DRIFT_MIN_MATCHES,
    FASTER,
    SAME,
    SLOWER,
    compare_runs,
    judge,
    reading_order,
    run_drift,
)
from flashinfer_bench.report.noise import DEFAULT_NOISE
from flashinfer_bench.report.results import results


def run(rows, noise=0.01):
    """rows: (solution, workload, status, latency); each latency with a 95% interval of +-noise (None: none)."""
    return results([make_trace("d", s, w, status, latency, extra=None if noise is None else {
        "latency_ci95_ms": [latency * (1 - noise), latency * (1 + noise)]}) for s, w, status, latency in rows], {})


def test_judge_by_hand():
    assert (DEFAULT_MIN_CHANGE, DEFAULT_NOISE) == (0.01, 0.05)  # what the CLI's help says
    ratio, threshold, verdict = judge(1.0, 0.03, 1.04, 0.04, 0.01)
    assert (ratio, threshold, verdict) == (pytest.approx(1.04), pytest.approx(0.05), SAME)
    assert judge(1.0, 0.03, 1.06, 0.04, 0.01)[2] == SLOWER
    assert judge(1.0, 0.03, 1 / 1.06, 0.04, 0.01)[2] == FASTER
    assert judge(1.0, 0.0, 1.005, 0.0, 0.01)[1:] == (0.01, SAME)  # quiet sides: the smallest change counts
    assert judge(1.0, 0.0, 0.98, 0.0, 0.01)[2] == FASTER


def test_the_same_change_is_a_change_only_beyond_the_noise():
    base = [("s", "w", "PASSED", 1.0)]
    candidate = [("s", "w", "PASSED", 1.03)]
    quiet = compare_runs(run(base, 0.005), run(candidate, 0.005)).matches[0]
    noisy = compare_runs(run(base, 0.03), run(candidate, 0.03)).matches[0]
    assert quiet.verdict == SLOWER and not quiet.assumed_noise
    assert noisy.verdict == SAME and noisy.threshold == pytest.approx(math.hypot(0.03, 0.03), rel=1e-3)


def test_without_a_recorded_spread_the_default_noise_is_assumed_and_said():
    base, candidate = run([("s", "w", "PASSED", 1.0)], None), run([("s", "w", "PASSED", 1.06)], None)
    match = compare_runs(base, candidate).matches[0]
    assert match.assumed_noise and match.threshold == pytest.approx(math.hypot(0.05, 0.05))
    assert match.verdict == SAME
    assert compare_runs(base, candidate, default_noise=0.01).matches[0].verdict == SLOWER
    mixed = compare_runs(run([("s", "w", "PASSED", 1.0)], 0.001), candidate)
    assert mixed.matches[0].assumed_noise and mixed.assumed_noise == 1


def test_run_drift_by_hand():
    assert run_drift([1.5, 0.5] * 3) == 0.0  # too few evaluations to tell: no drift assumed
    # Deviations of log ratios from their median 0: 0 x 4, log 1.05 x 4, so the median deviation is log(1.05) / 2.
    ratios = [1.0] * 4 + [1.05, 1 / 1.05, 1.05, 1 / 1.05]
    assert len(ratios) == DRIFT_MIN_MATCHES
    assert run_drift(ratios) == pytest.approx(math.exp(1.96 * 1.4826 * math.log(1.05) / 2) - 1)
    assert run_drift([1.2] * 10) == 0.0  # a shift every evaluation shares is not drift


def test_drift_between_runs_keeps_unchanged_evaluations_same_and_a_real_slowdown_slower():
    # As two runs of the example trace set on an H100: intervals of 1%, unchanged evaluations moving by up to 9%.
    jitter = [1.0, 1.01, 0.99, 1.03, 0.97, 1.05, 0.95, 1.09, 0.92, 1.02, 0.98, 1.04, 0.96, 1.0, 1.01, 0.99]
    base = [(f"s{i}", "w", "PASSED", 1.0) for i in range(len(jitter))] + [("slowed", f"w{i}", "PASSED", 1.0)
                                                                         for i in range(3)]
    candidate = [(f"s{i}", "w", "PASSED", r) for i, r in enumerate(jitter)] + [("slowed", f"w{i}", "PASSED", 1.2)
                                                                              for i in range(3)]
    comparison = compare_runs(run(base), run(candidate))
    assert 0.05 < comparison.drift < 0.10
    verdicts = {(m.base.solution, m.base.workload): m.verdict for m in comparison.matches}
    assert [verdicts[("slowed", f"w{i}")] for i in range(3)] == [SLOWER] * 3
    assert {v for k, v in verdicts.items() if k[0] != "slowed"} == {SAME}
    # Without the drift, one run's intervals alone would have called most of the jitter a change.
    assert sum(judge(1.0, 0.01, r, 0.01, DEFAULT_MIN_CHANGE)[2] != SAME for r in jitter) == 10
    # A whole run 20% slower moves every ratio alike: no drift, and every evaluation SLOWER.
    uniform = compare_runs(run(base), run([(s, w, st, 1.2 * lat) for s, w, st, lat in base]))
    assert uniform.drift == pytest.approx(0.0, abs=1e-12) and {m.verdict for m in uniform.matches} == {SLOWER}


def test_status_changes_geomean_and_regressions():
    base = run([("a", "w1", "PASSED", 1.0), ("a", "w2", "PASSED", 1.0), ("b", "w1", "PASSED", 1.0),
                ("b", "w2", "RUNTIME_ERROR", 1.0), ("c", "w1", "PASSED", 1.0)])
    candidate = run([("a", "w1", "PASSED", 2.0), ("a", "w2", "PASSED", 0.5), ("b", "w1", "INCORRECT_NUMERICAL", 1.0),
                     ("b", "w2", "PASSED", 1.0), ("d", "w1", "PASSED", 1.0)])
    comparison = compare_runs(base, candidate)
    compared = comparison.definitions["d"]
    assert compared.geomean_ratio == pytest.approx(1.0)  # 2.0 and 0.5
    assert compared.verdicts == {SLOWER: 1, FASTER: 1}
    assert [(m.base.solution, m.base.workload) for m in compared.status_changes] == [("b", "w1"), ("b", "w2")]
    assert comparison.only_base == [("d", "c", "w1")] and comparison.only_candidate == [("d", "d", "w1")]
    assert {(m.base.solution, m.base.workload) for m in comparison.regressions(50)} == {("a", "w1"), ("b", "w1")}
    assert {(m.base.solution, m.base.workload) for m in comparison.regressions(100)} == {("b", "w1")}
    order = [(m.base.solution, m.base.workload) for m in reading_order(compared.matches)]
    assert order == [("b", "w1"), ("a", "w1"), ("a", "w2"), ("b", "w2")]

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
    confidence_z,
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


def band(*sigmas, z=1.96, smallest=0.01):
    """The SAME band's upper end for these log standard deviations, as the module docstring defines it."""
    return math.exp(max(z * math.hypot(*sigmas), math.log1p(smallest)))


def test_judge_by_hand():
    assert (DEFAULT_MIN_CHANGE, DEFAULT_NOISE) == (0.01, 0.05)  # what the CLI's help says
    ratio, (low, high), verdict = judge(1.0, (0.97, 1.03), 1.04, (1.0, 1.1), 0.01)
    # SLOWER needs the candidate's reach below (1.04 -> 1.0) and the base's above (1.0 -> 1.03), in log space.
    assert ratio == pytest.approx(1.04) and verdict == SAME
    assert high == pytest.approx(band(math.log(1.04) / 1.96, math.log(1.03) / 1.96))
    assert 1 / low == pytest.approx(band(math.log(1.1 / 1.04) / 1.96, math.log(1 / 0.97) / 1.96))
    assert judge(1.0, (0.97, 1.03), 1.12, (1.1, 1.15), 0.01)[2] == SLOWER
    assert judge(1.0, (0.97, 1.03), 1 / 1.12, (0.86, 0.91), 0.01)[2] == FASTER
    assert judge(1.0, (1.0, 1.0), 1.005, (1.005, 1.005), 0.01)[1:] == ((pytest.approx(1 / 1.01), pytest.approx(1.01)),
                                                                       SAME)  # quiet sides: the smallest change
    assert judge(1.0, (1.0, 1.0), 0.98, (0.98, 0.98), 0.01)[2] == FASTER
    # More standard deviations (many evaluations judged together) widen the band.
    assert judge(1.0, (0.97, 1.03), 1.06, (1.05, 1.08), 0.01)[2] == SLOWER
    assert judge(1.0, (0.97, 1.03), 1.06, (1.05, 1.08), 0.01, z=4.0)[2] == SAME


def test_a_latency_whose_interval_reaches_zero_is_never_called_slower():
    # As seen on an H100: one trial of three came out 15x slower than the others, so the recorded latency (their
    # mean) is 6x the base's quiet one, and the trials' half range reaches below zero.
    base = make_trace("d", "s", "w", latency=0.12, extra={"latency_ci95_ms": [0.118, 0.122]})
    noisy = {"latency_ci95_ms": [0.12, 1.7], "trial_latencies_ms": [0.12, 1.91, 0.13]}
    candidate = make_trace("d", "s", "w", latency=0.72, extra=noisy)
    match = compare_runs(results([base], {}), results([candidate], {})).matches[0]
    assert match.ratio == pytest.approx(6.0) and match.band[1] == math.inf and match.verdict == SAME
    # It can still be called FASTER, by more than its reach above.
    faster = compare_runs(results([make_trace("d", "s", "w", latency=3.0, extra={"latency_ci95_ms": [2.9, 3.1]})], {}),
                          results([candidate], {})).matches[0]
    assert faster.verdict == FASTER


def test_the_same_change_is_a_change_only_beyond_the_noise():
    base = [("s", "w", "PASSED", 1.0)]
    candidate = [("s", "w", "PASSED", 1.03)]
    quiet = compare_runs(run(base, 0.005), run(candidate, 0.005)).matches[0]
    noisy = compare_runs(run(base, 0.03), run(candidate, 0.03)).matches[0]
    assert quiet.verdict == SLOWER and not quiet.assumed_noise
    assert noisy.verdict == SAME
    assert noisy.band[1] == pytest.approx(band(-math.log(0.97) / 1.96, math.log(1.03) / 1.96), rel=1e-4)


def test_without_a_recorded_spread_the_default_noise_is_assumed_and_said():
    base, candidate = run([("s", "w", "PASSED", 1.0)], None), run([("s", "w", "PASSED", 1.06)], None)
    match = compare_runs(base, candidate).matches[0]
    assert match.assumed_noise and match.band[1] == pytest.approx(band(*[math.log(1.05) / 1.96] * 2), rel=1e-4)
    assert match.verdict == SAME
    assert compare_runs(base, candidate, default_noise=0.01).matches[0].verdict == SLOWER
    mixed = compare_runs(run([("s", "w", "PASSED", 1.0)], 0.001), candidate)
    assert mixed.matches[0].assumed_noise and mixed.assumed_noise == 1


def test_confidence_grows_with_the_evaluations_judged_together():
    assert confidence_z(1) == pytest.approx(1.96, abs=1e-3)
    assert confidence_z(30) == pytest.approx(3.14, abs=0.01)  # 0.05 / 30 two-sided
    assert confidence_z(0) == confidence_z(1)


def test_run_drift_by_hand():
    assert run_drift([1.5, 0.5] * 3) == 0.0  # too few evaluations to tell: no drift assumed
    # Deviations of log ratios from their median 0: 0 x 4, log 1.05 x 4, so the median deviation is log(1.05) / 2.
    ratios = [1.0] * 4 + [1.05, 1 / 1.05, 1.05, 1 / 1.05]
    assert len(ratios) == DRIFT_MIN_MATCHES
    assert run_drift(ratios) == pytest.approx(1.4826 * math.log(1.05) / 2)
    assert run_drift([1.2] * 10) == 0.0  # a shift every evaluation shares is not drift


def test_drift_between_runs_keeps_unchanged_evaluations_same_and_a_real_slowdown_slower():
    # As two runs of the example trace set on an H100: intervals of 1%, 27 unchanged evaluations moving by up to
    # 10%, and one solution 20% slower on purpose, measured at 1.17x-1.18x.
    jitter = [1.0, 1.01, 0.99, 1.03, 0.97, 1.05, 0.95, 1.09, 0.92, 1.02, 0.98, 1.02, 0.98, 1.0, 1.01, 0.99, 0.9,
              1.02, 0.97, 1.06, 0.96, 1.0, 1.03, 0.98, 1.01, 0.99, 1.02]
    slowed = [1.17, 1.18, 1.17]
    base = [(f"s{i}", "w", "PASSED", 1.0) for i in range(len(jitter))] + [("slowed", f"w{i}", "PASSED", 1.0)
                                                                         for i in range(3)]
    candidate = [(f"s{i}", "w", "PASSED", r) for i, r in enumerate(jitter)] + [("slowed", f"w{i}", "PASSED", r)
                                                                              for i, r in enumerate(slowed)]
    comparison = compare_runs(run(base), run(candidate))
    assert 0.05 < comparison.drift < 0.10 and comparison.z == pytest.approx(confidence_z(30))
    verdicts = {(m.base.solution, m.base.workload): m.verdict for m in comparison.matches}
    assert [verdicts[("slowed", f"w{i}")] for i in range(3)] == [SLOWER] * 3
    assert {v for k, v in verdicts.items() if k[0] != "slowed"} == {SAME}
    # Judged one at a time at 95% each, the 0.9x evaluation would have been called FASTER.
    assert 1 / 0.9 > band(-math.log(0.99) / 1.96, math.log(1.01) / 1.96, comparison.drift_sigma)
    # Without the drift, one run's intervals alone would have called most of the jitter a change.
    assert sum(judge(1.0, (0.99, 1.01), r, (0.99 * r, 1.01 * r), DEFAULT_MIN_CHANGE)[2] != SAME for r in jitter) > 15
    # A whole run 20% slower moves every ratio alike: no drift, and every evaluation SLOWER.
    uniform = compare_runs(run(base), run([(s, w, st, 1.2 * lat) for s, w, st, lat in base]))
    assert uniform.drift == pytest.approx(0.0, abs=1e-12) and {m.verdict for m in uniform.matches} == {SLOWER}


def test_a_latency_the_judge_set_is_never_called_a_change_and_stays_out_of_the_drift():
    # As in two runs of the example trace set on an H100: an honest host-bound torch solution whose claim (0.1 ms)
    # the judge believed in one run and bounded in the other (0.26 ms, the least its clock allowed).
    base = [(f"s{i}", "w", "PASSED", 1.0) for i in range(10)] + [("host_bound", "w", "PASSED", 0.1)]
    candidate = [(f"s{i}", "w", "PASSED", 1.0 + 0.002 * i) for i in range(10)] + [("host_bound", "w", "PASSED", 0.26)]
    bounded = {"latency_ci95_ms": [0.255, 0.265], "judge_estimated_trials": 1}
    candidate_results = [r for r in run(candidate) if r.solution != "host_bound"] + results(
        [make_trace("d", "host_bound", "w", latency=0.26, extra=bounded)], {})
    comparison = compare_runs(run(base), candidate_results)
    match = next(m for m in comparison.matches if m.base.solution == "host_bound")
    assert match.judge_bounded and match.verdict == SAME and match.ratio == pytest.approx(2.6)
    assert match.band == (0.0, math.inf) and comparison.judge_bounded == 1
    # Neither in the drift (the others moved by at most 1.8%) nor in the count that sets z.
    assert comparison.drift < 0.02 and comparison.z == pytest.approx(confidence_z(10))
    # Without the mark the same latencies are a change.
    unmarked = compare_runs(run(base), run(candidate))
    assert next(m for m in unmarked.matches if m.base.solution == "host_bound").verdict == SLOWER
    # Either side's mark counts.
    swapped = compare_runs(candidate_results, run(base))
    assert next(m for m in swapped.matches if m.base.solution == "host_bound").judge_bounded


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

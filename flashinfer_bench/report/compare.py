"""Two runs compared evaluation by evaluation, matched by (definition, solution, workload).

Latencies are compared in log space, where a ratio and its inverse are as far from 1. Each side's noise is its
95% interval (``noise.Spread.interval``), read as standard deviations of its log latency below and above it
(an interval that reaches 0 bounds nothing below). With the runs' drift d (below), the ratio r = candidate /
base is called SLOWER when log r exceeds z * sqrt(below_c^2 + above_b^2 + d^2) (the candidate may truly be
lower and the base higher than measured), FASTER when -log r exceeds z * sqrt(above_c^2 + below_b^2 + d^2),
and SAME between; either way by at least ``min_change``. A side that recorded no spread is given
``default_noise`` instead, and the match says so. A side whose latency the judge's clock set (a trial whose
timing claim was not believed: bench/evaluators/timed.py) holds a bound that moves with the host's speed, not a
measurement of its kernels: such a match is SAME whatever its ratio, says so, and takes no part in the drift or
in z's count.

z makes the calls hold for the comparison as a whole: with N evaluations timed in both runs, each is judged at
the two-sided normal quantile of FALSE_CALL_RATE / N (Bonferroni), so that all unchanged evaluations together
are called a change with a chance of at most FALSE_CALL_RATE; for one evaluation z is 1.96. At 95% each, a
report of 30 unchanged evaluations would call one or two of them a change by chance alone.

One run's interval says how well that run pinned its median down, not how far another run of the same code
lands: across two runs of the example trace set on an H100 (docs/measurements.md) unchanged evaluations moved by
up to 10% while their intervals reached 1-2%. The drift is measured from the two runs themselves: the spread of
log(candidate / base) over every evaluation timed in both (the median absolute deviation from their median,
scaled to a normal spread's standard deviation, which a minority of real changes barely moves), once at least
DRIFT_MIN_MATCHES evaluations are timed in both; with fewer it is 0. A change shared by all evaluations (a
whole run 20% slower) moves the median, not the spread, and is still called.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import NormalDist

from flashinfer_bench.report.noise import DEFAULT_NOISE
from flashinfer_bench.report.results import Result
from flashinfer_bench.report.summary import PASSED, geometric_mean

SAME, FASTER, SLOWER = "SAME", "FASTER", "SLOWER"
#: The smallest relative change called a change, however quiet both sides were: runs on different days differ
#: by more than one run's interval says (clocks, temperature, the other tenants of the machine).
DEFAULT_MIN_CHANGE = 0.01
#: The fewest evaluations timed in both runs from which their drift is measured.
DRIFT_MIN_MATCHES = 8
#: The chance, over a whole comparison, that any unchanged evaluation is called a change.
FALSE_CALL_RATE = 0.05
#: A normal spread's standard deviation per median absolute deviation, and its 95% reach per deviation.
MAD_TO_SIGMA = 1.4826
REACH_95 = 1.96

#: A latency's 95% interval [low, high] (low may be 0 or less: unbounded below).
Interval = tuple[float, float]


@dataclass(frozen=True)
class Match:
    base: Result
    candidate: Result
    #: Both PASSED: candidate latency / base latency, the ratios between which it is SAME (FASTER below the
    #: first, SLOWER above the second, which is infinite where the noise bounds nothing), and the call.
    ratio: float | None = None
    band: tuple[float, float] | None = None
    verdict: str | None = None
    #: The noise of a side was assumed (it recorded no spread).
    assumed_noise: bool = False
    #: A side's latency was set by the judge's clock (the module docstring): no change is called.
    judge_bounded: bool = False

    @property
    def status_changed(self) -> bool:
        return self.base.status != self.candidate.status

    @property
    def broke(self) -> bool:
        """Passed in the base run and not in the candidate."""
        return self.base.status == PASSED and self.candidate.status != PASSED

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1.0) * 100.0

    @property
    def rank(self) -> int:
        """Where a reader wants it: what broke, then SLOWER, FASTER, what was fixed, other status changes, SAME,
        and evaluations that failed the same way in both runs."""
        if self.broke:
            return 0
        if self.verdict is not None:
            return {SLOWER: 1, FASTER: 2, SAME: 5}[self.verdict]
        if self.candidate.status == PASSED:
            return 3
        return 4 if self.status_changed else 6


def reading_order(matches: Iterable[Match]) -> list[Match]:
    return sorted(matches, key=lambda m: (m.rank, m.base.solution, sorted(m.base.axes.items()), m.base.workload))


@dataclass
class DefinitionComparison:
    definition: str
    matches: list[Match] = field(default_factory=list)

    @property
    def timed(self) -> list[Match]:
        return [m for m in self.matches if m.ratio is not None]

    @property
    def geomean_ratio(self) -> float | None:
        """Geometric mean of candidate / base over the evaluations that passed in both runs."""
        return geometric_mean([m.ratio for m in self.timed if m.ratio is not None])

    @property
    def verdicts(self) -> Counter[str]:
        return Counter(m.verdict for m in self.timed if m.verdict is not None)

    @property
    def status_changes(self) -> list[Match]:
        return [m for m in self.matches if m.status_changed]


@dataclass
class Comparison:
    definitions: dict[str, DefinitionComparison]
    #: (definition, solution, workload) evaluated in one run only.
    only_base: list[tuple[str, str, str]]
    only_candidate: list[tuple[str, str, str]]
    min_change: float
    default_noise: float
    #: The drift between the two runs: the standard deviation of log(candidate / base) of unchanged
    #: evaluations (see the module docstring); 0 below DRIFT_MIN_MATCHES.
    drift_sigma: float = 0.0
    #: How many standard deviations out a change is called (see the module docstring).
    z: float = REACH_95

    @property
    def drift(self) -> float:
        """The drift as the relative reach of one evaluation's 95% interval."""
        return math.exp(REACH_95 * self.drift_sigma) - 1.0

    @property
    def matches(self) -> list[Match]:
        return [m for comparison in self.definitions.values() for m in comparison.matches]

    @property
    def assumed_noise(self) -> int:
        """How many timed matches had at least one side without a recorded spread."""
        return sum(m.assumed_noise for m in self.matches if m.ratio is not None)

    @property
    def judge_bounded(self) -> int:
        """How many timed matches had a side whose latency the judge's clock set."""
        return sum(m.judge_bounded for m in self.matches)

    def regressions(self, threshold_pct: float) -> list[Match]:
        """Matches that got SLOWER by more than ``threshold_pct`` percent, or that stopped passing."""
        return [m for m in self.matches
                if m.broke or (m.verdict == SLOWER and m.change_pct is not None and m.change_pct > threshold_pct)]


def confidence_z(compared: int) -> float:
    """Standard deviations out at which a change is called when ``compared`` evaluations are judged together
    (the module docstring): 1.96 for one."""
    return NormalDist().inv_cdf(1.0 - FALSE_CALL_RATE / (2 * max(compared, 1)))


def log_sigmas(latency_ms: float, interval: Interval) -> tuple[float, float]:
    """(below, above): standard deviations of log(latency) read from its 95% interval; below is infinite when the
    interval reaches 0."""
    low, high = interval
    below = math.log(latency_ms / low) / REACH_95 if low > 0 else math.inf
    return below, math.log(high / latency_ms) / REACH_95


def judge(base_ms: float, base_interval: Interval, candidate_ms: float, candidate_interval: Interval,
          min_change: float, drift_sigma: float = 0.0, z: float = REACH_95) -> tuple[float, tuple[float, float], str]:
    """(ratio, band, verdict) for two latencies with their 95% intervals (see the module docstring)."""
    ratio = candidate_ms / base_ms
    base_below, base_above = log_sigmas(base_ms, base_interval)
    candidate_below, candidate_above = log_sigmas(candidate_ms, candidate_interval)
    smallest = math.log1p(min_change)
    up = max(z * math.hypot(candidate_below, base_above, drift_sigma), smallest)
    down = max(z * math.hypot(candidate_above, base_below, drift_sigma), smallest)
    band = (math.exp(-down), math.exp(up))
    if ratio > band[1]:
        return ratio, band, SLOWER
    if ratio < band[0]:
        return ratio, band, FASTER
    return ratio, band, SAME


def compare_runs(base: Iterable[Result], candidate: Iterable[Result], *, min_change: float = DEFAULT_MIN_CHANGE,
                 default_noise: float = DEFAULT_NOISE) -> Comparison:
    base_by_key = {r.key: r for r in base}
    candidate_by_key = {r.key: r for r in candidate}
    pairs = [(base_by_key[key], candidate_by_key[key]) for key in sorted(base_by_key.keys() & candidate_by_key.keys())]
    ratios = [c.latency_ms / b.latency_ms for b, c in pairs
              if b.latency_ms is not None and c.latency_ms is not None and not _judge_bounded(b, c)]
    drift_sigma, z = run_drift(ratios), confidence_z(len(ratios))
    definitions: dict[str, DefinitionComparison] = {}
    for b, c in pairs:
        match = _match(b, c, min_change, default_noise, drift_sigma, z)
        definitions.setdefault(b.key[0], DefinitionComparison(b.key[0])).matches.append(match)
    return Comparison(definitions, sorted(base_by_key.keys() - candidate_by_key.keys()),
                      sorted(candidate_by_key.keys() - base_by_key.keys()), min_change, default_noise, drift_sigma, z)


def run_drift(ratios: list[float]) -> float:
    """The standard deviation of log ratio between two runs' unchanged evaluations (the module docstring)."""
    if len(ratios) < DRIFT_MIN_MATCHES:
        return 0.0
    logs = [math.log(r) for r in ratios]
    center = statistics.median(logs)
    return MAD_TO_SIGMA * statistics.median(abs(v - center) for v in logs)


def _interval(result: Result, default_noise: float) -> tuple[Interval, bool]:
    """The result's 95% interval, and whether it was assumed (``default_noise`` either side, in log space)."""
    assert result.latency_ms is not None
    interval = result.spread.interval(result.latency_ms)
    if interval is not None:
        return interval, False
    return (result.latency_ms / (1.0 + default_noise), result.latency_ms * (1.0 + default_noise)), True


def _judge_bounded(base: Result, candidate: Result) -> bool:
    return bool(base.spread.judge_estimated_trials or candidate.spread.judge_estimated_trials)


def _match(base: Result, candidate: Result, min_change: float, default_noise: float, drift_sigma: float,
           z: float) -> Match:
    if base.latency_ms is None or candidate.latency_ms is None:
        return Match(base, candidate)
    if _judge_bounded(base, candidate):
        return Match(base, candidate, candidate.latency_ms / base.latency_ms, (0.0, math.inf), SAME,
                     judge_bounded=True)
    (base_interval, base_assumed), (candidate_interval, candidate_assumed) = (
        _interval(base, default_noise), _interval(candidate, default_noise))
    ratio, band, verdict = judge(base.latency_ms, base_interval, candidate.latency_ms, candidate_interval,
                                 min_change, drift_sigma, z)
    return Match(base, candidate, ratio, band, verdict, assumed_noise=base_assumed or candidate_assumed)

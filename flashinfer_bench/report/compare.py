"""Two runs compared evaluation by evaluation, matched by (definition, solution, workload).

A latency change is called only when it is larger than the noise of both measurements and the drift between
the two runs: with relative noises n_b and n_c (each the reach of a 95% interval,
``noise.Spread.relative_noise``) and the runs' drift d, the ratio candidate / base is called SLOWER above 1 + t
and FASTER below 1 / (1 + t), where t = max(sqrt(n_b^2 + n_c^2 + d^2), min_change), and SAME between. A side
that recorded no spread is given ``default_noise`` instead, and the match says so.

One run's interval says how well that run pinned its median down, not how far another run of the same code
lands: across two runs of the example trace set on an H100 (docs/measurements.md) unchanged evaluations moved by
up to 10% while their intervals reached 1-2%. The drift is measured from the two runs themselves: the spread of
log(candidate / base) over every evaluation timed in both (the median absolute deviation from their median,
scaled to a 95% reach of a normal spread, which a minority of real changes barely moves), once at least
DRIFT_MIN_MATCHES evaluations are timed in both; with fewer it is 0. A change shared by all evaluations (a
whole run 20% slower) moves the median, not the spread, and is still called.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from flashinfer_bench.bench.summary import PASSED, geometric_mean
from flashinfer_bench.report.noise import DEFAULT_NOISE
from flashinfer_bench.report.results import Result

SAME, FASTER, SLOWER = "SAME", "FASTER", "SLOWER"
#: The smallest relative change called a change, however quiet both sides were: runs on different days differ
#: by more than one run's interval says (clocks, temperature, the other tenants of the machine).
DEFAULT_MIN_CHANGE = 0.01
#: The fewest evaluations timed in both runs from which their drift is measured.
DRIFT_MIN_MATCHES = 8
#: A normal spread's standard deviation per median absolute deviation, and its 95% reach per deviation.
MAD_TO_SIGMA = 1.4826
REACH_95 = 1.96


@dataclass(frozen=True)
class Match:
    base: Result
    candidate: Result
    #: Both PASSED: candidate latency / base latency, the relative change needed to call it, and the call.
    ratio: float | None = None
    threshold: float | None = None
    verdict: str | None = None
    #: The noise of a side was assumed (it recorded no spread).
    assumed_noise: bool = False

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
    #: The drift between the two runs, relative (see the module docstring): 0 below DRIFT_MIN_MATCHES.
    drift: float = 0.0

    @property
    def matches(self) -> list[Match]:
        return [m for comparison in self.definitions.values() for m in comparison.matches]

    @property
    def assumed_noise(self) -> int:
        """How many timed matches had at least one side without a recorded spread."""
        return sum(m.assumed_noise for m in self.matches if m.ratio is not None)

    def regressions(self, threshold_pct: float) -> list[Match]:
        """Matches that got SLOWER by more than ``threshold_pct`` percent, or that stopped passing."""
        return [m for m in self.matches
                if m.broke or (m.verdict == SLOWER and m.change_pct is not None and m.change_pct > threshold_pct)]


def judge(base_ms: float, base_noise: float, candidate_ms: float, candidate_noise: float,
          min_change: float, drift: float = 0.0) -> tuple[float, float, str]:
    """(ratio, threshold, verdict) for two latencies with their relative noises (see the module docstring)."""
    ratio = candidate_ms / base_ms
    threshold = max(math.hypot(base_noise, candidate_noise, drift), min_change)
    if ratio > 1.0 + threshold:
        return ratio, threshold, SLOWER
    if ratio < 1.0 / (1.0 + threshold):
        return ratio, threshold, FASTER
    return ratio, threshold, SAME


def compare_runs(base: Iterable[Result], candidate: Iterable[Result], *, min_change: float = DEFAULT_MIN_CHANGE,
                 default_noise: float = DEFAULT_NOISE) -> Comparison:
    base_by_key = {r.key: r for r in base}
    candidate_by_key = {r.key: r for r in candidate}
    pairs = [(base_by_key[key], candidate_by_key[key]) for key in sorted(base_by_key.keys() & candidate_by_key.keys())]
    drift = run_drift([c.latency_ms / b.latency_ms for b, c in pairs
                       if b.latency_ms is not None and c.latency_ms is not None])
    definitions: dict[str, DefinitionComparison] = {}
    for b, c in pairs:
        match = _match(b, c, min_change, default_noise, drift)
        definitions.setdefault(b.key[0], DefinitionComparison(b.key[0])).matches.append(match)
    return Comparison(definitions, sorted(base_by_key.keys() - candidate_by_key.keys()),
                      sorted(candidate_by_key.keys() - base_by_key.keys()), min_change, default_noise, drift)


def run_drift(ratios: list[float]) -> float:
    """How far two runs' latencies of unchanged evaluations drift apart, relative (the module docstring)."""
    if len(ratios) < DRIFT_MIN_MATCHES:
        return 0.0
    logs = [math.log(r) for r in ratios]
    center = statistics.median(logs)
    deviation = statistics.median(abs(v - center) for v in logs)
    return math.exp(REACH_95 * MAD_TO_SIGMA * deviation) - 1.0


def _match(base: Result, candidate: Result, min_change: float, default_noise: float, drift: float) -> Match:
    if base.latency_ms is None or candidate.latency_ms is None:
        return Match(base, candidate)
    base_noise, candidate_noise = base.measured_noise, candidate.measured_noise
    ratio, threshold, verdict = judge(
        base.latency_ms, default_noise if base_noise is None else base_noise,
        candidate.latency_ms, default_noise if candidate_noise is None else candidate_noise, min_change, drift)
    return Match(base, candidate, ratio, threshold, verdict, assumed_noise=base_noise is None or candidate_noise is None)

"""Two runs compared evaluation by evaluation, matched by (definition, solution, workload).

A latency change is called only when it is larger than the noise of both measurements: with relative noises
n_b and n_c (each the reach of a 95% interval, ``noise.Spread.relative_noise``), the ratio candidate / base is
called SLOWER above 1 + t and FASTER below 1 / (1 + t), where t = max(sqrt(n_b^2 + n_c^2), min_change), and
SAME between. A side that recorded no spread is given ``default_noise`` instead, and the match says so.
"""

from __future__ import annotations

import math
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
          min_change: float) -> tuple[float, float, str]:
    """(ratio, threshold, verdict) for two latencies with their relative noises (see the module docstring)."""
    ratio = candidate_ms / base_ms
    threshold = max(math.hypot(base_noise, candidate_noise), min_change)
    if ratio > 1.0 + threshold:
        return ratio, threshold, SLOWER
    if ratio < 1.0 / (1.0 + threshold):
        return ratio, threshold, FASTER
    return ratio, threshold, SAME


def compare_runs(base: Iterable[Result], candidate: Iterable[Result], *, min_change: float = DEFAULT_MIN_CHANGE,
                 default_noise: float = DEFAULT_NOISE) -> Comparison:
    base_by_key = {r.key: r for r in base}
    candidate_by_key = {r.key: r for r in candidate}
    definitions: dict[str, DefinitionComparison] = {}
    for key in sorted(base_by_key.keys() & candidate_by_key.keys()):
        match = _match(base_by_key[key], candidate_by_key[key], min_change, default_noise)
        definitions.setdefault(key[0], DefinitionComparison(key[0])).matches.append(match)
    return Comparison(definitions, sorted(base_by_key.keys() - candidate_by_key.keys()),
                      sorted(candidate_by_key.keys() - base_by_key.keys()), min_change, default_noise)


def _match(base: Result, candidate: Result, min_change: float, default_noise: float) -> Match:
    if base.latency_ms is None or candidate.latency_ms is None:
        return Match(base, candidate)
    base_noise, candidate_noise = base.measured_noise, candidate.measured_noise
    ratio, threshold, verdict = judge(
        base.latency_ms, default_noise if base_noise is None else base_noise,
        candidate.latency_ms, default_noise if candidate_noise is None else candidate_noise, min_change)
    return Match(base, candidate, ratio, threshold, verdict, assumed_noise=base_noise is None or candidate_noise is None)

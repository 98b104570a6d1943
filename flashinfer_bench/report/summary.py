"""Summaries of result traces, per (definition, solution) and per author: how many evaluations passed, the mean
and geometric-mean speed-up, fast_p, and how often a solution was the fastest correct one; the best solution per
definition.

Every number counts one evaluation per (definition, solution, workload): the latest trace (docs/reports.md says
exactly how each one is computed).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean

from flashinfer_bench.data import EvaluationStatus, Trace
from flashinfer_bench.report.noise import read_spread

PASSED = EvaluationStatus.PASSED.value
#: The author of a solution that the trace set does not hold (or when only trace files were read).
UNKNOWN_AUTHOR = "unknown"


def latest_traces(traces: Iterable[Trace]) -> list[Trace]:
    """One result trace per (definition, solution, workload): the one with the latest timestamp, the later one
    read when two have the same. Workload traces are left out."""
    latest: dict[tuple[str, str, str], Trace] = {}
    for trace in traces:
        evaluation = trace.evaluation
        if trace.solution is None or evaluation is None:
            continue
        key = (trace.definition, trace.solution, trace.workload.uuid)
        kept = latest.get(key)
        if kept is None or kept.evaluation is None or evaluation.timestamp >= kept.evaluation.timestamp:
            latest[key] = trace
    return list(latest.values())


def passed_latency(trace: Trace) -> float | None:
    """The latency of a PASSED evaluation, None for any other (or a latency of 0, which nothing measures)."""
    evaluation = trace.evaluation
    if evaluation is None or evaluation.status.value != PASSED or evaluation.performance is None:
        return None
    return evaluation.performance.latency_ms if evaluation.performance.latency_ms > 0 else None


def fastest_latencies(latest: Iterable[Trace]) -> dict[tuple[str, str], float]:
    """(definition, workload uuid) -> the lowest latency among the PASSED evaluations of that workload."""
    fastest: dict[tuple[str, str], float] = {}
    for trace in latest:
        latency = passed_latency(trace)
        if latency is not None:
            key = (trace.definition, trace.workload.uuid)
            fastest[key] = min(latency, fastest.get(key, math.inf))
    return fastest


def geometric_mean(values: Sequence[float]) -> float | None:
    """exp(mean(log v)) over positive values; None for none."""
    return math.exp(fmean(math.log(v) for v in values)) if values else None


def fraction_at_least(values: Iterable[float], total: int, p: float) -> float | None:
    """The share of ``total`` items whose value is at least ``p`` (items left out of ``values`` count as below
    every p); None when there are no items."""
    return sum(1 for v in values if v >= p) / total if total else None


@dataclass
class Tally:
    """What a group of evaluations (one solution's, or one author's) adds up to."""

    statuses: Counter[str] = field(default_factory=Counter)
    #: speedup_factor of each PASSED evaluation; 0.0 is upstream's "not measured" (the reference was not timed).
    speedups: list[float] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    #: For each workload with a correct solution that this group was evaluated on: the lowest latency among the
    #: correct solutions of the workload over this group's own (its best, for an author); 0.0 where it failed.
    #: 1.0 is a win.
    to_fastest: list[float] = field(default_factory=list)
    #: PASSED evaluations whose latency the judge's clock set in at least one trial (the solution's own timing
    #: was not believed: bench/evaluators/timed.py); their latencies are bounds, not measurements.
    judge_set: int = 0

    @property
    def evaluated(self) -> int:
        return sum(self.statuses.values())

    @property
    def passed(self) -> int:
        return self.statuses[PASSED]

    @property
    def success_rate(self) -> float | None:
        return self.passed / self.evaluated if self.evaluated else None

    @property
    def measured_speedups(self) -> list[float]:
        return [s for s in self.speedups if s > 0]

    @property
    def mean_speedup(self) -> float | None:
        measured = self.measured_speedups
        return fmean(measured) if measured else None

    @property
    def geomean_speedup(self) -> float | None:
        return geometric_mean(self.measured_speedups)

    @property
    def mean_latency_ms(self) -> float | None:
        return fmean(self.latencies_ms) if self.latencies_ms else None

    def fast_p(self, p: float) -> float | None:
        """Share of the evaluations that passed with a speed-up of at least ``p`` (for p > 0, None when no
        speed-up was measured at all: the reference was not timed)."""
        if p > 0 and not self.measured_speedups:
            return None
        return fraction_at_least(self.speedups, self.evaluated, p)

    def win_at(self, p: float) -> float | None:
        """win@p: share of its workloads where this group is within a factor 1/p of the fastest (p <= 1)."""
        return fraction_at_least(self.to_fastest, len(self.to_fastest), p)

    @property
    def win_rate(self) -> float | None:
        return self.win_at(1.0)

    def add(self, trace: Trace) -> None:
        evaluation = trace.evaluation
        assert evaluation is not None
        self.statuses[evaluation.status.value] += 1
        if evaluation.status.value == PASSED and evaluation.performance is not None:
            self.speedups.append(evaluation.performance.speedup_factor)
            self.latencies_ms.append(evaluation.performance.latency_ms)
            self.judge_set += bool(read_spread(evaluation.performance).judge_estimated_trials)


@dataclass
class SolutionSummary(Tally):
    definition: str = ""
    solution: str = ""
    author: str = UNKNOWN_AUTHOR


@dataclass
class AuthorSummary(Tally):
    author: str = UNKNOWN_AUTHOR
    definitions: set[str] = field(default_factory=set)


def summarize(traces: Iterable[Trace], authors: Mapping[str, str] | None = None
              ) -> dict[str, dict[str, SolutionSummary]]:
    """definition -> solution -> summary of the latest trace per workload. ``authors`` maps solution names to
    their authors (unknown ones get ``unknown``)."""
    authors = authors or {}
    latest = latest_traces(traces)
    fastest = fastest_latencies(latest)
    result: dict[str, dict[str, SolutionSummary]] = {}
    for trace in latest:
        assert trace.solution is not None
        summary = result.setdefault(trace.definition, {}).get(trace.solution)
        if summary is None:
            summary = SolutionSummary(definition=trace.definition, solution=trace.solution,
                                      author=authors.get(trace.solution, UNKNOWN_AUTHOR))
            result[trace.definition][trace.solution] = summary
        summary.add(trace)
        best = fastest.get((trace.definition, trace.workload.uuid))
        if best is not None:
            summary.to_fastest.append(_ratio(best, passed_latency(trace)))
    return result


def summarize_authors(traces: Iterable[Trace], authors: Mapping[str, str]) -> dict[str, AuthorSummary]:
    """author -> summary over every latest evaluation of the author's solutions. An author wins a workload when
    one of its solutions has the lowest latency among all correct solutions of that workload."""
    latest = latest_traces(traces)
    fastest = fastest_latencies(latest)
    result: dict[str, AuthorSummary] = {}
    own_best: dict[tuple[str, str, str], float | None] = {}  # (author, definition, workload) -> best latency
    for trace in latest:
        assert trace.solution is not None
        author = authors.get(trace.solution, UNKNOWN_AUTHOR)
        summary = result.setdefault(author, AuthorSummary(author=author))
        summary.add(trace)
        summary.definitions.add(trace.definition)
        key = (author, trace.definition, trace.workload.uuid)
        latency = passed_latency(trace)
        kept = own_best.get(key)
        own_best[key] = latency if kept is None else (kept if latency is None else min(kept, latency))
    for (author, definition, workload), latency in own_best.items():
        best = fastest.get((definition, workload))
        if best is not None:
            result[author].to_fastest.append(_ratio(best, latency))
    return result


def _ratio(fastest: float, latency: float | None) -> float:
    return fastest / latency if latency is not None else 0.0


def best_solutions(summaries: dict[str, dict[str, SolutionSummary]]) -> dict[str, SolutionSummary | None]:
    """Per definition: the solution with the highest mean speedup among those that passed every workload."""
    best: dict[str, SolutionSummary | None] = {}
    for definition, by_solution in summaries.items():
        candidates = [s for s in by_solution.values() if s.evaluated and s.passed == s.evaluated and s.mean_speedup]
        best[definition] = max(candidates, key=lambda s: s.mean_speedup or 0.0, default=None)
    return best

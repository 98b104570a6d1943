"""Summaries of result traces: per definition and solution, pass counts and mean speedup; the best solution."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import fmean

from flashinfer_bench.data import EvaluationStatus, Trace


@dataclass
class SolutionSummary:
    definition: str
    solution: str
    statuses: Counter[str] = field(default_factory=Counter)
    speedups: list[float] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)

    @property
    def evaluated(self) -> int:
        return sum(self.statuses.values())

    @property
    def passed(self) -> int:
        return self.statuses[EvaluationStatus.PASSED.value]

    @property
    def mean_speedup(self) -> float | None:
        # 0.0 is upstream's "not measured" (the reference was not timed); NaN came from older files.
        measured = [s for s in self.speedups if s > 0]
        return fmean(measured) if measured else None

    @property
    def mean_latency_ms(self) -> float | None:
        return fmean(self.latencies_ms) if self.latencies_ms else None


def summarize(traces: Iterable[Trace]) -> dict[str, dict[str, SolutionSummary]]:
    """definition -> solution -> summary; for repeated (solution, workload) traces the latest one counts."""
    latest: dict[tuple[str, str, str], Trace] = {}
    for trace in traces:
        if trace.solution is not None and trace.evaluation is not None:
            latest[(trace.definition, trace.solution, trace.workload.uuid)] = trace
    result: dict[str, dict[str, SolutionSummary]] = {}
    for (definition, solution, _), trace in latest.items():
        summary = result.setdefault(definition, {}).setdefault(solution, SolutionSummary(definition, solution))
        evaluation = trace.evaluation
        assert evaluation is not None
        summary.statuses[evaluation.status.value] += 1
        if evaluation.status is EvaluationStatus.PASSED and evaluation.performance is not None:
            summary.speedups.append(evaluation.performance.speedup_factor)
            summary.latencies_ms.append(evaluation.performance.latency_ms)
    return result


def best_solutions(summaries: dict[str, dict[str, SolutionSummary]]) -> dict[str, SolutionSummary | None]:
    """Per definition: the solution with the highest mean speedup among those that passed every workload."""
    best: dict[str, SolutionSummary | None] = {}
    for definition, by_solution in summaries.items():
        candidates = [s for s in by_solution.values() if s.evaluated and s.passed == s.evaluated and s.mean_speedup]
        best[definition] = max(candidates, key=lambda s: s.mean_speedup or 0.0, default=None)
    return best

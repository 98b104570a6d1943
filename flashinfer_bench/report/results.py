"""One record per evaluation a report shows: the latest trace of each (definition, solution, workload), with its
numbers, intervals and conditions read out of the trace."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from flashinfer_bench.data import Trace
from flashinfer_bench.report.noise import Spread, read_spread
from flashinfer_bench.report.summary import UNKNOWN_AUTHOR, latest_traces, passed_latency

Interval = tuple[float, float]
NOT_RECORDED = "not recorded"
#: Characters of a failed evaluation's log kept for a report (its first line says what went wrong).
LOG_EXCERPT = 400


@dataclass(frozen=True)
class Result:
    definition: str
    solution: str
    author: str
    workload: str
    axes: Mapping[str, int]
    status: str
    #: PASSED only: the solution's latency, the reference's (None when not timed) and their ratio.
    latency_ms: float | None
    reference_ms: float | None
    speedup: float | None
    spread: Spread
    hardware: str
    libs: Mapping[str, str]
    timestamp: str
    log_excerpt: str

    @property
    def latency_ci(self) -> Interval | None:
        return self.spread.latency_ci95_ms if self.latency_ms is not None else None

    @property
    def reference_ci(self) -> Interval | None:
        return self.spread.reference_ci95_ms if self.reference_ms is not None else None

    @property
    def speedup_ci(self) -> Interval | None:
        """reference / latency at the ends of both intervals (the reference's own latency where it has none)."""
        latency_ci, reference = self.latency_ci, self.reference_ms
        if latency_ci is None or reference is None:
            return None
        ref_low, ref_high = self.reference_ci or (reference, reference)
        return ref_low / latency_ci[1], ref_high / latency_ci[0]

    @property
    def key(self) -> tuple[str, str, str]:
        return self.definition, self.solution, self.workload

    @property
    def measured_noise(self) -> float | None:
        return self.spread.relative_noise(self.latency_ms) if self.latency_ms is not None else None


def results(traces: Iterable[Trace], authors: Mapping[str, str]) -> list[Result]:
    """A Result per latest trace, ordered by definition, solution and workload axes."""
    records = [_result(trace, authors) for trace in latest_traces(traces)]
    return sorted(records, key=lambda r: (r.definition, r.solution, sorted(r.axes.items()), r.workload))


def _result(trace: Trace, authors: Mapping[str, str]) -> Result:
    evaluation = trace.evaluation
    assert evaluation is not None and trace.solution is not None
    performance = evaluation.performance
    latency = passed_latency(trace)
    reference = performance.reference_latency_ms if latency is not None and performance is not None else 0.0
    speedup = performance.speedup_factor if latency is not None and performance is not None else 0.0
    failed = evaluation.status.value != "PASSED"
    return Result(
        definition=trace.definition, solution=trace.solution, author=authors.get(trace.solution, UNKNOWN_AUTHOR),
        workload=trace.workload.uuid, axes=dict(trace.workload.axes), status=evaluation.status.value,
        latency_ms=latency, reference_ms=reference or None, speedup=speedup or None,
        spread=read_spread(performance), hardware=evaluation.environment.hardware,
        libs=dict(evaluation.environment.libs), timestamp=evaluation.timestamp,
        log_excerpt=evaluation.log[:LOG_EXCERPT] if failed else "",
    )


def environments(records: Iterable[Result]) -> list[dict[str, Any]]:
    """The distinct devices and versions the evaluations ran under, most evaluations first, each with how many
    evaluations it covers, the timing methods its PASSED evaluations recorded (``not recorded`` for those that
    did not) and the distinct settings recorded."""
    grouped: dict[tuple[Any, ...], dict[str, Any]] = {}
    for record in records:
        key = (record.hardware, tuple(sorted(record.libs.items())))
        entry = grouped.setdefault(key, {"hardware": record.hardware, "libs": dict(record.libs), "evaluations": 0,
                                         "timing_methods": Counter(), "settings": []})
        entry["evaluations"] += 1
        if record.latency_ms is not None:
            entry["timing_methods"][record.spread.timing_method or NOT_RECORDED] += 1
        settings = dict(record.spread.settings or {})
        if settings and settings not in entry["settings"]:
            entry["settings"].append(settings)
    return sorted(grouped.values(), key=lambda entry: -entry["evaluations"])

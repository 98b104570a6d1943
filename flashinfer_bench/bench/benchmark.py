"""Benchmark: every (definition, solution, workload) of a trace set through a runner, one trace per verdict."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from flashinfer_bench.bench.config import BenchmarkConfig
from flashinfer_bench.bench.evaluators import evaluator_path, resolve_evaluator
from flashinfer_bench.bench.runner import (
    Verdict,
    WorkItem,
    available_devices,
    isolated_runner,
    persistent_runner,
)
from flashinfer_bench.bench.runner.runner import Runner
from flashinfer_bench.data import Environment, Evaluation, Trace, TraceSet


class ProgressReporter(Protocol):
    def start(self, total: int) -> None: ...
    def advance(self, trace: Trace) -> None: ...
    def finish(self) -> None: ...


def traced_pairs(trace_set: TraceSet) -> set[tuple[str, str, str]]:
    """(definition, solution, workload uuid) of every result trace already present."""
    return {
        (trace.definition, trace.solution, trace.workload.uuid)
        for traces in trace_set.traces.values()
        for trace in traces
        if trace.solution is not None and trace.evaluation is not None
    }


def make_trace(verdict: Verdict) -> Trace:
    outcome = verdict.outcome
    log = outcome.log
    if verdict.captured_output:
        log = f"{log}\n--- captured output ---\n{verdict.captured_output}" if log else verdict.captured_output
    evaluation = Evaluation(
        status=outcome.status,
        environment=Environment(**verdict.environment),
        log=log,
        correctness=outcome.correctness,
        performance=outcome.performance,
    )
    item = verdict.item
    return Trace(definition=item.definition.name, workload=item.workload, solution=item.solution.name,
                 evaluation=evaluation)


class Benchmark:
    """Evaluate a trace set. ``run_all`` returns a new TraceSet: the input plus this run's traces."""

    def __init__(self, trace_set: TraceSet, config: BenchmarkConfig | None = None, *,
                 runner_factory: Callable[[BenchmarkConfig], Runner] | None = None,
                 progress: ProgressReporter | None = None):
        self.trace_set = trace_set
        self.config = config or BenchmarkConfig.default()
        self.runner_factory = runner_factory or default_runner
        self.progress = progress

    def work_groups(self, *, resume: bool = False) -> list[list[WorkItem]]:
        """One group per workload: its solutions in order. Filters and --resume applied."""
        config = self.config
        done = traced_pairs(self.trace_set) if resume else set()
        root = str(self.trace_set.root) if self.trace_set.root is not None else None
        groups = []
        for name, definition in self.trace_set.definitions.items():
            if config.definitions is not None and name not in config.definitions:
                continue
            solutions = [s for s in self.trace_set.solutions.get(name, [])
                         if config.solutions is None or s.name in config.solutions]
            resolved = config.resolve(definition)
            evaluator = evaluator_path(resolve_evaluator(definition))
            for workload_trace in self.trace_set.workloads.get(name, []):
                workload = workload_trace.workload
                group = [
                    WorkItem(definition, solution, workload, resolved, root, evaluator, config.profile_baseline)
                    for solution in solutions
                    if (name, solution.name, workload.uuid) not in done
                ]
                if group:
                    groups.append(group)
        return groups

    def run_all(self, save_results: bool = True, *, resume: bool = False) -> TraceSet:
        groups = self.work_groups(resume=resume)
        result = self.trace_set.copy()
        persist = save_results and result.root is not None
        if self.progress:
            self.progress.start(sum(len(g) for g in groups))

        def record(verdict: Verdict) -> None:
            trace = make_trace(verdict)
            result.add_trace(trace, persist=persist)
            if self.progress:
                self.progress.advance(trace)

        if groups:
            with self.runner_factory(self.config) as runner:
                runner.run(groups, record)
        if self.progress:
            self.progress.finish()
        return result

    def iter_new_traces(self, result: TraceSet) -> Iterator[Trace]:
        """Traces in ``result`` that the input trace set did not have."""
        before = {id(t) for traces in self.trace_set.traces.values() for t in traces}
        for traces in result.traces.values():
            yield from (t for t in traces if id(t) not in before)


def default_runner(config: BenchmarkConfig) -> Runner:
    devices = available_devices()
    factory = isolated_runner if config.use_isolated_runner else persistent_runner
    return factory(devices, timeout_seconds=config.timeout_seconds)

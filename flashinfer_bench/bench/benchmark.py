"""Benchmark: every (definition, solution, workload) of a trace set through a runner, one trace per verdict."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any, Protocol

from flashinfer_bench.bench.config import BenchmarkConfig
from flashinfer_bench.bench.config_check import require_known_names
from flashinfer_bench.bench.evaluators import evaluator_path, resolve_evaluator
from flashinfer_bench.bench.runner import (
    Verdict,
    WorkItem,
    available_devices,
    isolated_runner,
    persistent_runner,
)
from flashinfer_bench.bench.runner.base import Runner
from flashinfer_bench.bench.runner.grouping import group_items
from flashinfer_bench.bench.runner.phase_log import log_phases
from flashinfer_bench.bench.wire.parent_judge import WorkOutcome
from flashinfer_bench.data import (
    Correctness,
    Environment,
    Evaluation,
    EvaluationStatus,
    Performance,
    Trace,
    TraceSet,
)
from flashinfer_bench.data.trace import timestamp_now
from flashinfer_bench.data.workload_check import WorkloadProblem, check_workload


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
    status = outcome.status
    # Upstream's rule (data.trace.Evaluation): only PASSED and INCORRECT_NUMERICAL carry correctness, only PASSED
    # carries performance. A shape or dtype verdict's numbers are in its log.
    has_correctness = status in (EvaluationStatus.PASSED, EvaluationStatus.INCORRECT_NUMERICAL)
    evaluation = Evaluation(
        status=status,
        environment=Environment(**verdict.environment),
        timestamp=timestamp_now(),
        log=log,
        correctness=(outcome.correctness or Correctness()) if has_correctness else None,
        performance=(outcome.performance or Performance()) if status is EvaluationStatus.PASSED else None,
    )
    item = verdict.item
    return Trace(definition=item.definition.name, workload=item.workload, solution=item.solution.name,
                 evaluation=evaluation)


def invalid_workload_verdicts(items: list[WorkItem], problems: list[WorkloadProblem],
                              environment: dict[str, Any]) -> list[Verdict]:
    """RUNTIME_ERROR for every item of a workload that cannot run, saying why; nothing is run."""
    log = "the workload cannot run:\n" + "\n".join(f"  {problem}" for problem in problems)
    outcome = WorkOutcome(EvaluationStatus.RUNTIME_ERROR, log=log)
    return [Verdict(item, outcome, environment, "") for item in items]


class Benchmark:
    """Evaluate a trace set. ``run_all`` returns a new TraceSet: the input plus this run's traces.

    The names in ``config`` are checked against the trace set, as `flashinfer-bench run` checks them: a definition,
    solution, op type or ``extra`` key that the run would not meet raises ConfigNameError (bench/config_check.py),
    with a did-you-mean, before anything runs. ``check_names=False`` is for a caller that checked them against
    several trace sets at once (a name then need not be in each)."""

    def __init__(self, trace_set: TraceSet, config: BenchmarkConfig | None = None, *,
                 runner_factory: Callable[[BenchmarkConfig], Runner] | None = None,
                 progress: ProgressReporter | None = None, check_names: bool = True):
        self.trace_set = trace_set
        self.config = config or BenchmarkConfig.default()
        if check_names:
            require_known_names(self.config, [trace_set])
        self.runner_factory = runner_factory or default_runner
        self.progress = progress

    def work_items(self, *, resume: bool = False) -> list[WorkItem]:
        """Every (definition, solution, workload) to evaluate, with the filters and --resume applied."""
        config = self.config
        done = traced_pairs(self.trace_set) if resume else set()
        root = str(self.trace_set.root) if self.trace_set.root is not None else None
        items = []
        for name, definition in self.trace_set.definitions.items():
            if config.definitions is not None and name not in config.definitions:
                continue
            solutions = [s for s in self.trace_set.solutions.get(name, [])
                         if config.solutions is None or s.name in config.solutions]
            resolved = config.resolve(definition)
            evaluator = evaluator_path(resolve_evaluator(definition))
            items += [
                WorkItem(definition, solution, workload_trace.workload, resolved, root, evaluator,
                         config.profile_baseline)
                for workload_trace in self.trace_set.workloads.get(name, [])
                for solution in solutions
                if (name, solution.name, workload_trace.workload.uuid) not in done
            ]
        return items

    def work_groups(self, *, resume: bool = False, devices: int = 1) -> list[list[WorkItem]]:
        """The items of workloads that can run, grouped for ``devices`` devices (bench/runner/grouping.py)."""
        return group_items(self.runnable_items(self.work_items(resume=resume))[0], devices)

    @staticmethod
    def runnable_items(items: list[WorkItem]) -> tuple[list[WorkItem], list[Verdict]]:
        """The items whose workload can run, and RUNTIME_ERROR verdicts for the others (each workload is checked
        once, on the CPU: its axes, inputs, blobs and constraints)."""
        by_workload: dict[tuple[str, str], list[WorkItem]] = {}
        for item in items:
            by_workload.setdefault(item.workload_key, []).append(item)
        runnable, refused = [], []
        for workload_items in by_workload.values():
            first = workload_items[0]
            problems = check_workload(first.definition, first.workload, first.trace_set_root)
            if problems:
                refused += invalid_workload_verdicts(workload_items, problems, parent_environment())
            else:
                runnable += workload_items
        return runnable, refused

    def run_all(self, save_results: bool = True, *, resume: bool = False) -> TraceSet:
        """Evaluate every item; each verdict becomes a trace the moment it exists. Interrupted (KeyboardInterrupt,
        Ctrl-C), the run records nothing more: the items then running are stopped with the runner, and what they
        would report (a judge or worker stopped under them) is no verdict, so ``resume`` runs them again."""
        items = self.work_items(resume=resume)
        result = self.trace_set.copy()
        persist = save_results and result.root is not None
        interrupted = threading.Event()
        if self.progress:
            self.progress.start(len(items))

        def record(verdict: Verdict) -> None:
            if interrupted.is_set():
                return
            trace = make_trace(verdict)
            result.add_trace(trace, persist=persist)
            log_phases(verdict)
            if self.progress:
                self.progress.advance(trace)

        runnable, refused = self.runnable_items(items)
        for verdict in refused:
            record(verdict)
        if runnable:
            with self.runner_factory(self.config) as runner:
                try:
                    runner.run(group_items(runnable, runner.parallelism), record)
                except KeyboardInterrupt:
                    interrupted.set()  # before the runner is closed under the items in flight
                    raise
        if self.progress:
            self.progress.finish()
        return result

    def iter_new_traces(self, result: TraceSet) -> Iterator[Trace]:
        """Traces in ``result`` that the input trace set did not have."""
        before = {id(t) for traces in self.trace_set.traces.values() for t in traces}
        for traces in result.traces.values():
            yield from (t for t in traces if id(t) not in before)


@cache
def parent_environment() -> dict[str, Any]:
    """The environment recorded on verdicts made without a worker: the checks ran on this process's CPU, and
    no GPU was touched (asking for a GPU's name would create a CUDA context in the parent)."""
    from flashinfer_bench.bench.process_setup import describe_environment

    return describe_environment("cpu")


def default_runner(config: BenchmarkConfig) -> Runner:
    """The config's runner: on the Ray cluster the config names (``ray_address``, else ``$RAY_ADDRESS``, as Ray's
    own tools read it), else on every available device of this machine."""
    address = config.cluster_address()
    if address:
        from flashinfer_bench.bench.runner.ray import ray_runner

        return ray_runner(address, config)
    devices = available_devices()
    factory = isolated_runner if config.use_isolated_runner else persistent_runner
    return factory(devices, timeout_seconds=config.timeout_seconds)

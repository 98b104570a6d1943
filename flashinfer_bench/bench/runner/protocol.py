"""What the parent and a worker process send each other. Everything here is plain, picklable data."""

from __future__ import annotations

from dataclasses import dataclass

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.data import Correctness, Definition, EvaluationStatus, Performance, Solution, Workload


@dataclass(frozen=True)
class WorkItem:
    """One (solution, workload) evaluation, self-contained so that any fresh worker can carry it out."""

    definition: Definition
    solution: Solution
    workload: Workload
    config: ResolvedEvalConfig
    trace_set_root: str | None
    #: ``module:Class`` of the evaluator chosen in the parent (see evaluators.registry.evaluator_path).
    evaluator: str = "flashinfer_bench.bench.evaluators.default:DefaultEvaluator"
    profile_baseline: bool = True
    #: Known from an earlier item of the same workload; None means the worker measures it (if profiling).
    reference_latency_ms: float | None = None

    @property
    def workload_key(self) -> tuple[str, str]:
        return self.definition.name, self.workload.uuid


@dataclass(frozen=True)
class WorkOutcome:
    """A worker's verdict on one item. ``log`` holds tracebacks and messages; captured output is added by the parent."""

    status: EvaluationStatus
    log: str = ""
    correctness: Correctness | None = None
    performance: Performance | None = None
    #: The worker's context may be unusable (e.g. a CUDA error): replace the worker after this item.
    retire: bool = False


# Message tags, worker -> parent
READY = "ready"  # payload: environment dict {"hardware": str, "libs": {...}}
BUILT = "built"  # the solution is built; the evaluation's timeout starts now
BASELINE = "baseline"  # payload: reference latency in ms (or None), sent before the solution runs
RESULT = "result"  # payload: WorkOutcome
# parent -> worker
EVALUATE = "evaluate"  # payload: (WorkItem, path of the file that receives the item's stdout/stderr)
STOP = "stop"

"""What the parent and a judge process send each other: plain, picklable data between trusted processes.

Workers (where solution code runs) never see these: a judge talks to its worker over wire/judge_worker.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.data import Correctness, Definition, EvaluationStatus, Performance, Solution, Workload

#: A judge keeps the baselines (every trial's inputs and reference outputs) of at most this many workloads, and
#: of at most this many bytes; the parent groups work so that one group's baselines fit (bench/runner/grouping.py).
MAX_WORKLOADS_PER_GROUP = 8
BASELINE_BYTES_KEPT = 1 << 30


@dataclass(frozen=True)
class ReferenceTiming:
    """The reference's time on one workload, measured once per run by the judge that first needs it (with the loop
    that times solutions, harness.py) and reused for the workload's other items, on any device of the run."""

    latency_ms: float
    #: The 95% interval of the median, over every sample.
    ci95_ms: tuple[float, float] | None
    #: How it was timed (wire/claims.py ``TimingClaim.conditions``).
    conditions: dict[str, Any] = field(default_factory=dict)


#: What the parent does with a judge's BASELINE message: the workload's uuid (of the item's definition) and the
#: reference's timing there (None where it was not timed).
OnBaseline = Callable[[str, ReferenceTiming | None], None]


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
    #: Known from an earlier item of the same workload; None means the judge measures it (if profiling).
    reference: ReferenceTiming | None = None
    #: The run's secret, from which the judge derives every input seed; it never reaches a worker.
    secret: int = 0
    #: The workloads of the item's group (bench/runner/grouping.py), its own among them: a judge times the
    #: references of all of them before it loads the group's first solution (judge/main.py
    #: ``Judge.time_references``), so that no solution code is there to share the device with a reference's timing.
    #: Empty: the item's workload alone.
    group: tuple[Workload, ...] = ()

    @property
    def workload_key(self) -> tuple[str, str]:
        return self.definition.name, self.workload.uuid

    @property
    def times_reference(self) -> bool:
        """Whether the judge times the reference on this item's workload (asked for, and not known yet)."""
        return self.profile_baseline and self.reference is None

    @property
    def solution_key(self) -> tuple[str, str]:
        """Which solution's code the item runs: a worker never runs items of two keys."""
        return self.solution.name, self.solution.content_hash()


@dataclass(frozen=True)
class EvaluationPhases:
    """Where one evaluation's time went in its judge (judge/phases.py), in seconds. A phase counts the time not spent
    in a phase nested in it (a draw made while checking is a draw); what no phase covers (the clock floor's
    calibration, messages, the judge's bookkeeping) is ``total_s`` less their sum. For benchmarks/run_costs.py."""

    device: str
    #: When the judge took the item (``time.time()``) and how long it took over it, until its verdict.
    started_at: float
    total_s: float
    #: The worker building (or loading from the cache) the solution, from the judge's request to its answer.
    build_s: float = 0.0
    #: The judge drawing inputs (the baseline's trials, the timed calls it checks).
    draws_s: float = 0.0
    #: The correctness trials (the solution's calls and the comparisons) and the checks of picked timed calls.
    checks_s: float = 0.0
    #: The reference: its outputs for the baseline, and its timing.
    reference_s: float = 0.0
    #: The timed sessions, less the draws and checks made in them.
    timed_s: float = 0.0


@dataclass(frozen=True)
class WorkOutcome:
    """A judge's verdict on one item. ``log`` holds tracebacks and messages; captured output is added by the parent."""

    status: EvaluationStatus
    log: str = ""
    correctness: Correctness | None = None
    performance: Performance | None = None
    #: The worker may be unusable (a CUDA error, a broken protocol, a timeout): replace it after this item.
    retire: bool = False
    #: The judge's own device context may be unusable: replace the judge too.
    retire_judge: bool = False
    #: Where the judge's time went (None where no judge made the verdict).
    phases: EvaluationPhases | None = None


# Message tags, judge -> parent
READY = "ready"  # payload: environment dict {"hardware": str, "libs": {...}}
WORKER_READY = "worker_ready"  # payload: (how the worker is isolated, one line; whether the judge calibrates on it)
WORKER_FAILED = "worker_failed"  # payload: why the attached worker did not start
BUILT = "built"  # the solution is built; the evaluation's timeout starts now
BASELINE = "baseline"  # payload: (workload uuid, ReferenceTiming or None), for each workload whose baseline it built
RESULT = "result"  # payload: WorkOutcome
# parent -> judge
ATTACH = "attach"  # payload: the worker's pid (its waiter's); then the fd of the judge's end of its channel
DETACH = "detach"  # stop the attached worker and let go of its channel
EVALUATE = "evaluate"  # payload: (WorkItem, path of the file that receives the item's stdout/stderr)
STOP = "stop"

"""The Evaluator interface: how a family of definitions is judged (baseline, correctness, performance).

A worker process calls, per (solution, workload): ``build_baseline`` once per workload (the reference's outputs
for ``num_trials`` fresh input draws, and optionally its latency), then ``check_correctness`` and, when that
passes, ``eval_performance``. Exceptions raised by solution code propagate to the worker, which turns them
into RUNTIME_ERROR / COMPILE_ERROR; an evaluator only decides verdicts.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators.calling import (
    Callee,
    OutputCountError,
    ValueReturning,
    clone_inputs,
    invoke,
    modified_inputs,
    timing_closure,
)
from flashinfer_bench.bench.evaluators.compare import ValueErrors, structure_mismatch, value_errors
from flashinfer_bench.bench.inputs import generate_inputs
from flashinfer_bench.data import Correctness, Definition, EvaluationStatus, Performance, Workload


@dataclass
class Baseline:
    """Reference results for one workload: per trial, the inputs drawn and the reference's outputs."""

    inputs: list[list[Any]]
    outputs: list[tuple[Any, ...]]
    mean_latency_ms: float | None = None
    #: The reference that produced ``outputs``, for evaluators that call it again (e.g. to draw samples).
    reference: Callee | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class CorrectnessResult:
    status: EvaluationStatus
    correctness: Correctness | None = None
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.status is EvaluationStatus.PASSED


def measure_latency_ms(callee: Callee, definition: Definition, workload: Workload, inputs: list[list[Any]],
                       cfg: ResolvedEvalConfig, device: str) -> float:
    """Mean over trials of the median time of one call, each trial on private copies of its inputs."""
    from flashinfer_bench.testing import bench_gpu_time

    medians = []
    for trial_inputs in inputs:
        fn = timing_closure(callee, definition, workload, clone_inputs(trial_inputs), device)
        median_ms, _ = bench_gpu_time(fn, num_iters=cfg.iterations, dry_run_iters=cfg.warmup_runs, device=device)
        medians.append(median_ms)
    return fmean(medians)


class Evaluator(ABC):
    """Base evaluator: element-wise tolerance checks. Subclasses override what differs for their op types."""

    @classmethod
    @abstractmethod
    def can_evaluate(cls, definition: Definition) -> bool:
        """True for the definitions this evaluator judges."""

    @classmethod
    def build_baseline(cls, definition: Definition, workload: Workload, cfg: ResolvedEvalConfig, device: str, *,
                       trace_set_root: str | None = None, reference: Callee | None = None,
                       profile: bool = True) -> Baseline:
        """Draw ``num_trials`` input sets and run the reference on each; time it when ``profile``."""
        if reference is None:
            from flashinfer_bench.compile import build_reference

            reference = ValueReturning(build_reference(definition))
        inputs = [generate_inputs(definition, workload, t, device, trace_set_root) for t in range(cfg.num_trials)]
        outputs = [invoke(reference, definition, workload, clone_inputs(x), device) for x in inputs]
        latency = measure_latency_ms(reference, definition, workload, inputs, cfg, device) if profile else None
        return Baseline(inputs=inputs, outputs=outputs, mean_latency_ms=latency, reference=reference)

    @classmethod
    def check_correctness(cls, definition: Definition, sol_runnable: Callee, inputs: list[list[Any]],
                          ref_outputs: list[tuple[Any, ...]], cfg: ResolvedEvalConfig, *, workload: Workload,
                          device: str, baseline: Baseline | None = None) -> CorrectnessResult:
        names = list(definition.outputs)
        total = ValueErrors()
        for trial_inputs, reference in zip(inputs, ref_outputs, strict=True):
            call_inputs = clone_inputs(trial_inputs)
            try:
                outputs = invoke(sol_runnable, definition, workload, call_inputs, device)
            except OutputCountError as exc:
                return CorrectnessResult(EvaluationStatus.INCORRECT_SHAPE, message=str(exc))
            written = modified_inputs(list(definition.inputs), trial_inputs, call_inputs)
            if written:
                return CorrectnessResult(EvaluationStatus.INCORRECT_NUMERICAL,
                                         message=f"the solution wrote into its input(s) {written}")
            mismatch = structure_mismatch(outputs, reference, names)
            if mismatch is not None:
                return CorrectnessResult(mismatch[0], message=mismatch[1])
            for name, out, ref in zip(names, outputs, reference, strict=True):
                total = total.merge(cls.compare_output(definition, name, out, ref, cfg))
        return cls.verdict(total, cfg)

    @classmethod
    def compare_output(cls, definition: Definition, name: str, out: Any, ref: Any,
                       cfg: ResolvedEvalConfig) -> ValueErrors:
        return value_errors(out, ref, cfg.rtol, cfg.atol)

    @classmethod
    def verdict(cls, errors: ValueErrors, cfg: ResolvedEvalConfig) -> CorrectnessResult:
        correctness = Correctness(max_relative_error=errors.max_relative_error,
                                  max_absolute_error=errors.max_absolute_error,
                                  extra={"matched_ratio": errors.matched_ratio} if errors.total else None)
        if errors.nonfinite:
            return CorrectnessResult(EvaluationStatus.INCORRECT_NUMERICAL, correctness, "output has NaN or Inf")
        if errors.matched < errors.total:
            return CorrectnessResult(
                EvaluationStatus.INCORRECT_NUMERICAL, correctness,
                f"{errors.total - errors.matched} of {errors.total} elements exceed atol={cfg.atol} rtol={cfg.rtol}",
            )
        return CorrectnessResult(EvaluationStatus.PASSED, correctness)

    @classmethod
    def eval_performance(cls, definition: Definition, sol_runnable: Callee, inputs: list[list[Any]],
                         ref_mean_latency_ms: float | None, cfg: ResolvedEvalConfig, *, workload: Workload,
                         device: str) -> Performance:
        latency = measure_latency_ms(sol_runnable, definition, workload, inputs, cfg, device)
        reference = ref_mean_latency_ms if ref_mean_latency_ms is not None else float("nan")
        speedup = reference / latency if latency > 0 else float("nan")
        return Performance(latency_ms=latency, reference_latency_ms=reference, speedup_factor=speedup)

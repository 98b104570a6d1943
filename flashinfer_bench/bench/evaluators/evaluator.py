"""The Evaluator interface: how a family of definitions is judged (baseline, correctness, performance).

A worker process calls, per (solution, workload): ``build_baseline`` once per workload (the reference's outputs
for ``num_trials`` fresh input draws, and optionally its latency), then ``check_correctness`` and, when that
passes, ``eval_performance``. Exceptions raised by solution code propagate to the worker, which turns them
into RUNTIME_ERROR / COMPILE_ERROR; an evaluator only decides verdicts.

Timing does not trust the solution either: between timed calls the input tensors take two trials' values in
turn (written outside the timed span), and one more call on the same tensors after timing must match the
reference for the values it was given. A solution that hands back results kept from an earlier call on the
same tensors, or skips the work when it sees them again, fails with ``TimedOutputsMismatch`` instead of
reporting a fantasy speed-up.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators.calling import (
    Callee,
    OutputCountError,
    clone_inputs,
    invoke,
    modified_inputs,
    reference_callee,
    same_non_tensor_values,
    timed_call,
    write_values,
    written_inputs,
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
    #: Per trial, the inputs the reference wrote into (in/out buffers, e.g. a cache of intermediate states)
    #: and the values it left there: a solution must write the same, and may write into no other input.
    written: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class CorrectnessResult:
    status: EvaluationStatus
    correctness: Correctness | None = None
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.status is EvaluationStatus.PASSED


class TimedOutputsMismatch(Exception):
    """A call on the timed tensors gave outputs that do not match the reference for the values it was given."""

    def __init__(self, result: CorrectnessResult) -> None:
        super().__init__(result.message)
        self.result = result


#: ``verify(k, outputs)``: judge a timed call's outputs, given trial k's input values; raises on a mismatch.
Verify = Callable[[int, tuple[Any, ...]], None]


class _AlternatingValues:
    """Before each call, writes into the timed input tensors the values of whichever of two trials the previous
    call did not see (the first call sees ``sources[0]``), and remembers which trial the next call sees."""

    def __init__(self, live: list[Any], inputs: list[list[Any]], sources: tuple[int, int]) -> None:
        self.live, self.inputs, self.sources = live, inputs, sources
        self.given = sources[1]

    def __call__(self, _: int) -> None:
        self.write(self.sources[0] if self.given == self.sources[1] else self.sources[1])

    def write(self, trial: int) -> None:
        self.given = trial
        write_values(self.live, self.inputs[trial])


def measure_latency_ms(callee: Callee, definition: Definition, workload: Workload, inputs: list[list[Any]],
                       cfg: ResolvedEvalConfig, device: str, verify: Verify | None = None) -> float:
    """Mean over trials of the median time of one call, each trial on private copies of its inputs.

    With ``verify`` and two or more trials, the timed tensors of trial t take the values of trial t and trial
    t + 1 in turn (see the module docstring); after timing, one more call on the same tensors gets trial
    t + 1's values (the first call had trial t's), and ``verify`` judges its outputs. The solution cannot tell
    that call from a timed one, and a result kept from the first call belongs to other values.
    """
    from flashinfer_bench.testing import bench_gpu_time_detailed

    medians = []
    for t, trial_inputs in enumerate(inputs):
        live = clone_inputs(trial_inputs)
        call, latest_outputs = timed_call(callee, definition, workload, live, device)
        other = (t + 1) % len(inputs)
        alternate = None
        if verify is not None and other != t and same_non_tensor_values(trial_inputs, inputs[other]):
            alternate = _AlternatingValues(live, inputs, (t, other))
        result = bench_gpu_time_detailed(call, num_iters=cfg.iterations, dry_run_iters=cfg.warmup_runs,
                                         device=device, before_each=alternate)
        if verify is not None and alternate is not None:
            alternate.write(other)
            call()
            verify(alternate.given, latest_outputs())
        medians.append(result.median_ms)
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
            reference = reference_callee(definition)
        inputs = [generate_inputs(definition, workload, t, device, trace_set_root) for t in range(cfg.num_trials)]
        outputs, written = [], []
        for trial_inputs in inputs:
            call_inputs = clone_inputs(trial_inputs)
            outputs.append(invoke(reference, definition, workload, call_inputs, device))
            written.append(written_inputs(list(definition.inputs), trial_inputs, call_inputs))
        latency = measure_latency_ms(reference, definition, workload, inputs, cfg, device) if profile else None
        return Baseline(inputs=inputs, outputs=outputs, mean_latency_ms=latency, reference=reference,
                        written=written)

    @classmethod
    def check_correctness(cls, definition: Definition, sol_runnable: Callee, inputs: list[list[Any]],
                          ref_outputs: list[tuple[Any, ...]], cfg: ResolvedEvalConfig, *, workload: Workload,
                          device: str, baseline: Baseline | None = None) -> CorrectnessResult:
        total = ValueErrors()
        names = list(definition.inputs)
        for trial, (trial_inputs, reference) in enumerate(zip(inputs, ref_outputs, strict=True)):
            call_inputs = clone_inputs(trial_inputs)
            try:
                outputs = invoke(sol_runnable, definition, workload, call_inputs, device)
            except OutputCountError as exc:
                return CorrectnessResult(EvaluationStatus.INCORRECT_SHAPE, message=str(exc))
            in_out = baseline.written[trial] if baseline is not None and baseline.written else {}
            written = [name for name in modified_inputs(names, trial_inputs, call_inputs) if name not in in_out]
            if written:
                return CorrectnessResult(EvaluationStatus.INCORRECT_NUMERICAL,
                                         message=f"the solution wrote into its input(s) {written}")
            judged = cls.output_errors(definition, outputs, reference, cfg)
            if isinstance(judged, CorrectnessResult):
                return judged
            total = total.merge(judged)
            for name, expected in in_out.items():  # in/out buffers: what the reference wrote there
                total = total.merge(value_errors(call_inputs[names.index(name)], expected, cfg.rtol, cfg.atol))
        return cls.verdict(total, cfg)

    @classmethod
    def output_errors(cls, definition: Definition, outputs: tuple[Any, ...], reference: tuple[Any, ...],
                      cfg: ResolvedEvalConfig) -> ValueErrors | CorrectnessResult:
        """One call's errors against the reference, or the verdict when the outputs' structure is wrong."""
        names = list(definition.outputs)
        mismatch = structure_mismatch(outputs, reference, names)
        if mismatch is not None:
            return CorrectnessResult(mismatch[0], message=mismatch[1])
        total = ValueErrors()
        for name, out, ref in zip(names, outputs, reference, strict=True):
            total = total.merge(cls.compare_output(definition, name, out, ref, cfg))
        return total

    @classmethod
    def check_timed_outputs(cls, definition: Definition, outputs: tuple[Any, ...], reference: tuple[Any, ...],
                            cfg: ResolvedEvalConfig) -> CorrectnessResult | None:
        """The verdict on one timed call's outputs, or None where one call cannot be judged alone."""
        judged = cls.output_errors(definition, outputs, reference, cfg)
        result = judged if isinstance(judged, CorrectnessResult) else cls.verdict(judged, cfg)
        if not result.passed:
            result.message = ("the outputs of a timed call do not match the reference for the inputs it was "
                              f"given (results kept from an earlier call?): {result.message}")
        return result

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
                         device: str, ref_outputs: list[tuple[Any, ...]] | None = None) -> Performance:
        """Time the solution. With ``ref_outputs`` (the reference's outputs per trial), the timed calls are
        checked as the module docstring says, raising ``TimedOutputsMismatch``."""
        verify = None
        if ref_outputs is not None:
            expected = ref_outputs

            def verify(trial: int, outputs: tuple[Any, ...]) -> None:
                result = cls.check_timed_outputs(definition, outputs, expected[trial], cfg)
                if result is not None and not result.passed:
                    raise TimedOutputsMismatch(result)

        latency = measure_latency_ms(sol_runnable, definition, workload, inputs, cfg, device, verify)
        # Upstream's convention when the reference was not timed: 0.0 for both (its models reject NaN).
        reference = ref_mean_latency_ms if ref_mean_latency_ms is not None else 0.0
        speedup = reference / latency if latency > 0 and reference > 0 else 0.0
        return Performance(latency_ms=latency, reference_latency_ms=reference, speedup_factor=speedup)

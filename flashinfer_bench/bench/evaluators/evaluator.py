"""The Evaluator interface: how a family of definitions is judged (baseline, correctness, performance).

Evaluators run in the judge process, where no solution code runs (see docs/security.md). Per workload the
judge builds a ``Baseline`` (the reference's outputs for ``num_trials`` input draws, and optionally its
latency); per (solution, workload) it calls ``check_correctness`` and, when that passes, ``eval_performance``.
Both take the ``EvaluationContext`` and a ``SolutionHandle``: the solution is only ever asked for calls by
input seed, and answers with bytes the judge reads as the tensors it expects.

Timing does not trust the solution either. Every timed call gets fresh inputs, drawn from a seed derived from
the run's secret and handed over only when the call is made, so no value-keyed cache ever hits and no call
can be told from another in advance. After each call the judge decides, at random, whether to check its
outputs against the reference on the same inputs (``TimedCheck``); a wrong one fails the evaluation with
``TimedOutputsMismatch``. The judge also clocks every call itself and does not believe a claimed latency that
its own clock refutes (judge/schedule.py).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean, median
from typing import Any

import torch

from flashinfer_bench.bench.calling import Callee, clone_inputs, invoke, written_inputs
from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators.ahead import work_ahead
from flashinfer_bench.bench.evaluators.compare import (
    ValueErrors,
    all_zero,
    as_tensor,
    row_errors,
    value_errors,
)
from flashinfer_bench.bench.evaluators.sessions import (
    REFERENCE_SESSION_MS,
    SOLUTION_SESSION_MS,
    asks_replays,
    fewer_calls_note,
    session_calls,
    session_purpose,
)
from flashinfer_bench.bench.evaluators.timing_extra import timing_extra
from flashinfer_bench.bench.inputs import InputKey
from flashinfer_bench.bench.judge.clock import synchronize
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.judge.local import LocalSolution, UncheckedSchedule
from flashinfer_bench.bench.judge.phases import CHECKS, phase
from flashinfer_bench.bench.judge.schedule import TimedSchedule
from flashinfer_bench.bench.judge.solution import CallArgs, SolutionHandle
from flashinfer_bench.bench.slot import output_mismatch
from flashinfer_bench.bench.wire.parent_judge import ReferenceTiming
from flashinfer_bench.data import Correctness, Definition, EvaluationStatus, Performance
from flashinfer_bench.timing.stats import summarize


@dataclass
class Baseline:
    """Reference results for one workload: per trial, the seed its inputs were drawn from, those inputs and the
    reference's outputs."""

    inputs: list[list[Any]]
    outputs: list[tuple[Any, ...]]
    #: Per trial, the input seed (``build_baseline``: ``ctx.trial_seed``, or a later draw's).
    seeds: list[int] = field(default_factory=list)
    #: The reference's time, when this baseline timed it or the run already knew it.
    reference_timing: ReferenceTiming | None = None
    #: The reference that produced ``outputs``, for evaluators that call it again (e.g. to draw samples).
    reference: Callee | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: Per trial, the inputs the reference wrote into (in/out buffers, e.g. a cache of intermediate states)
    #: and the values it left there: a solution must write the same, and may write into no other input.
    written: list[dict[str, Any]] = field(default_factory=list)
    #: The reference's outputs for timed calls checked so far, by input seed (at most TIMED_EXPECTED_BYTES of
    #: them): every solution of the workload gets the same seeds and the same picks (judge/schedule.py), so the
    #: next one's checks reuse them instead of running the reference again.
    timed_expected: dict[InputKey, Any] = field(default_factory=dict)
    timed_expected_bytes: int = 0


@dataclass
class CorrectnessResult:
    status: EvaluationStatus
    correctness: Correctness | None = None
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.status is EvaluationStatus.PASSED


class TimedOutputsMismatch(Exception):
    """A timed call's outputs do not match the reference for the inputs it was given."""

    def __init__(self, result: CorrectnessResult) -> None:
        super().__init__(result.message)
        self.result = result


@dataclass(frozen=True)
class PerformanceResult:
    performance: Performance
    #: What the judge noticed while timing (e.g. a claimed latency it did not believe), for the trace's log.
    notes: list[str] = field(default_factory=list)
    #: The solution's setup before each call (docs/solutions.md), mean of the trials' medians; None without
    #: one (reported beside the latency, never inside it).
    setup_latency_ms: float | None = None


def time_reference(reference: Callee, ctx: EvaluationContext, call_ms: float | None = None) -> ReferenceTiming:
    """The reference timed as solutions are (the same loop, harness.py, here in the judge's own process): in
    ``num_trials`` trials (``session_calls`` for a call of ``call_ms``; one session for all of them where its calls
    are replayed, as for solutions), every call on fresh inputs; the mean of the trials' medians, the 95% interval
    over every sample, and the conditions the loop reported."""
    medians, samples, conditions = [], [], {}
    handle = LocalSolution(ctx, reference)
    warmup, iterations = session_calls(ctx.config, call_ms, REFERENCE_SESSION_MS)
    while len(medians) < ctx.config.num_trials:
        schedule = UncheckedSchedule(ctx, ("reference", len(medians)), warmup, iterations,
                                     ctx.config.num_trials - len(medians))
        claim = handle.time(iterations, warmup, schedule)
        for trial in schedule.trial_samples(claim.samples_ms):
            medians.append(median(trial))
            samples += trial
        conditions = claim.conditions()
    stats = summarize(samples)
    return ReferenceTiming(fmean(medians), (stats.ci95_low_ms, stats.ci95_high_ms), conditions)


#: Each timed call's outputs are checked with this probability, decided after the call (``extra``:
#: ``timed_check_probability``); the session's planned last call is always checked. Calls beyond it (the timer
#: measures a batch again when the host was late with its launches, timing/api.py) are picked at random only.
DEFAULT_TIMED_CHECK_PROBABILITY = 0.125
#: A correctness trial is drawn at most this many times while the reference's outputs are all zero.
TRIAL_DRAWS = 8
#: The reference's outputs for checked timed calls a baseline keeps for the workload's next solutions, in bytes.
TIMED_EXPECTED_BYTES = 64 << 20


class TimedCheck:
    """Checks the outputs of the timed calls the schedule picks: the reference is run on the same inputs."""

    def __init__(self, evaluator: type[Evaluator], ctx: EvaluationContext, baseline: Baseline) -> None:
        self.evaluator, self.ctx, self.baseline = evaluator, ctx, baseline
        self.probability = float(ctx.config.extra.get("timed_check_probability", DEFAULT_TIMED_CHECK_PROBABILITY))

    #: Picked calls are judged in groups (``judge_picked``); a check that keeps large data per call judges them
    #: one at a time.
    grouped = True

    def known(self, key: InputKey) -> Any | None:
        """What the call of inputs drawn from ``key`` is judged against, where that is known without its inputs
        (the reference's outputs kept for an earlier solution of the workload); None where ``expected`` must work
        it out."""
        return self.baseline.timed_expected.get(key)

    def expected(self, key: InputKey, inputs: list[Any]) -> Any:
        """What the call of inputs drawn from ``key`` is judged against, worked out from its inputs (which are not
        kept): here the reference's outputs, kept in the baseline for the next solutions of the workload."""
        kept = self.baseline.timed_expected
        if key in kept:
            return kept[key]
        outputs = self._reference_outputs(inputs)
        self._keep(key, outputs, whatever_size=False)
        return outputs

    def work_out(self, key: InputKey) -> None:
        """``expected`` for the call of inputs drawn from ``key`` before the call is made (evaluators/ahead.py), kept
        whatever its size: the session that picks it comes next."""
        if key not in self.baseline.timed_expected:
            self._keep(key, self._reference_outputs(self.ctx.inputs(key)), whatever_size=True)

    def _reference_outputs(self, inputs: list[Any]) -> Any:
        assert self.baseline.reference is not None
        ctx = self.ctx
        return invoke(self.baseline.reference, ctx.definition, ctx.workload, clone_inputs(inputs), ctx.device)

    def _keep(self, key: InputKey, outputs: Any, *, whatever_size: bool) -> None:
        size = sum(t.nbytes for t in outputs if isinstance(t, torch.Tensor))
        if whatever_size or self.baseline.timed_expected_bytes + size <= TIMED_EXPECTED_BYTES:
            self.baseline.timed_expected[key] = outputs
            self.baseline.timed_expected_bytes += size

    def check(self, calls: list[tuple[tuple[torch.Tensor, ...], Any]]) -> CorrectnessResult | None:
        """The first failing verdict among these timed calls (each its outputs and its ``expected``), or None."""
        return self.evaluator.check_timed_outputs(self.ctx.definition, calls, self.ctx.config)

    def finish(self) -> CorrectnessResult | None:
        """A verdict over all the checked calls together, for checks that need many (sampling)."""
        return None


class Evaluator(ABC):
    """Base evaluator: element-wise tolerance checks. Subclasses override what differs for their op types."""

    @classmethod
    @abstractmethod
    def can_evaluate(cls, definition: Definition) -> bool:
        """True for the definitions this evaluator judges."""

    @classmethod
    def build_baseline(cls, ctx: EvaluationContext, reference: Callee, *, profile: bool = True) -> Baseline:
        """Draw ``num_trials`` input sets and run the reference on each; time it when ``profile``.

        A trial whose reference outputs are all zero cannot fail a solution that returns zeros or scales its
        outputs (an MoE token routed to no local expert: half the draws of a one-token DeepSeek-routed workload),
        so such a trial is drawn again from another seed, up to ``TRIAL_DRAWS`` draws; the last is kept."""
        layouts = ctx.output_layouts
        baseline = Baseline(inputs=[], outputs=[], reference=reference)
        call_ms = None  # the last trial's reference call, to size its timing (``session_calls``)
        for trial in range(ctx.config.num_trials):
            for draw in range(TRIAL_DRAWS):
                seed = ctx.trial_seed(trial) if draw == 0 else ctx.seed_for("trial", trial, "draw", draw)
                trial_inputs = ctx.inputs(seed)
                call_inputs = clone_inputs(trial_inputs)
                started = time.perf_counter()
                trial_outputs = invoke(reference, ctx.definition, ctx.workload, call_inputs, ctx.device)
                synchronize(ctx.device)
                call_ms = (time.perf_counter() - started) * 1e3
                mismatch = output_mismatch(trial_outputs, layouts, ctx.device)
                if mismatch is not None:
                    raise ValueError(f"the reference does not keep to its definition: {mismatch[1]}")
                if not all_zero(trial_outputs):
                    break
            baseline.seeds.append(seed)
            baseline.inputs.append(trial_inputs)
            baseline.outputs.append(trial_outputs)
            baseline.written.append(written_inputs(ctx.input_names, trial_inputs, call_inputs))
        if profile:
            baseline.reference_timing = time_reference(reference, ctx, call_ms)
        return baseline

    @classmethod
    def first_call(cls, ctx: EvaluationContext) -> CallArgs:
        """``check_correctness``'s first call as it is known before the baseline (its trial's first draw, no input
        sent back): the judge has the worker make it while the reference works out its outputs (judge/main.py)."""
        return CallArgs(ctx.trial_seed(0))

    @classmethod
    def check_correctness(cls, ctx: EvaluationContext, solution: SolutionHandle, baseline: Baseline) -> CorrectnessResult:
        """Each trial's inputs through the solution, its outputs against the reference's, the next trial's call
        made meanwhile (``SolutionHandle.start_call``). CallFailed (an exception in solution code, outputs of the
        wrong structure) propagates to the judge."""
        total = ValueErrors()
        outputs = []
        in_outs = baseline.written or [{} for _ in baseline.outputs]
        calls = [CallArgs(seed, return_inputs=tuple(in_out)) for seed, in_out in zip(baseline.seeds, in_outs, strict=True)]
        for trial, (reference, in_out) in enumerate(zip(baseline.outputs, in_outs, strict=True)):
            if trial + 1 == len(calls):  # the call the timing sessions are sized on
                work_ahead(ctx, solution, calls[trial], lambda: cls.timed_check(ctx, baseline))
            result = solution.call(calls[trial].seed, return_inputs=list(in_out))
            if trial + 1 < len(calls):
                solution.start_call(calls[trial + 1])
            written = [name for name in result.wrote if name not in in_out]
            if written:
                return CorrectnessResult(EvaluationStatus.INCORRECT_NUMERICAL,
                                         message=f"the solution wrote into its input(s) {written}")
            outputs.append(result.outputs[0])
            total = total.merge(cls.output_errors(ctx.definition, result.outputs[0], reference, ctx.config))
            for name, expected in in_out.items():  # in/out buffers: what the reference wrote there
                total = total.merge(value_errors(result.returned[name], expected, ctx.config.rtol, ctx.config.atol))
        verdict = cls.verdict(total, ctx.config)
        if verdict.passed and ctx.definition.check is not None:
            return cls.definition_check(ctx, baseline, outputs, verdict)
        return verdict

    @classmethod
    def definition_check(cls, ctx: EvaluationContext, baseline: Baseline, outputs: list[tuple[Any, ...]],
                         verdict: CorrectnessResult) -> CorrectnessResult:
        """The definition's own ``check`` (FlashInfer's, evaluators/definition_check.py), run here in the judge on
        each trial's outputs, after the evaluator's own checks passed: a rule added to them, never replacing them."""
        from flashinfer_bench.bench.evaluators.definition_check import run_check

        for trial, (trial_outputs, reference) in enumerate(zip(outputs, baseline.outputs, strict=True)):
            inputs = dict(zip(ctx.input_names, baseline.inputs[trial], strict=True))
            checked = run_check(ctx.definition, inputs, trial_outputs, reference)
            if not checked.passed:
                return CorrectnessResult(EvaluationStatus.INCORRECT_NUMERICAL, verdict.correctness, checked.message)
        return verdict

    @classmethod
    def output_errors(cls, definition: Definition, outputs: tuple[Any, ...], reference: tuple[Any, ...],
                      cfg: ResolvedEvalConfig) -> ValueErrors:
        """One call's errors against the reference (outputs of the definition's structure)."""
        total = ValueErrors()
        for name, out, ref in zip(definition.outputs, outputs, reference, strict=True):
            total = total.merge(cls.compare_output(definition, name, out, ref, cfg))
        return total

    @classmethod
    def output_errors_each(cls, definition: Definition, calls: Sequence[tuple[tuple[Any, ...], tuple[Any, ...]]],
                           cfg: ResolvedEvalConfig) -> list[ValueErrors]:
        """``output_errors`` of each (outputs, reference) pair. With the element-wise comparison (no
        ``compare_output`` of the evaluator's own) the calls are compared together, one row each: one
        synchronisation for all of them, where comparing them one by one costs one per output and call."""
        if not calls:
            return []
        if cls.compare_output.__func__ is not Evaluator.compare_output.__func__:
            return [cls.output_errors(definition, outputs, reference, cfg) for outputs, reference in calls]
        totals = [ValueErrors() for _ in calls]
        for position in range(len(definition.outputs)):
            refs = torch.stack([as_tensor(reference[position]).reshape(-1) for _, reference in calls])
            outs = torch.stack([as_tensor(outputs[position]).reshape(-1).to(refs.device) for outputs, _ in calls])
            for call, errors in enumerate(row_errors(outs, refs, cfg.rtol, cfg.atol)):
                totals[call] = totals[call].merge(errors)
        return totals

    @classmethod
    def check_timed_outputs(cls, definition: Definition, calls: Sequence[tuple[tuple[Any, ...], tuple[Any, ...]]],
                            cfg: ResolvedEvalConfig) -> CorrectnessResult | None:
        """The verdict on timed calls' outputs, each (outputs, reference) pair judged on its own: the first
        that fails, else None. None too where calls cannot be judged one at a time."""
        for errors in cls.output_errors_each(definition, calls, cfg):
            result = cls.verdict(errors, cfg)
            if not result.passed:
                result.message = ("the outputs of a timed call do not match the reference for the inputs it was "
                                  f"given: {result.message}")
                return result
        return None

    @classmethod
    def timed_check(cls, ctx: EvaluationContext, baseline: Baseline) -> TimedCheck:
        return TimedCheck(cls, ctx, baseline)

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
    def eval_performance(cls, ctx: EvaluationContext, solution: SolutionHandle, baseline: Baseline) -> PerformanceResult:
        """Time the solution in ``num_trials`` trials as the module docstring says (``session_calls`` for its
        last correctness call's time on the judge's clock, and whether it refused replays before): a session per
        trial, or one for all of them where its calls are replayed (judge/replayed.py ``RAMP_ROUNDS``); the latency
        is the mean of the trials' medians. Raises ``TimedOutputsMismatch`` when a checked timed call is wrong."""
        cfg = ctx.config
        sessions = []
        floor = solution.clock_floor()
        call_ms = solution.latest_call_ms
        replayable = asks_replays(ctx, solution)
        warmup, iterations = session_calls(cfg, call_ms, SOLUTION_SESSION_MS, replayable)
        timing = baseline.reference_timing
        while len(sessions) < cfg.num_trials:
            check = cls.timed_check(ctx, baseline)
            schedule = TimedSchedule(ctx, session_purpose(len(sessions)), warmup, iterations, check.probability,
                                     solution.host_watch(), floor.replay_round_ms or 0.0,
                                     trials=cfg.num_trials - len(sessions),
                                     reference_call_ms=timing.latency_ms if timing is not None else None)
            claim = solution.time(iterations, warmup, schedule)
            if schedule.replay is not None and not schedule.replayed:
                solution.facts.replays_refused = True
            with phase(CHECKS):
                failure = schedule.judge_picked(check)
            if failure is not None and not failure.passed:
                raise TimedOutputsMismatch(failure)
            sessions += schedule.latencies(claim, floor)
        latency = fmean(s.latency_ms for s in sessions)
        setups = [s.setup_ms for s in sessions if s.setup_ms is not None]
        setup = fmean(setups) if len(setups) == len(sessions) else None
        # Upstream's convention when the reference was not timed: 0.0 for both (its models reject NaN).
        reference = timing.latency_ms if timing is not None else 0.0
        speedup = reference / latency if latency > 0 and reference > 0 else 0.0
        extra = timing_extra(sessions, cfg, setup, timing)
        notes = list(dict.fromkeys(note for s in sessions for note in s.notes))
        if (warmup, iterations) != (cfg.warmup_runs, cfg.iterations) and call_ms is not None:
            notes.insert(0, fewer_calls_note(cfg, warmup, iterations, call_ms))
        return PerformanceResult(Performance(latency_ms=latency, reference_latency_ms=reference,
                                             speedup_factor=speedup, extra=extra), notes, setup)

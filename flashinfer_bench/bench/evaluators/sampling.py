"""Sampling kernels: outputs are random, so judge the distribution of many draws, not one draw.

Correctness: for each trial the reference is drawn ``REFERENCE_DRAW_FACTOR`` times as often as the solution, to
estimate the expected distribution with little noise of its own; the solution is drawn
``sampling_validation_trials`` times. The verdict is the mean over batch rows of the total variation distance
between the two per-row histograms. The draws are seeded (torch's generators, forked so the process's own state
is untouched) by trial and role, so the same inputs are judged the same way on any worker.

Timed calls: every call gets fresh probabilities, so a sample kept from an earlier call (or any sample that
ignores its inputs) is a token drawn independently of them. ``SamplingTimedCheck`` sums log(V * p[token]) over
the timed calls' samples: an honest sampler draws tokens of high probability (its expectation is at least
KL(p || uniform) per sample, more for top-k/top-p), one that ignores its inputs scores -KL(uniform || p) on
average. The check fails a loop whose sum is far below what honest sampling gives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from flashinfer_bench.bench.calling import Callee, clone_inputs, invoke
from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators.evaluator import Baseline, CorrectnessResult, Evaluator, TimedCheck
from flashinfer_bench.bench.harness import seeded
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.judge.solution import SolutionHandle
from flashinfer_bench.bench.seeds import stable_seed
from flashinfer_bench.data import Correctness, Definition, DType, EvaluationStatus

DEFAULT_VALIDATION_TRIALS = 100
DEFAULT_TVD_THRESHOLD = 0.2
REFERENCE_DRAW_FACTOR = 4
#: How many standard deviations below honest sampling's expectation the timed samples' score must fall to fail.
TIMED_SCORE_SIGMAS = 5.0


def probabilities(definition: Definition, inputs: list[Any]) -> torch.Tensor:
    """The first floating tensor input (the probabilities), as rows of the vocabulary."""
    for spec, value in zip(definition.inputs.values(), inputs, strict=True):
        if isinstance(value, torch.Tensor) and DType(spec.dtype).is_floating and value.dim() >= 1:
            return value.reshape(-1, value.shape[-1])
    raise ValueError(f"definition '{definition.name}' has no floating tensor input to take the vocabulary size from")


def vocab_size(definition: Definition, inputs: list[Any]) -> int:
    return int(probabilities(definition, inputs).shape[-1])


def draw_seed(trial: int, role: str) -> int:
    return stable_seed("sampling", trial, role)


def histogram(samples: list[torch.Tensor], vocab: int) -> torch.Tensor:
    """Per-row counts [rows, vocab] of the draws; -1 everywhere when a sample is outside [0, vocab)."""
    rows = samples[0].reshape(-1).numel()
    counts = torch.zeros(rows, vocab, dtype=torch.float64, device=samples[0].device)
    for draw in samples:
        flat = draw.reshape(-1).long()
        if bool(((flat < 0) | (flat >= vocab)).any()):
            return counts.fill_(-1)
        counts.scatter_add_(1, flat.unsqueeze(1), torch.ones_like(flat, dtype=torch.float64).unsqueeze(1))
    return counts


def reference_histogram(reference: Callee, ctx: EvaluationContext, inputs: list[Any], draws: int,
                        seed: int) -> torch.Tensor:
    with seeded(seed, ctx.device):
        samples = [invoke(reference, ctx.definition, ctx.workload, clone_inputs(inputs), ctx.device)[0]
                   for _ in range(draws)]
    return histogram([torch.as_tensor(s) for s in samples], vocab_size(ctx.definition, inputs))


def total_variation(p_counts: torch.Tensor, q_counts: torch.Tensor) -> torch.Tensor:
    """Per-row TVD between two count tables."""
    p = p_counts / p_counts.sum(dim=1, keepdim=True)
    q = q_counts / q_counts.sum(dim=1, keepdim=True)
    return 0.5 * (p - q).abs().sum(dim=1)


class SamplingTimedCheck(TimedCheck):
    """Scores every timed call's samples against the probabilities it was given (see the module docstring)."""

    def __init__(self, evaluator: type[Evaluator], ctx: EvaluationContext, baseline: Baseline) -> None:
        super().__init__(evaluator, ctx, baseline)
        self.probability = 1.0
        self.score = self.honest_mean = self.honest_var = self.ignoring_mean = 0.0

    #: Every timed call is picked, and each keeps a [batch, vocab] tensor of probabilities: one at a time.
    grouped = False

    def expected(self, inputs: list[Any]) -> torch.Tensor:
        """The probabilities the call was given."""
        return probabilities(self.ctx.definition, inputs)

    def check(self, calls: list[tuple[tuple[torch.Tensor, ...], Any]]) -> CorrectnessResult | None:
        for outputs, probs in calls:
            result = self._score(outputs, probs)
            if result is not None:
                return result
        return None

    def _score(self, outputs: tuple[torch.Tensor, ...], given: torch.Tensor) -> CorrectnessResult | None:
        """Adds one call's samples to the session's score; a verdict only for samples outside [0, vocab)."""
        probs = given.double()
        probs = probs / probs.sum(dim=1, keepdim=True)
        vocab = probs.shape[1]
        tokens = outputs[0].reshape(-1).long().to(probs.device)
        if tokens.numel() != probs.shape[0] or bool(((tokens < 0) | (tokens >= vocab)).any()):
            return CorrectnessResult(EvaluationStatus.INCORRECT_NUMERICAL,
                                     message="a timed call's sample is outside [0, vocab)")
        log_scaled = torch.log(probs.clamp_min(1e-300) * vocab)
        self.score += float(log_scaled.gather(1, tokens.unsqueeze(1)).sum())
        self.honest_mean += float((probs * log_scaled).sum())
        self.honest_var += float((probs * log_scaled.square()).sum(dim=1).sub((probs * log_scaled).sum(dim=1).square()).sum())
        self.ignoring_mean += float(log_scaled.mean(dim=1).sum())
        return None

    def finish(self) -> CorrectnessResult | None:
        spread = TIMED_SCORE_SIGMAS * math.sqrt(max(self.honest_var, 1e-12))
        if self.score < self.honest_mean - spread and self.score < (self.honest_mean + self.ignoring_mean) / 2:
            return CorrectnessResult(
                EvaluationStatus.INCORRECT_NUMERICAL,
                message=(f"the samples of timed calls do not follow the probabilities they were given (score "
                         f"{self.score:.1f}; honest sampling scores at least {self.honest_mean:.1f} +- "
                         f"{spread / TIMED_SCORE_SIGMAS:.1f}; samples that ignore their inputs "
                         f"{self.ignoring_mean:.1f}): results kept from an earlier call?"),
            )
        return None


class SamplingEvaluator(Evaluator):
    @classmethod
    def can_evaluate(cls, definition: Definition) -> bool:
        return definition.op_type == "sampling"

    @classmethod
    def build_baseline(cls, ctx: EvaluationContext, reference: Callee, *, profile: bool = True) -> Baseline:
        baseline = super().build_baseline(ctx, reference, profile=profile)
        draws = REFERENCE_DRAW_FACTOR * int(ctx.config.extra.get("sampling_validation_trials", DEFAULT_VALIDATION_TRIALS))
        baseline.extra["histograms"] = [
            reference_histogram(reference, ctx, x, draws, draw_seed(trial, "reference"))
            for trial, x in enumerate(baseline.inputs)
        ]
        return baseline

    @classmethod
    def timed_check(cls, ctx: EvaluationContext, baseline: Baseline) -> TimedCheck:
        return SamplingTimedCheck(cls, ctx, baseline)

    @classmethod
    def check_timed_outputs(cls, definition: Definition, calls: Sequence[tuple[tuple[Any, ...], tuple[Any, ...]]],
                            cfg: ResolvedEvalConfig) -> CorrectnessResult | None:
        """None: one call's draws cannot be compared with the reference's (SamplingTimedCheck scores them)."""
        return None

    @classmethod
    def check_correctness(cls, ctx: EvaluationContext, solution: SolutionHandle, baseline: Baseline) -> CorrectnessResult:
        if "histograms" not in baseline.extra:
            raise ValueError("the sampling evaluator needs the baseline built by SamplingEvaluator.build_baseline")
        draws = int(ctx.config.extra.get("sampling_validation_trials", DEFAULT_VALIDATION_TRIALS))
        threshold = float(ctx.config.extra.get("sampling_tvd_threshold", DEFAULT_TVD_THRESHOLD))
        worst = 0.0
        for trial, ref_hist in enumerate(baseline.extra["histograms"]):
            result = solution.call(ctx.trial_seed(trial), repeat=draws, rng_seed=draw_seed(trial, "solution"))
            hist = histogram([outputs[0] for outputs in result.outputs], ref_hist.shape[1])
            if bool((hist < 0).any()):
                return CorrectnessResult(EvaluationStatus.INCORRECT_NUMERICAL, message="a sample is outside [0, vocab)")
            worst = max(worst, float(total_variation(hist, ref_hist.to(hist.device)).mean()))
        correctness = Correctness(max_relative_error=worst, max_absolute_error=worst,
                                  extra={"tvd": worst, "tvd_threshold": threshold, "draws": draws})
        if worst > threshold:
            return CorrectnessResult(EvaluationStatus.INCORRECT_NUMERICAL, correctness,
                                     f"total variation distance {worst:.3f} > threshold {threshold}")
        return CorrectnessResult(EvaluationStatus.PASSED, correctness)

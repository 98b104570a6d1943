"""Sampling kernels: outputs are random, so judge the distribution of many draws, not one draw.

Correctness: for each trial the reference is drawn ``REFERENCE_DRAW_FACTOR`` times as often as the solution, to
estimate the expected distribution with little noise of its own; the solution is drawn
``sampling_validation_trials`` times. The verdict is a chi-square test of homogeneity of the two samples, on
tokens merged into bins by their probability (``homogeneity``), summed over rows and trials: it fails when a
correct sampler would give so large a statistic with probability below ``sampling_significance``, whatever the
vocabulary's size (a token-by-token comparison of 100 draws over 128k tokens fails honest samplers). The draws
are seeded (torch's generators, forked so the process's own state is untouched) by trial and role, so the same
inputs are judged the same way on any worker.

Timed calls: every call is picked and gets fresh probabilities, so a sample kept from an earlier call (or any
sample that ignores its inputs: a skipped call's stale buffer) is a token chosen independently of them. Drawn
probabilities are rows of softmax of i.i.d. normals, exchangeable and independent (a blob's are permuted by a
secret seed: exchangeable too, but its rows share one permutation), so such a token sits at a uniformly random
place among its row's values. ``SamplingTimedCheck`` makes three checks:

- Filters, per call. Where the definition has a ``top_k`` or ``top_p`` input, a token with k or more tokens
  strictly more probable (0 < k < V), or with more than top_p of the mass on tokens strictly more probable, fails
  the call: no honest sampler draws it (``outside_filters``). A token that ignores the inputs stays inside a
  row's top-k with probability exactly k / V.
- Repeats, per session: a skipped call leaves the previous call's samples. An honest sampler's row repeats the
  previous call's sample with probability exactly 1/V (its row of probabilities is fresh and exchangeable), so
  a session whose repeats are less likely than ``REPEAT_SIGNIFICANCE`` under that binomial fails.
- Score, per session: the sum S of log(V p[token]) over all samples. Sampling from a row scores KL(p || uniform)
  per sample on average; the reference's filtering lifts that by an excess measured on its own draws in the
  baseline (``timed_score_calibration``). A token that ignores the inputs scores -KL(uniform || p) on average.
  S fails below ``threshold``: 5 sigma under honest sampling's expectation, and at most halfway from it to the
  ignoring samples' expectation. Given the sorted values of every row, an ignoring token's score is
  log(V v[j]) for a uniformly random j, independent of the other rows (drawn rows) and calls, so P(S >= threshold) <=
  min over lambda of exp(sum of log mean_j (V v[j])^lambda - lambda * threshold) (``false_pass_bound``); at
  lambda = 1 the mean is 1 whatever the values, so the bound is at most exp(-threshold).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from flashinfer_bench.bench.calling import Callee, clone_inputs, invoke
from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators.evaluator import Baseline, CorrectnessResult, Evaluator, TimedCheck
from flashinfer_bench.bench.evaluators.homogeneity import Homogeneity, homogeneity
from flashinfer_bench.bench.harness import seeded
from flashinfer_bench.bench.inputs import InputKey, holds_floats
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.judge.solution import CallArgs, SolutionHandle
from flashinfer_bench.bench.seeds import stable_seed
from flashinfer_bench.data import Correctness, Definition, DType, EvaluationStatus

DEFAULT_VALIDATION_TRIALS = 100
#: The chance that a correct sampler fails the distribution test (its false-failure rate).
DEFAULT_SIGNIFICANCE = 1e-4
REFERENCE_DRAW_FACTOR = 4
#: How many standard deviations below honest sampling's expectation the timed samples' score must fall to fail.
TIMED_SCORE_SIGMAS = 5.0
#: The exponents lambda over which the Chernoff bound on a false pass is minimised.
CHERNOFF_EXPONENTS = (0.125, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
#: A token passes the top-p check while the mass of the tokens more probable than it is at most top_p plus this
#: (float32 sums over the vocabulary, in any order, stay well within it).
TOP_P_TOLERANCE = 1e-3
#: The repeat check fails a session whose rows repeat the previous call's sample this improbably often for an
#: honest sampler (its chance of failing one).
REPEAT_SIGNIFICANCE = 1e-9


def probabilities(definition: Definition, inputs: list[Any]) -> torch.Tensor:
    """The first floating tensor input (the probabilities; softmax of it where it is named ``logits``), as rows
    of the vocabulary."""
    for (name, spec), value in zip(definition.inputs.items(), inputs, strict=True):
        if isinstance(value, torch.Tensor) and holds_floats(spec, value) and value.dim() >= 1:
            rows = value.reshape(-1, value.shape[-1])
            return torch.softmax(rows.double(), dim=1) if name == "logits" else rows
    raise ValueError(f"definition '{definition.name}' has no floating tensor input to take the vocabulary size from")


def vocab_size(definition: Definition, inputs: list[Any]) -> int:
    return int(probabilities(definition, inputs).shape[-1])


def filter_values(definition: Definition, inputs: list[Any], name: str, rows: int) -> torch.Tensor | None:
    """The per-row values of the input ``name`` (a tensor of one value per row, or one value for all rows), or
    None where the definition has no such input."""
    if name not in definition.inputs:
        return None
    value = torch.as_tensor(inputs[list(definition.inputs).index(name)]).reshape(-1)
    if value.numel() not in (1, rows):
        return None
    return value.double().expand(rows) if value.numel() == 1 else value.double()


def outside_filters(probs: torch.Tensor, tokens: torch.Tensor, top_k: torch.Tensor | None,
                    top_p: torch.Tensor | None) -> str:
    """Which filter some row's token breaks ("" where none): a token with k or more tokens strictly more
    probable, where 0 < k < vocab; a token with more than top_p of the mass (plus TOP_P_TOLERANCE) on tokens
    strictly more probable. Honest samplers never break either, whatever their tie-breaking, top-p boundary
    (< or <=) or filter order (top-p on the top-k-renormalised rows keeps a subset of what it keeps on the raw
    ones)."""
    chosen = probs.gather(1, tokens.unsqueeze(1))
    above = probs > chosen
    vocab = probs.shape[1]
    if top_k is not None:
        k = top_k.to(probs.device)
        if bool(((k > 0) & (k < vocab) & (above.sum(dim=1) >= k)).any()):
            return "top-k"
    if top_p is not None:
        p = top_p.to(probs.device).clamp_min(0.0)
        if bool(((probs * above).sum(dim=1) > p + TOP_P_TOLERANCE).any()):
            return "top-p"
    return ""


def timed_score_calibration(probs: torch.Tensor, counts: torch.Tensor) -> tuple[float, float, float]:
    """From the reference's draws (per-row ``counts``) on rows of ``probs``: the summed excess of its samples'
    log(V p[token]) over what sampling from the unfiltered rows gives, the summed squared deviation of each
    sample's score from its row's mean, and the number of samples."""
    probs = probs.double() / probs.double().sum(dim=1, keepdim=True)
    log_scaled = torch.log(probs.clamp_min(1e-300) * probs.shape[1])
    draws = counts.sum(dim=1)
    mean = (counts * log_scaled).sum(dim=1) / draws
    excess = float(((mean - (probs * log_scaled).sum(dim=1)) * draws).sum())
    deviation = float((counts * (log_scaled - mean.unsqueeze(1)).square()).sum())
    return excess, deviation, float(draws.sum())


def draw_seed(trial: int, role: str) -> int:
    return stable_seed("sampling", trial, role)


def validation_draws(ctx: EvaluationContext) -> int:
    """The solution's draws per trial (``sampling_validation_trials``); the reference makes more."""
    return int(ctx.config.extra.get("sampling_validation_trials", DEFAULT_VALIDATION_TRIALS))


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


class SamplingTimedCheck(TimedCheck):
    """Checks every timed call's samples against the inputs it was given (see the module docstring)."""

    def __init__(self, evaluator: type[Evaluator], ctx: EvaluationContext, baseline: Baseline) -> None:
        super().__init__(evaluator, ctx, baseline)
        self.probability = 1.0
        self.excess, self.variance = baseline.extra.get("timed_score", (0.0, 0.0))
        self.score = self.honest_mean = self.honest_var = self.ignoring_mean = 0.0
        #: Per entry of CHERNOFF_EXPONENTS, the sum over samples of log E[(V p[token])^lambda] for a token
        #: that ignores its call's inputs.
        self.log_moments = torch.zeros(len(CHERNOFF_EXPONENTS), dtype=torch.float64)
        #: The previous call's samples and probabilities, and how many rows of the calls after it (given new
        #: probabilities) repeated their predecessor's sample.
        self.previous: tuple[torch.Tensor, torch.Tensor] | None = None
        self.repeats = self.pairs = self.vocab = 0

    #: Every timed call is picked, and each keeps a [batch, vocab] tensor of probabilities: one at a time.
    grouped = False

    def known(self, key: InputKey) -> None:
        """Never known ahead: every call is judged on the probabilities drawn for it."""
        return None

    def expected(self, key: InputKey,
                 inputs: list[Any]) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """The probabilities the call was given, and its per-row top-k and top-p (None where not an input)."""
        rows = probabilities(self.ctx.definition, inputs)
        return rows, filter_values(self.ctx.definition, inputs, "top_k", rows.shape[0]), \
            filter_values(self.ctx.definition, inputs, "top_p", rows.shape[0])

    def check(self, calls: list[tuple[tuple[torch.Tensor, ...], Any]]) -> CorrectnessResult | None:
        for outputs, given in calls:
            result = self._score(outputs, *given)
            if result is not None:
                return result
        return None

    def _score(self, outputs: tuple[torch.Tensor, ...], given: torch.Tensor, top_k: torch.Tensor | None,
               top_p: torch.Tensor | None) -> CorrectnessResult | None:
        """Adds one call's samples to the session's score; a verdict for samples outside [0, vocab) or outside
        the call's top-k / top-p."""
        probs = given.double()
        probs = probs / probs.sum(dim=1, keepdim=True)
        rows, vocab = probs.shape
        tokens = outputs[0].reshape(-1).long().to(probs.device)
        if tokens.numel() != rows or bool(((tokens < 0) | (tokens >= vocab)).any()):
            return CorrectnessResult(EvaluationStatus.INCORRECT_NUMERICAL,
                                     message="a timed call's sample is outside [0, vocab)")
        outside = outside_filters(probs, tokens, top_k, top_p)
        if outside:
            return CorrectnessResult(
                EvaluationStatus.INCORRECT_NUMERICAL,
                message=(f"a timed call's sample is outside the {outside} of the probabilities it was given: a "
                         "token no honest sampler draws (results kept from an earlier call?)"))
        if self.previous is not None and self.previous[1].shape == probs.shape:
            fresh = (probs != self.previous[1]).any(dim=1)  # a row given the same values again may repeat
            self.repeats += int(((tokens == self.previous[0]) & fresh).sum())
            self.pairs += int(fresh.sum())
        self.previous, self.vocab = (tokens.clone(), probs), vocab
        log_scaled = torch.log(probs.clamp_min(1e-300) * vocab)
        self.score += float(log_scaled.gather(1, tokens.unsqueeze(1)).sum())
        honest = (probs * log_scaled).sum(dim=1)
        self.honest_mean += float(honest.sum()) + rows * self.excess
        spread = (probs * log_scaled.square()).sum(dim=1) - honest.square()
        self.honest_var += float(spread.clamp_min(self.variance).sum())
        self.ignoring_mean += float(log_scaled.mean(dim=1).sum())
        # One [rows, vocab] temporary at a time (a [exponents, rows, vocab] one is gigabytes for large vocabularies).
        moments = torch.stack([torch.logsumexp(exponent * log_scaled, dim=1).sum() for exponent in CHERNOFF_EXPONENTS])
        self.log_moments += moments.cpu() - rows * math.log(vocab)
        return None

    @property
    def threshold(self) -> float:
        """The least score that passes: 5 sigma below honest sampling's expectation, and no more than halfway
        from it to the expectation of samples that ignore their inputs."""
        spread = TIMED_SCORE_SIGMAS * math.sqrt(max(self.honest_var, 1e-12))
        return min(self.honest_mean - spread, (self.honest_mean + self.ignoring_mean) / 2)

    @property
    def false_pass_bound(self) -> float:
        """A bound on the probability that samples which ignore their calls' inputs reach ``threshold``
        (Chernoff, exact given the sorted values of each row of probabilities: see the module docstring)."""
        exponents = torch.tensor(CHERNOFF_EXPONENTS, dtype=torch.float64)
        return min(1.0, math.exp(float((self.log_moments - exponents * self.threshold).min())))

    @property
    def repeat_probability(self) -> float:
        """The chance that an honest sampler's rows repeat their previous call's sample at least as often as
        these did: each repeats with probability exactly 1/V (a binomial tail)."""
        if self.repeats == 0:
            return 1.0
        counts = torch.arange(self.repeats, self.pairs + 1, dtype=torch.float64)
        binomial = torch.distributions.Binomial(self.pairs, torch.tensor(1.0 / self.vocab, dtype=torch.float64))
        return float(binomial.log_prob(counts).logsumexp(0).exp())

    def finish(self) -> CorrectnessResult | None:
        if self.repeat_probability < REPEAT_SIGNIFICANCE:
            return CorrectnessResult(
                EvaluationStatus.INCORRECT_NUMERICAL,
                message=(f"{self.repeats} of {self.pairs} rows of timed calls repeat the previous call's sample "
                         f"(honest sampling repeats as many with probability {self.repeat_probability:.1e}): "
                         "skipped calls that left their earlier samples?"),
            )
        if self.score < self.threshold:
            return CorrectnessResult(
                EvaluationStatus.INCORRECT_NUMERICAL,
                message=(f"the samples of timed calls do not follow the probabilities they were given (score "
                         f"{self.score:.1f} < {self.threshold:.1f}; honest sampling scores about "
                         f"{self.honest_mean:.1f} +- {math.sqrt(max(self.honest_var, 0.0)):.1f}, samples that "
                         f"ignore their inputs {self.ignoring_mean:.1f} and pass with probability at most "
                         f"{self.false_pass_bound:.1e}): results kept from an earlier call?"),
            )
        return None


class SamplingEvaluator(Evaluator):
    @classmethod
    def can_evaluate(cls, definition: Definition) -> bool:
        """Sampling definitions whose outputs are samples (integer token ids). FlashInfer files some that
        transform distributions under op type "sampling" (softmax, renormalised or masked probabilities): their
        outputs are deterministic and are judged element-wise."""
        return definition.op_type == "sampling" and all(
            not spec.is_open and not DType(spec.dtype).is_floating for spec in definition.outputs.values())

    @classmethod
    def build_baseline(cls, ctx: EvaluationContext, reference: Callee, *, profile: bool = True) -> Baseline:
        baseline = super().build_baseline(ctx, reference, profile=profile)
        rows = probabilities(ctx.definition, baseline.inputs[0]).shape[0]
        samples = sum(t.numel() for t in baseline.outputs[0] if isinstance(t, torch.Tensor))
        if samples != rows:
            raise ValueError(
                f"the sampling evaluator judges one sample per row of the definition's probabilities ({rows} rows "
                f"here); its outputs hold {samples} values per call: samples that do not follow one row each "
                "(speculative sampling's accepted tokens) need a check of their own (a definition's 'check')")
        draws = REFERENCE_DRAW_FACTOR * validation_draws(ctx)
        baseline.extra["histograms"] = [
            reference_histogram(reference, ctx, x, draws, draw_seed(trial, "reference"))
            for trial, x in enumerate(baseline.inputs)
        ]
        parts = [timed_score_calibration(probabilities(ctx.definition, x), hist.to(ctx.device))
                 for x, hist in zip(baseline.inputs, baseline.extra["histograms"], strict=True)]
        samples = sum(part[2] for part in parts)
        # Per sample: how far the reference's filtering lifts the score, and its spread (SamplingTimedCheck).
        baseline.extra["timed_score"] = (max(sum(part[0] for part in parts) / samples, 0.0),
                                         sum(part[1] for part in parts) / samples)
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
    def first_call(cls, ctx: EvaluationContext) -> CallArgs:
        return CallArgs(ctx.trial_seed(0), validation_draws(ctx), draw_seed(0, "solution"))

    @classmethod
    def check_correctness(cls, ctx: EvaluationContext, solution: SolutionHandle, baseline: Baseline) -> CorrectnessResult:
        if "histograms" not in baseline.extra:
            raise ValueError("the sampling evaluator needs the baseline built by SamplingEvaluator.build_baseline")
        draws = validation_draws(ctx)
        significance = float(ctx.config.extra.get("sampling_significance", DEFAULT_SIGNIFICANCE))
        test = Homogeneity()
        # Each trial's calls, the next trial's made while this one's samples are counted (start_call).
        calls = [CallArgs(seed, draws, draw_seed(trial, "solution")) for trial, seed in enumerate(baseline.seeds)]
        for trial, (inputs, ref_hist) in enumerate(zip(baseline.inputs, baseline.extra["histograms"], strict=True)):
            result = solution.call(calls[trial].seed, repeat=draws, rng_seed=calls[trial].rng_seed)
            if trial + 1 < len(calls):
                solution.start_call(calls[trial + 1])
            hist = histogram([outputs[0] for outputs in result.outputs], ref_hist.shape[1])
            if bool((hist < 0).any()):
                return CorrectnessResult(EvaluationStatus.INCORRECT_NUMERICAL, message="a sample is outside [0, vocab)")
            test = test + homogeneity(probabilities(ctx.definition, inputs), ref_hist, hist)
        p_value = test.p_value
        correctness = Correctness(max_relative_error=test.tvd, max_absolute_error=test.tvd,
                                  extra={"tvd": test.tvd, "chi2": test.statistic, "df": test.df, "p_value": p_value,
                                         "significance": significance, "draws": draws})
        if p_value < significance:
            return CorrectnessResult(
                EvaluationStatus.INCORRECT_NUMERICAL, correctness,
                f"the samples do not follow the reference's distribution (chi-square {test.statistic:.1f} on "
                f"{test.df} degrees of freedom: a correct sampler gives as much with probability {p_value:.1e} < "
                f"{significance})")
        tvd_threshold = ctx.config.extra.get("sampling_tvd_threshold")
        if tvd_threshold is not None and test.tvd > float(tvd_threshold):
            return CorrectnessResult(
                EvaluationStatus.INCORRECT_NUMERICAL, correctness,
                f"the binned total variation distance {test.tvd:.3f} exceeds sampling_tvd_threshold {tvd_threshold}")
        return CorrectnessResult(EvaluationStatus.PASSED, correctness)

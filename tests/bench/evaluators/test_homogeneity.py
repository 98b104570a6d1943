"""The samplers' distribution test at large vocabularies (128k tokens): correct samplers pass it, for inputs drawn
from several secrets, and samplers of another distribution (uniform, greedy, unfiltered) fail it."""

import pytest
import torch
from helpers import evaluation_context, sampling_definition

from flashinfer_bench.bench.calling import ValueReturning, reference_callee
from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators import SamplingEvaluator
from flashinfer_bench.bench.evaluators.homogeneity import Homogeneity, homogeneity
from flashinfer_bench.bench.judge.local import LocalSolution
from flashinfer_bench.data import Definition, EvaluationStatus, Workload

VOCAB = 128256
CFG = ResolvedEvalConfig(warmup_runs=0, iterations=1, num_trials=1, rtol=1e-2, atol=1e-2,
                         extra={"sampling_validation_trials": 100, "sampling_significance": 1e-4})
WORKLOAD = Workload(uuid="v", axes={"batch_size": 2}, inputs={})
#: Samplers by the inverse of the cumulative distribution (torch.multinomial over 128k tokens takes ~50 ms a call
#: on a CPU, and the baseline draws 400 times): the plain one, and one that keeps the 50 most likely tokens.
PLAIN = Definition.model_validate({
    **sampling_definition(VOCAB).model_dump(), "name": "plain_v128256",
    "reference": ("import torch\ndef run(probs):\n    mass = probs.double().cumsum(1)\n"
                  "    u = torch.rand(probs.shape[0], 1, dtype=torch.float64) * mass[:, -1:]\n"
                  "    return torch.searchsorted(mass, u).squeeze(1).clamp_max(probs.shape[1] - 1)\n"),
})
TOP_50 = Definition.model_validate({
    **sampling_definition(VOCAB).model_dump(), "name": "top50_v128256",
    "reference": ("import torch\ndef run(probs):\n    kept = torch.topk(probs, 50, dim=1)\n"
                  "    pick = torch.multinomial(kept.values, 1)\n    return kept.indices.gather(1, pick).squeeze(1)\n"),
})


def _gumbel(probs: torch.Tensor) -> torch.Tensor:
    """Exact sampling by another method: the argmax of log p plus Gumbel noise."""
    return (probs.double().log() - torch.empty_like(probs, dtype=torch.float64).exponential_().log()).argmax(dim=1)


def _counts(probs: torch.Tensor, draws: int, generator: torch.Generator) -> torch.Tensor:
    tokens = torch.multinomial(probs, draws, replacement=True, generator=generator)
    return torch.zeros_like(probs, dtype=torch.float64).scatter_add_(1, tokens, torch.ones_like(tokens,
                                                                                                dtype=torch.float64))


def test_two_samples_of_one_distribution_pass_and_of_others_fail_at_128k_tokens():
    generator = torch.Generator().manual_seed(0)
    probs = torch.softmax(2 * torch.randn(4, VOCAB, generator=generator), dim=1)
    for _ in range(5):
        same = homogeneity(probs, _counts(probs, 400, generator), _counts(probs, 100, generator))
        assert same.df > 4 * 10 and same.p_value > 1e-4
    uniform = homogeneity(probs, _counts(probs, 400, generator), _counts(torch.ones_like(probs), 100, generator))
    greedy = torch.zeros_like(probs, dtype=torch.float64).scatter_(1, probs.argmax(dim=1, keepdim=True), 100.0)
    assert uniform.p_value < 1e-12 and homogeneity(probs, _counts(probs, 400, generator), greedy).p_value < 1e-12


def test_a_deterministic_row_adds_no_degree_of_freedom_and_another_token_fails():
    probs = torch.tensor([[0.7, 0.2, 0.1]])
    one = torch.tensor([[400.0, 0.0, 0.0]])
    assert homogeneity(probs, one, torch.tensor([[100.0, 0.0, 0.0]])) == Homogeneity(0.0, 0, 0.0)
    other = homogeneity(probs, one, torch.tensor([[0.0, 100.0, 0.0]]))
    assert other.df == 1 and other.p_value < 1e-12 and other.tvd == 1.0


def _judged(definition: Definition, fn, secret: int):
    ctx = evaluation_context(definition, WORKLOAD, CFG, secret=secret)
    baseline = SamplingEvaluator.build_baseline(ctx, reference_callee(definition), profile=False)
    return SamplingEvaluator.check_correctness(ctx, LocalSolution(ctx, ValueReturning(fn)), baseline)


def _top_50(probs: torch.Tensor) -> torch.Tensor:
    """Another implementation of TOP_50's reference: all but the 50 most likely masked, then Gumbel sampling."""
    threshold = probs.topk(50, dim=1).values[:, -1:]
    return _gumbel(torch.where(probs >= threshold, probs, torch.zeros_like(probs)))


@pytest.mark.parametrize("secret", [1, 2, 3])
def test_correct_samplers_pass_at_128k_tokens(secret):
    honest = _judged(PLAIN, _gumbel, secret)
    assert honest.passed, honest.message
    assert honest.correctness.extra["p_value"] >= 1e-4 and honest.correctness.extra["df"] > 2 * 10
    filtered = _judged(TOP_50, _top_50, secret)
    assert filtered.passed, filtered.message


def test_samplers_of_another_distribution_fail_at_128k_tokens():
    for definition, wrong in [(PLAIN, lambda p: torch.randint(0, VOCAB, (p.shape[0],))),  # uniform
                              (PLAIN, lambda p: p.argmax(dim=1)),  # greedy
                              (TOP_50, _gumbel)]:  # ignores the top-k
        result = _judged(definition, wrong, 1)
        assert result.status is EvaluationStatus.INCORRECT_NUMERICAL, result.message
        assert "do not follow the reference's distribution" in result.message

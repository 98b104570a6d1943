"""Distributions filed under op type "sampling" (FlashInfer's softmax and renormalised probabilities): element-wise
tolerances cannot see a wrong distribution over a large vocabulary, the row's total variation distance can."""

import torch
from helpers import judged_locally

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators import DistributionEvaluator, SamplingEvaluator, resolve_evaluator
from flashinfer_bench.bench.evaluators.distribution import distribution_errors, is_distribution
from flashinfer_bench.data import Definition, EvaluationStatus, Workload

# The defaults the dumps run under: at V = 4096 a row's values (~2e-4) are far below atol.
CFG = ResolvedEvalConfig(warmup_runs=0, iterations=1, num_trials=2, rtol=1e-2, atol=1e-2)
SOFTMAX = Definition.model_validate({
    "name": "softmax_v4096", "op_type": "sampling",
    "axes": {"batch_size": {"type": "var"}, "vocab_size": {"type": "const", "value": 4096}},
    "inputs": {"logits": {"shape": ["batch_size", "vocab_size"], "dtype": "float32"}},
    "outputs": {"output": {"shape": ["batch_size", "vocab_size"], "dtype": "float32"}},
    "reference": "import torch\n\ndef run(logits):\n    return torch.softmax(logits, dim=-1)\n",
})
WORKLOAD = Workload.model_validate({"uuid": "w", "axes": {"batch_size": 3},
                                    "inputs": {"logits": {"type": "random"}}})


def judge(fn, cfg=CFG):
    return judged_locally(DistributionEvaluator, SOFTMAX, fn, cfg, WORKLOAD)[0]


def test_floating_sampling_outputs_go_to_the_distribution_evaluator_and_samples_do_not():
    assert resolve_evaluator(SOFTMAX) is DistributionEvaluator
    sampler = SOFTMAX.model_copy(update={"outputs": {"samples": SOFTMAX.outputs["output"].model_copy(
        update={"shape": ["batch_size"], "dtype": "int32"})}})
    assert resolve_evaluator(sampler) is SamplingEvaluator


def test_a_wrong_distribution_within_every_element_tolerance_fails_by_its_distance():
    assert judge(lambda logits: torch.softmax(logits, dim=-1)).status is EvaluationStatus.PASSED
    honest_bf16 = judge(lambda logits: torch.softmax(logits.bfloat16(), dim=-1).float())
    assert honest_bf16.status is EvaluationStatus.PASSED
    assert honest_bf16.correctness.extra["max_tvd"] < 0.01
    for wrong in (lambda logits: torch.softmax(logits, dim=-1) * 1.25,        # the dumps check's perturbed copy
                  lambda logits: torch.full_like(logits, 1 / logits.shape[-1]),  # ignores its inputs
                  lambda logits: torch.softmax(logits * 0.5, dim=-1)):          # wrong temperature
        result = judge(wrong)
        assert result.status is EvaluationStatus.INCORRECT_NUMERICAL
        assert "total variation distance" in result.message and result.correctness.extra["max_tvd"] > 0.01


def test_the_threshold_is_read_from_extra():
    halved = lambda logits: torch.softmax(logits * 0.5, dim=-1)  # noqa: E731
    loose = CFG.model_copy(update={"extra": {"distribution_tvd_threshold": 1.0}})
    assert judge(halved, loose).status is EvaluationStatus.PASSED


def test_only_rows_that_are_distributions_are_compared_as_such():
    probs = torch.softmax(torch.randn(2, 64), dim=-1)
    assert is_distribution(probs)
    logits = torch.randn(2, 64)
    assert not is_distribution(logits) and not is_distribution(probs * 2) and not is_distribution(probs[0, 0])
    masked = probs.masked_fill(probs < probs.median(), float("-inf"))  # masked logits: element-wise only
    assert not is_distribution(masked)
    assert "max_tvd" not in distribution_errors(logits * 1.001, logits, CFG).extra
    errors = distribution_errors(probs * 1.25, probs, CFG)
    assert errors.matched == 0 and errors.total == probs.numel() and errors.extra["max_tvd"] > 0.1

"""A definition's own ``check`` (as FlashInfer writes it) is a correctness rule the judge adds to the evaluator's
tolerance checks: it can fail outputs the tolerances let through, never pass outputs they fail."""

from helpers import SCALE_ADD, judged_locally

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators import DefaultEvaluator
from flashinfer_bench.data import Definition, EvaluationStatus, Workload

CFG = ResolvedEvalConfig(warmup_runs=1, iterations=3, num_trials=2, rtol=1e-2, atol=1e-2)
WORKLOAD = Workload(uuid="w", axes={"n": 64}, inputs={})
#: Exact equality, in FlashInfer's form: check(reference_outputs, actual_outputs, **thresholds) -> bool.
EXACT = "def exact_check(reference_outputs, actual_outputs, **kwargs):\n" \
        "    return all(bool((r == a).all()) for r, a in zip(reference_outputs, actual_outputs))\n"
#: FlashInfer's own helper, which the judge provides without FlashInfer installed.
DEFAULT = "def default_tolerance_check(reference_outputs: Any, actual_outputs: Any, **kwargs: Any) -> bool:\n" \
          "    from flashinfer.trace import default_check\n" \
          "    return default_check(reference_outputs, actual_outputs, **kwargs)\n"


def judged(check: str, fn) -> object:
    definition = Definition.model_validate(dict(SCALE_ADD, check=check))
    return judged_locally(DefaultEvaluator, definition, fn, CFG, WORKLOAD)[0]


def test_the_definitions_check_fails_what_the_tolerances_let_through():
    slightly_off = judged(EXACT, lambda x, y: x * 2 + y + 1e-4)
    assert slightly_off.status is EvaluationStatus.INCORRECT_NUMERICAL
    assert "exact_check" in slightly_off.message
    assert judged(EXACT, lambda x, y: x * 2 + y).status is EvaluationStatus.PASSED


def test_the_definitions_check_never_passes_what_the_tolerances_fail():
    assert judged(DEFAULT, lambda x, y: x * 2 + y).status is EvaluationStatus.PASSED
    wrong = judged("def any_check(reference_outputs, actual_outputs, **kwargs):\n    return True\n",
                   lambda x, y: x * 3 + y)
    assert wrong.status is EvaluationStatus.INCORRECT_NUMERICAL and "exceed" in wrong.message

"""The value comparison: rows compared together give what each row gives alone, finite or not."""

from __future__ import annotations

import math

import torch

from flashinfer_bench.bench.config import BenchmarkConfig
from flashinfer_bench.bench.evaluators import DefaultEvaluator
from flashinfer_bench.bench.evaluators.compare import (
    ValueErrors,
    _errors_with_nonfinite,
    row_errors,
    value_errors,
)
from flashinfer_bench.bench.evaluators.dsa import DSAEvaluator
from flashinfer_bench.data import Definition

RTOL, ATOL = 1e-2, 1e-3
NAN, INF = float("nan"), float("inf")


def full_rule(out: torch.Tensor, ref: torch.Tensor) -> ValueErrors:
    """The rule for rows holding non-finite values, applied to any row."""
    return _errors_with_nonfinite(out.double().reshape(-1), ref.double().reshape(-1), RTOL, ATOL)


def same(a: ValueErrors, b: ValueErrors) -> bool:
    def eq(x: float, y: float) -> bool:
        return x == y or (math.isnan(x) and math.isnan(y))

    return (eq(a.max_absolute_error, b.max_absolute_error) and eq(a.max_relative_error, b.max_relative_error)
            and (a.matched, a.total, a.nonfinite) == (b.matched, b.total, b.nonfinite))


def test_finite_rows_give_what_the_full_rule_gives():
    generator = torch.Generator().manual_seed(0)
    ref = torch.randn(5, 300, generator=generator)
    out = ref + torch.randn(5, 300, generator=generator) * torch.tensor([0.0, 1e-4, 1e-3, 1e-2, 1.0])[:, None]
    out[2, 7] = ref[2, 7] + 5.0  # one element far off
    for row, errors in enumerate(row_errors(out, ref, RTOL, ATOL)):
        assert same(errors, full_rule(out[row], ref[row]))
    assert row_errors(out, ref, RTOL, ATOL)[0].matched == 300 and row_errors(out, ref, RTOL, ATOL)[4].matched < 300


def test_a_row_with_nan_or_inf_is_judged_alone_by_the_full_rule():
    ref = torch.tensor([[1.0, 2.0, 3.0], [1.0, -INF, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, NAN], [1.0, 2.0, 3.0]])
    out = torch.tensor([[1.0, 2.0, 3.0], [1.0, -INF, 3.0], [1.0, NAN, 3.0], [1.0, 2.0, NAN], [INF, 2.0, 3.0]])
    errors = row_errors(out, ref, RTOL, ATOL)
    for row in range(5):
        assert same(errors[row], full_rule(out[row], ref[row]))
    assert not errors[0].nonfinite and errors[0].matched == 3
    assert not errors[1].nonfinite and errors[1].matched == 3  # the same -inf matches
    assert errors[2].nonfinite and errors[4].nonfinite
    assert errors[3].matched == 3  # NaN where the reference has NaN matches


def test_value_errors_is_one_row_of_any_shape():
    ref = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    out = ref.clone()
    out[1, 2] += 1.0
    errors = value_errors(out, ref, RTOL, ATOL)
    assert (errors.matched, errors.total, errors.max_absolute_error) == (11, 12, 1.0)
    assert value_errors(torch.tensor(2.0), torch.tensor(2.0), RTOL, ATOL).matched == 1


TWO_OUTPUTS = Definition.model_validate({
    "name": "two", "op_type": "elementwise", "axes": {"n": {"type": "const", "value": 4}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
    "outputs": {"a": {"shape": ["n"], "dtype": "float32"}, "indices": {"shape": ["n"], "dtype": "int32"}},
    "reference": "def run(x):\n    return x, x.int()\n",
})
CFG = BenchmarkConfig.default().resolve(TWO_OUTPUTS)


def test_calls_compared_together_give_each_call_its_own_errors():
    reference = (torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([0, 1, 2, 3], dtype=torch.int32))
    calls = [
        (reference, reference),
        ((torch.tensor([1.0, 2.5, 3.0, 4.0]), reference[1]), reference),
        ((reference[0], torch.tensor([3, 2, 1, 0], dtype=torch.int32)), reference),
    ]
    together = DefaultEvaluator.output_errors_each(TWO_OUTPUTS, calls, CFG)
    alone = [DefaultEvaluator.output_errors(TWO_OUTPUTS, out, ref, CFG) for out, ref in calls]
    assert all(same(a, b) for a, b in zip(together, alone, strict=True))
    assert [e.matched for e in together] == [8, 7, 4]
    failing = DefaultEvaluator.check_timed_outputs(TWO_OUTPUTS, calls, CFG)
    assert failing is not None and "timed call" in failing.message and "1 of 8" in failing.message
    assert DefaultEvaluator.check_timed_outputs(TWO_OUTPUTS, calls[:1], CFG) is None


def test_an_evaluator_with_its_own_comparison_compares_a_call_at_a_time():
    reference = (torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([[0, 1, 2, 3]], dtype=torch.int32))
    permuted = (reference[0], torch.tensor([[3, 2, 1, 0]], dtype=torch.int32))
    # DSA's comparison takes rows of indices as sets: the permutation matches there, not element-wise.
    assert DSAEvaluator.output_errors_each(TWO_OUTPUTS, [(permuted, reference)], CFG)[0].matched == 8
    assert DefaultEvaluator.output_errors_each(TWO_OUTPUTS, [(permuted, reference)], CFG)[0].matched == 4

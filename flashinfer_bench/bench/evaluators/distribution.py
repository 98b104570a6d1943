"""Distributions that FlashInfer files under op type "sampling" (softmax, top-k/top-p renormalised probabilities):
deterministic outputs, judged element-wise and, where the reference's rows are probability distributions, row by
row as distributions.

Element-wise tolerances alone say nothing about a distribution over a large vocabulary: at V = 32000 a row's
values are about 3e-5, far below the default atol of 1e-2, so a uniform row, or every value 25% off, is within
tolerance everywhere. A row of the solution's output therefore also fails when its total variation distance from
the reference's row (half the L1 distance) exceeds ``distribution_tvd_threshold``. An honest kernel's rounding
moves a row by far less (bf16's relative rounding of 2^-9 per value is at most 0.002 of the mass).
"""

from __future__ import annotations

from typing import Any

import torch

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators.compare import ValueErrors, as_tensor, value_errors
from flashinfer_bench.bench.evaluators.evaluator import CorrectnessResult, Evaluator
from flashinfer_bench.data import Definition, DType

DEFAULT_TVD_THRESHOLD = 0.01
#: How far a reference row's sum may be from 1 for the row to be taken as a distribution.
ROW_SUM_TOLERANCE = 1e-3


def is_distribution(ref: torch.Tensor) -> bool:
    """Whether every row (along the last dimension) of the reference's output is a probability distribution:
    finite, non-negative, summing to 1."""
    if ref.dim() == 0 or ref.shape[-1] < 2 or ref.numel() == 0 or not ref.is_floating_point():
        return False
    rows = ref.double().reshape(-1, ref.shape[-1])
    return bool(torch.isfinite(rows).all() and (rows >= 0).all()
                and ((rows.sum(dim=-1) - 1).abs() <= ROW_SUM_TOLERANCE).all())


def tvd_threshold(cfg: ResolvedEvalConfig) -> float:
    return float(cfg.extra.get("distribution_tvd_threshold", DEFAULT_TVD_THRESHOLD))


def distribution_errors(out: Any, ref: Any, cfg: ResolvedEvalConfig) -> ValueErrors:
    """The element-wise errors, with every element of a row whose total variation distance from the reference's
    row exceeds the threshold counted as unmatched; ``extra["max_tvd"]`` is the largest row distance."""
    errors = value_errors(out, ref, cfg.rtol, cfg.atol)
    ref_t = as_tensor(ref)
    if not is_distribution(ref_t):
        return errors
    ref_rows = ref_t.double().reshape(-1, ref_t.shape[-1])
    out_rows = as_tensor(out).to(ref_t.device).double().reshape(ref_rows.shape)
    diff = (out_rows - ref_rows).abs()
    tvd = 0.5 * diff.sum(dim=-1)
    far = ~(tvd <= tvd_threshold(cfg))  # a NaN distance is far too
    within_far_rows = (diff <= cfg.atol + cfg.rtol * ref_rows.abs())[far].sum()
    max_tvd = float(tvd.nan_to_num(float("inf")).max())
    return ValueErrors(errors.max_absolute_error, errors.max_relative_error, errors.matched - int(within_far_rows),
                       errors.total, errors.nonfinite, {"max_tvd": max_tvd})


class DistributionEvaluator(Evaluator):
    """Op type "sampling" with floating outputs (the ``SamplingEvaluator`` takes those whose outputs are
    samples). Extra key: ``distribution_tvd_threshold`` (default 0.01)."""

    @classmethod
    def can_evaluate(cls, definition: Definition) -> bool:
        return definition.op_type == "sampling" and any(
            spec.is_open or DType(spec.dtype).is_floating for spec in definition.outputs.values())

    @classmethod
    def compare_output(cls, definition: Definition, name: str, out: Any, ref: Any,
                       cfg: ResolvedEvalConfig) -> ValueErrors:
        return distribution_errors(out, ref, cfg)

    @classmethod
    def verdict(cls, errors: ValueErrors, cfg: ResolvedEvalConfig) -> CorrectnessResult:
        result = super().verdict(errors, cfg)
        max_tvd = errors.extra.get("max_tvd")
        if max_tvd is None:
            return result
        result.correctness.extra = {**(result.correctness.extra or {}), "max_tvd": max_tvd}
        if not errors.nonfinite and max_tvd > tvd_threshold(cfg):
            result.message = (f"a row's total variation distance from the reference's distribution is {max_tvd:.4g}"
                              f" > distribution_tvd_threshold {tvd_threshold(cfg)} ({result.message})")
        return result

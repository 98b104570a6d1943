"""Comparing a solution's outputs with the reference's: structure first (count, shape, dtype), then values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from flashinfer_bench.bench.evaluators.slot import TensorLayout
from flashinfer_bench.data import EvaluationStatus


@dataclass
class ValueErrors:
    """Worst errors of one output against its reference, and how many elements were within tolerance."""

    max_absolute_error: float = 0.0
    max_relative_error: float = 0.0
    matched: int = 0
    total: int = 0
    nonfinite: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def matched_ratio(self) -> float:
        return self.matched / self.total if self.total else 1.0

    def merge(self, other: ValueErrors) -> ValueErrors:
        return ValueErrors(
            max(self.max_absolute_error, other.max_absolute_error),
            max(self.max_relative_error, other.max_relative_error),
            self.matched + other.matched,
            self.total + other.total,
            self.nonfinite or other.nonfinite,
        )


def as_tensor(value: Any) -> torch.Tensor:
    return value if isinstance(value, torch.Tensor) else torch.as_tensor(value)


def output_mismatch(outputs: Sequence[Any], expected: Sequence[TensorLayout],
                    device: str) -> tuple[EvaluationStatus, str] | None:
    """INCORRECT_SHAPE or INCORRECT_DTYPE with a message, or None when every output is a tensor of the
    definition's shape and dtype on the evaluation's device (the device is part of an output's type: a CPU
    result in a CUDA run is not the kernel's result)."""
    where = torch.device(device)
    for out, spec in zip(outputs, expected, strict=True):
        if not isinstance(out, torch.Tensor):
            return EvaluationStatus.INCORRECT_SHAPE, f"output '{spec.name}' is {type(out).__name__}, expected a tensor"
        if tuple(out.shape) != spec.shape:
            return EvaluationStatus.INCORRECT_SHAPE, f"output '{spec.name}' has shape {list(out.shape)}, expected {list(spec.shape)}"
        if out.dtype != spec.dtype:
            return EvaluationStatus.INCORRECT_DTYPE, f"output '{spec.name}' has dtype {out.dtype}, expected {spec.dtype}"
        if out.device.type != where.type or (where.index is not None and out.device.index != where.index):
            return EvaluationStatus.INCORRECT_DTYPE, f"output '{spec.name}' is on {out.device}, expected {where}"
    return None


def value_errors(out: Any, ref: Any, rtol: float, atol: float) -> ValueErrors:
    """Element-wise |out - ref| <= atol + rtol * |ref|; any NaN/Inf in the output counts as unmatched."""
    out_t = as_tensor(out).to(device=as_tensor(ref).device).double()
    ref_t = as_tensor(ref).double()
    total = out_t.numel()
    if total == 0:
        return ValueErrors()
    finite = torch.isfinite(out_t)
    ref_finite = torch.isfinite(ref_t)
    # Non-finite outputs match only an identical non-finite reference (e.g. -inf log-sum-exp of an empty row).
    same_nonfinite = (~finite) & (~ref_finite) & ((out_t == ref_t) | (torch.isnan(out_t) & torch.isnan(ref_t)))
    diff = (out_t - ref_t).abs()
    diff = torch.where(finite & ref_finite, diff, torch.where(same_nonfinite, 0.0, float("inf")))
    within = diff <= atol + rtol * ref_t.abs().nan_to_num(0.0, 0.0, 0.0)
    relative = diff / ref_t.abs().clamp_min(1e-12).nan_to_num(1.0, 1.0, 1.0)
    # One transfer to the host (on a GPU, one synchronisation) for the four numbers.
    max_abs, max_rel, matched, nonfinite = torch.stack([
        diff.max(), relative.max(), within.sum().double(), (~finite & ~same_nonfinite).any().double(),
    ]).tolist()
    return ValueErrors(
        max_absolute_error=max_abs,
        max_relative_error=max_rel,
        matched=int(matched),
        total=total,
        nonfinite=bool(nonfinite),
    )

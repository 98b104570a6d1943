"""Comparing a solution's outputs with the reference's: structure first (count, shape, dtype), then values."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class ValueErrors:
    """Worst errors of one output against its reference, and how many elements were within tolerance."""

    max_absolute_error: float = 0.0
    max_relative_error: float = 0.0
    matched: int = 0
    total: int = 0
    nonfinite: bool = False
    #: Worst-case measures of an evaluator's own (larger is worse): merging keeps each key's maximum.
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
            {**self.extra, **{key: max(self.extra.get(key, value), value) for key, value in other.extra.items()}},
        )


def as_tensor(value: Any) -> torch.Tensor:
    return value if isinstance(value, torch.Tensor) else torch.as_tensor(value)


def value_errors(out: Any, ref: Any, rtol: float, atol: float) -> ValueErrors:
    """Element-wise |out - ref| <= atol + rtol * |ref|; any NaN/Inf in the output counts as unmatched."""
    return row_errors(as_tensor(out).reshape(1, -1), as_tensor(ref).reshape(1, -1), rtol, atol)[0]


def row_errors(outs: torch.Tensor, refs: torch.Tensor, rtol: float, atol: float) -> list[ValueErrors]:
    """``value_errors`` of each row of two [rows, elements] tensors (e.g. one row per timed call), with one
    transfer to the host (on a GPU, one synchronisation) for all of them.

    Where every element of a row is finite in both, |out - ref| is finite everywhere and its maximum says so;
    those rows need only the plain formula. A row whose maximum is not finite holds a NaN or an infinity in one
    of them and is compared again by the full rule (``_errors_with_nonfinite``).
    """
    out_t = outs.to(device=refs.device).double()
    ref_t = refs.double()
    rows, total = ref_t.shape
    if total == 0:
        return [ValueErrors() for _ in range(rows)]
    diff = (out_t - ref_t).abs()
    scale = ref_t.abs()
    within = diff <= scale * rtol + atol
    relative = diff / scale.clamp_min(1e-12)
    max_abs, max_rel, matched = torch.stack([diff.amax(dim=1), relative.amax(dim=1), within.sum(dim=1).double()]).tolist()
    return [ValueErrors(max_abs[row], max_rel[row], int(matched[row]), total) if math.isfinite(max_abs[row])
            else _errors_with_nonfinite(out_t[row], ref_t[row], rtol, atol) for row in range(rows)]


def _errors_with_nonfinite(out_t: torch.Tensor, ref_t: torch.Tensor, rtol: float, atol: float) -> ValueErrors:
    """``value_errors`` of two float64 rows of which one holds a NaN or an infinity."""
    finite = torch.isfinite(out_t)
    ref_finite = torch.isfinite(ref_t)
    # Non-finite outputs match only an identical non-finite reference (e.g. -inf log-sum-exp of an empty row).
    same_nonfinite = (~finite) & (~ref_finite) & ((out_t == ref_t) | (torch.isnan(out_t) & torch.isnan(ref_t)))
    diff = (out_t - ref_t).abs()
    diff = torch.where(finite & ref_finite, diff, torch.where(same_nonfinite, 0.0, float("inf")))
    within = diff <= atol + rtol * ref_t.abs().nan_to_num(0.0, 0.0, 0.0)
    relative = diff / ref_t.abs().clamp_min(1e-12).nan_to_num(1.0, 1.0, 1.0)
    max_abs, max_rel, matched, nonfinite = torch.stack([
        diff.max(), relative.max(), within.sum().double(), (~finite & ~same_nonfinite).any().double(),
    ]).tolist()
    return ValueErrors(
        max_absolute_error=max_abs,
        max_relative_error=max_rel,
        matched=int(matched),
        total=out_t.numel(),
        nonfinite=bool(nonfinite),
    )


def all_zero(outputs: tuple[Any, ...]) -> bool:
    """Whether every tensor among one call's outputs holds only zeros (and there is at least one)."""
    tensors = [value for value in outputs if isinstance(value, torch.Tensor)]
    return bool(tensors) and all(not bool(tensor.any()) for tensor in tensors)


def warm_up(device: str) -> None:
    """Compare a few rows of each common output dtype once (a finite pair and one holding an infinity), so that CUDA
    loads the comparisons' kernels in a judge before its first item rather than in it (a kernel's module is loaded
    on its first launch)."""
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.int64):
        rows = torch.ones((2, 4), dtype=dtype, device=device)
        row_errors(rows, rows.clone(), 1e-3, 1e-3)
    finite = torch.ones((1, 4), device=device)
    row_errors(finite, torch.full_like(finite, math.inf), 1e-3, 1e-3)

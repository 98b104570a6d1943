"""Compare a backend's output with the higher-precision torch reference, with per-dtype tolerances."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Tolerance:
    """An element is close when ``|out - ref| <= atol * max(1, rms(ref)) + rtol * |ref|``; the check passes when
    at least ``min_close_fraction`` of the elements are close (1.0: all of them) and none is NaN/Inf where ref is
    finite. Scaling atol by the reference's RMS keeps it meaningful for long dot products (GEMM outputs of
    magnitude 100 carry absolute rounding errors of order 1, also near zero) while leaving unit-scale outputs
    (attention) at the plain atol."""

    atol: float
    rtol: float
    min_close_fraction: float = 1.0


# Keyed by the backend's output dtype: the budget is a few units in the last place of that dtype, widened for the
# reduction-order differences of long dot products.
DTYPE_TOLERANCES: dict[torch.dtype, Tolerance] = {
    torch.bfloat16: Tolerance(atol=2e-2, rtol=2e-2),
    torch.float16: Tolerance(atol=5e-3, rtol=5e-3),
    torch.float32: Tolerance(atol=1e-4, rtol=1e-4),
}
# Quantised pipelines whose kernels re-quantise intermediates (e.g. MoE activations to FP8/FP4) differ from an
# unquantised-intermediate reference by the quantisation step itself; judge them by the fraction of close elements.
QUANTIZED_PIPELINE = Tolerance(atol=0.1, rtol=0.85, min_close_fraction=0.925)


def tolerance_for(dtype: torch.dtype, quantized_pipeline: bool = False) -> Tolerance:
    return QUANTIZED_PIPELINE if quantized_pipeline else DTYPE_TOLERANCES[dtype]


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    close_fraction: float
    num_outside: int
    max_abs_diff: float
    max_rel_diff: float
    worst_index: tuple[int, ...]
    worst_value: float
    worst_reference: float


def compare(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> CheckResult:
    """Element-wise comparison in float64 on the reference's device."""
    if out.shape != ref.shape:
        raise ValueError(f"output shape {tuple(out.shape)} differs from reference shape {tuple(ref.shape)}")
    o = out.detach().to(device=ref.device, dtype=torch.float64)
    r = ref.detach().to(torch.float64)
    diff = (o - r).abs()
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
    finite_ref = r[torch.isfinite(r)]
    rms = finite_ref.square().mean().sqrt().item() if finite_ref.numel() else 0.0
    close = diff <= tol.atol * max(1.0, rms) + tol.rtol * r.abs()
    num_close = int(close.sum().item())  # an integer count: a float mean of many booleans can miss 1.0 exactly
    fraction = num_close / close.numel() if close.numel() else 1.0
    flat = int(torch.argmax(diff).item()) if diff.numel() else 0
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape)) if diff.numel() else ()
    max_abs = diff.max().item() if diff.numel() else 0.0
    rel = diff / r.abs().clamp(min=tol.atol)
    return CheckResult(
        passed=num_close >= math.ceil(tol.min_close_fraction * close.numel()) and bool(torch.isfinite(diff[torch.isfinite(r)]).all()),
        close_fraction=fraction,
        num_outside=close.numel() - num_close,
        max_abs_diff=max_abs,
        max_rel_diff=rel.max().item() if rel.numel() else 0.0,
        worst_index=index,
        worst_value=o[index].item() if diff.numel() else 0.0,
        worst_reference=r[index].item() if diff.numel() else 0.0,
    )


def tensor_stats(t: torch.Tensor) -> str:
    """One line of statistics for ``-vv``: shape, dtype, mean, std, min, max and non-finite count."""
    f = t.detach().double()
    finite = f[torch.isfinite(f)]
    if finite.numel() == 0:
        return f"shape={tuple(t.shape)} dtype={t.dtype} (no finite values)"
    return (
        f"shape={tuple(t.shape)} dtype={t.dtype} mean={finite.mean().item():.6g} std={finite.std().item() if finite.numel() > 1 else 0.0:.6g} "
        f"min={finite.min().item():.6g} max={finite.max().item():.6g} nonfinite={f.numel() - finite.numel()}"
    )

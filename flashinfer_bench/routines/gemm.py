"""GEMM routines: bmm_fp8 (per-tensor FP8), gemm_fp8_nt_groupwise / group_gemm_fp8_nt_groupwise (FP8 with
block scales, A per 1 x tile, B per tile x tile), mm_fp4 (NVFP4 with 16-element block scales).

Operands start as random bfloat16 and are quantised once ("NT": A is [.., M, K], B is [.., N, K]). The torch
backend dequantises (applies the scales) and multiplies in the output dtype; the reference does the same in
float64/float32, so refcheck measures the kernel, not the quantisation. FlashInfer's mm_fp4 backends quantise
with FlashInfer's own ``fp4_quantize`` (its scale layouts are swizzled), which follows the same NVFP4 recipe.
"""

from __future__ import annotations

import argparse
from types import ModuleType
from typing import Any

import torch

from . import metrics, quant
from .case import TORCH_DTYPES, Case, reference_dtype
from .refcheck import tolerance_for

Quantized = dict[str, torch.Tensor]


def _groups(args: argparse.Namespace) -> int:
    return args.group_size if args.routine == "group_gemm_fp8_nt_groupwise" else 1


def make_inputs(args: argparse.Namespace, device: torch.device) -> tuple[Quantized, torch.Tensor, torch.Tensor]:
    """(quantised tensors and scales, A and B in bfloat16 before quantisation)."""
    gen = torch.Generator().manual_seed(args.random_seed)
    m, n, k, t = args.m, args.n, args.k, args.tile_size

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen).to(device=device, dtype=torch.bfloat16)

    if args.routine == "bmm_fp8":
        a_hp, b_hp = randn(args.batch_size, m, k), randn(args.batch_size, n, k)
        a, sa = quant.quantize_fp8_per_tensor(a_hp, quant.FP8_DTYPES[args.input_dtype])
        b, sb = quant.quantize_fp8_per_tensor(b_hp, quant.FP8_DTYPES[args.mat2_dtype])
        return {"a": a, "b": b, "a_scale": sa, "b_scale": sb}, a_hp, b_hp
    if args.routine == "mm_fp4":
        a_hp, b_hp = randn(m, k), randn(n, k)
        ga, gb = quant.nvfp4_global_scale(a_hp), quant.nvfp4_global_scale(b_hp)
        a, sfa = quant.quantize_nvfp4(a_hp, ga)
        b, sfb = quant.quantize_nvfp4(b_hp, gb)
        return {"a": a, "b": b, "a_scale": sfa, "b_scale": sfb, "a_global": ga, "b_global": gb}, a_hp, b_hp
    a_hp = randn(_groups(args) * m, k)
    b_hp = randn(_groups(args), n, k)
    if args.routine == "gemm_fp8_nt_groupwise":
        b_hp = b_hp[0]
    a, sa = quant.quantize_fp8_blockwise(a_hp, 1, t, quant.FP8_DTYPES[args.input_dtype])
    b, sb = quant.quantize_fp8_blockwise(b_hp, t, t, quant.FP8_DTYPES[args.mat2_dtype])
    return {"a": a, "b": b, "a_scale": sa, "b_scale": sb}, a_hp, b_hp


def dequantize(args: argparse.Namespace, q: Quantized) -> tuple[torch.Tensor, torch.Tensor]:
    """Apply the scales: float32 A [.., M, K] and B [.., N, K]."""
    if args.routine == "bmm_fp8":
        return q["a"].float() * q["a_scale"], q["b"].float() * q["b_scale"]
    if args.routine == "mm_fp4":
        return (quant.dequantize_nvfp4(q["a"], q["a_scale"], q["a_global"]),
                quant.dequantize_nvfp4(q["b"], q["b_scale"], q["b_global"]))
    t = args.tile_size
    return quant.dequantize_blockwise(q["a"], q["a_scale"], 1, t), quant.dequantize_blockwise(q["b"], q["b_scale"], t, t)


def torch_gemm(args: argparse.Namespace, q: Quantized, dtype: torch.dtype) -> torch.Tensor:
    """Dequantise, multiply with float32 accumulation at least (as scaled-matmul kernels do), return ``dtype``.

    Shapes: [B, M, N] (bmm), [G*M, N] (group), [M, N] otherwise.
    """
    compute = dtype if dtype in (torch.float32, torch.float64) else torch.float32
    a, b = (x.to(compute) for x in dequantize(args, q))
    if args.routine == "group_gemm_fp8_nt_groupwise":
        return (a.view(_groups(args), args.m, args.k) @ b.transpose(-1, -2)).reshape(-1, args.n).to(dtype)
    return (a @ b.transpose(-1, -2)).to(dtype)


def flashinfer_backend(
    fi: ModuleType, backend: str, args: argparse.Namespace, q: Quantized, a_hp: torch.Tensor, b_hp: torch.Tensor
) -> Any:
    out_dtype = TORCH_DTYPES[args.out_dtype]
    t = args.tile_size
    if args.routine == "bmm_fp8":
        b_col = q["b"].transpose(-1, -2)  # [B, K, N], column-major as bmm_fp8 expects
        return lambda: fi.bmm_fp8(q["a"], b_col, q["a_scale"], q["b_scale"], out_dtype, backend=backend)
    if args.routine == "mm_fp4":
        layout_128x4 = args.use_128x4_sf_layout
        ga, gb = quant.nvfp4_global_scale(a_hp), quant.nvfp4_global_scale(b_hp)
        a, sfa = fi.fp4_quantize(a_hp, ga, 16, False, True, not layout_128x4)
        b, sfb = fi.fp4_quantize(b_hp, gb, 16, False, True, False)
        alpha = 1.0 / (ga * gb)
        return lambda: fi.mm_fp4(a, b.T, sfa, sfb.T, alpha, out_dtype, block_size=16,
                                 use_8x4_sf_layout=not layout_128x4, backend=backend)
    mode = args.scale_major_mode
    sa, sb = q["a_scale"], q["b_scale"]  # logical [M(/1), K/t] and [.., N/t, K/t]
    if args.routine == "gemm_fp8_nt_groupwise" and backend == "trtllm":
        # trtllm: no scale_major_mode; A's scale [M, K/t] stored column-major, B's scale as [K/t, N/t].
        a_s, b_s = sa.t().contiguous().t(), sb.t().contiguous()
        return lambda: fi.gemm.gemm_fp8_nt_groupwise(q["a"], q["b"], a_s, b_s, None, args.mma_sm, (1, t, t),
                                                     out_dtype=out_dtype, backend="trtllm")
    # cutlass: "MN" wants the scales K-block-major ([K/t, M], [.., K/t, N/t]), "K" wants them as stored.
    a_s = sa.t().contiguous() if mode == "MN" else sa
    b_s = sb.transpose(-1, -2).contiguous() if mode == "MN" else sb
    if args.routine == "gemm_fp8_nt_groupwise":
        return lambda: fi.gemm.gemm_fp8_nt_groupwise(q["a"], q["b"], a_s, b_s, mode, args.mma_sm, (1, t, t),
                                                     out_dtype=out_dtype, backend="cutlass")
    m_indptr = torch.arange(_groups(args) + 1, dtype=torch.int32, device=q["a"].device) * args.m
    return lambda: fi.gemm.group_gemm_fp8_nt_groupwise(q["a"], q["b"], a_s, b_s, m_indptr, (1, t, t), mode,
                                                       args.mma_sm, out_dtype=out_dtype)


def count(args: argparse.Namespace) -> tuple[float, float]:
    """(FLOPs, bytes) of the routine at its stored element sizes, scales included."""
    m, n, k = args.m, args.n, args.k
    out = torch.tensor([], dtype=TORCH_DTYPES[args.out_dtype]).element_size()
    if args.routine == "bmm_fp8":
        b = args.batch_size
        return (metrics.gemm_flops(m, n, k, b),
                metrics.gemm_bytes(m, n, k, 1, 1, out, scale_bytes=2 * metrics.FP32_BYTES, batch=b))
    if args.routine == "mm_fp4":
        scales = metrics.nvfp4_scale_bytes(m, k) + metrics.nvfp4_scale_bytes(n, k) + metrics.FP32_BYTES
        return metrics.gemm_flops(m, n, k), metrics.gemm_bytes(m, n, k, 0.5, 0.5, out, scale_bytes=scales)
    g = _groups(args)
    scales = g * metrics.fp8_groupwise_scale_bytes(m, n, k, args.tile_size)
    return metrics.gemm_flops(m, n, k, g), metrics.gemm_bytes(m, n, k, 1, 1, out, scale_bytes=scales, batch=g)


def build(args: argparse.Namespace, device: torch.device, fi: ModuleType | None, use_cuda_graph: bool) -> Case:
    q, a_hp, b_hp = make_inputs(args, device)
    out_dtype = TORCH_DTYPES[args.out_dtype]
    flops, num_bytes = count(args)

    def make_backend(backend: str) -> Any:
        if backend == "torch":
            return lambda: torch_gemm(args, q, out_dtype)
        assert fi is not None
        return flashinfer_backend(fi, backend, args, q, a_hp, b_hp)

    return Case(
        reference=lambda: torch_gemm(args, q, reference_dtype(device)),
        make_backend=make_backend,
        flops=flops,
        num_bytes=num_bytes,
        tolerance=tolerance_for(out_dtype),
    )

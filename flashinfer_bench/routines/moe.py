"""Mixture-of-experts routines: routing (deepseek_v3, renormalize, renormalize_naive, llama4, topk), then per
expert a gated GEMM1 [H -> 2I] (first half "up", second half "gate", as FlashInfer's kernels lay it out),
swiglu/geglu, GEMM2 [I -> H], and the routing-weighted sum over the token's experts.

Weights and activations are quantised per routine (FP8 128x128 block scales, FP8 per tensor, NVFP4); the torch
backend and the reference both use the dequantised values (quantised once when the case is built), the backend in
the input dtype, the reference in float64/float32. Kernels that re-quantise the intermediate activation differ
from that by the quantisation step, so quantised routines are judged by the fraction of close elements.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F

from . import metrics, quant
from .case import TORCH_DTYPES, Case, reference_dtype
from .refcheck import tolerance_for

FP4 = "trtllm_fp4_block_scale_moe"
FP8_BLOCK = "trtllm_fp8_block_scale_moe"
FP8_TENSOR = "trtllm_fp8_per_tensor_scale_moe"
CUTLASS = "cutlass_fused_moe"
ROUTING_METHOD_TYPE = {"renormalize": 1, "deepseek_v3": 2, "llama4": 3, "renormalize_naive": 4, "topk": 5}
ACTIVATION_TYPE = {"swiglu": 3, "geglu": 4}  # flashinfer ActivationType.Swiglu / .Geglu
FP8_BLOCK_SIZE = 128


def route(
    logits: torch.Tensor,
    bias: torch.Tensor | None,
    method: str,
    top_k: int,
    n_group: int | None = None,
    topk_group: int | None = None,
    routed_scaling_factor: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (expert ids [T, top_k], float32 weights [T, top_k]).

    deepseek_v3: sigmoid, add bias, score each group by its top-2 biased scores, keep the best ``topk_group``
    groups, take the top_k biased scores there; weights are the *unbiased* sigmoid scores, normalised to sum 1,
    times ``routed_scaling_factor``. renormalize: top_k logits, softmax over them. renormalize_naive: softmax over
    all, top_k, divide by their sum. llama4: top-1 of the (biased) logits, weight sigmoid(logit). topk: top_k logits
    as they are. cutlass_fused_moe uses "softmax": softmax over all experts, top_k, no renormalisation.
    """
    x = logits.float()
    if method == "deepseek_v3":
        scores = torch.sigmoid(x)
        biased = scores + (bias.float() if bias is not None else 0.0)
        t, e = biased.shape
        grouped = biased.view(t, n_group, e // n_group)
        group_score = grouped.topk(min(2, e // n_group), dim=-1).values.sum(-1)
        keep = torch.zeros_like(group_score, dtype=torch.bool)
        keep.scatter_(1, group_score.topk(topk_group, dim=-1).indices, True)
        masked = biased.masked_fill(~keep.repeat_interleave(e // n_group, dim=1), float("-inf"))
        ids = masked.topk(top_k, dim=-1).indices
        w = scores.gather(1, ids)
        return ids, w / w.sum(-1, keepdim=True) * routed_scaling_factor
    if method == "renormalize":
        vals, ids = x.topk(top_k, dim=-1)
        return ids, torch.softmax(vals, dim=-1)
    if method == "renormalize_naive":
        vals, ids = torch.softmax(x, dim=-1).topk(top_k, dim=-1)
        return ids, vals / vals.sum(-1, keepdim=True)
    if method == "llama4":
        vals, ids = (x + (bias.float() if bias is not None else 0.0)).topk(1, dim=-1)
        return ids, torch.sigmoid(vals)
    if method == "topk":
        vals, ids = x.topk(top_k, dim=-1)
        return ids, vals
    if method == "softmax":
        vals, ids = torch.softmax(x, dim=-1).topk(top_k, dim=-1)
        return ids, vals
    raise ValueError(f"unknown routing method {method}")


def gated(h: torch.Tensor, act: str) -> torch.Tensor:
    """h = [up | gate] along the last axis -> act(gate) * up."""
    up, gate = h.chunk(2, dim=-1)
    return (F.silu(gate) if act == "swiglu" else F.gelu(gate)) * up


def moe_forward(
    x: torch.Tensor,
    w13: torch.Tensor,
    w2: torch.Tensor,
    ids: torch.Tensor,
    weights: torch.Tensor,
    expert_offset: int,
    act: str,
    scales_on_input: bool,
    dtype: torch.dtype,
) -> torch.Tensor:
    """Experts [expert_offset, expert_offset + len(w13)) in ``dtype``; other experts contribute nothing."""
    x, w13, w2, weights = x.to(dtype), w13.to(dtype), w2.to(dtype), weights.to(dtype)
    out = torch.zeros(x.shape[0], w2.shape[1], dtype=dtype, device=x.device)
    for local in range(w13.shape[0]):
        tok, slot = (ids == local + expert_offset).nonzero(as_tuple=True)
        if tok.numel() == 0:
            continue
        w = weights[tok, slot].unsqueeze(1)
        xe = x[tok] * w if scales_on_input else x[tok]
        y = gated(xe @ w13[local].T, act) @ w2[local].T
        out.index_add_(0, tok, y if scales_on_input else y * w)
    return out


@dataclass
class MoeInputs:
    """Dequantised tensors (what the torch backend and the reference use) and the quantised ones FlashInfer gets."""

    hidden: torch.Tensor  # [T, H]
    w13: torch.Tensor  # [L, 2I', H] local experts (I' = I / tp_size for cutlass TP)
    w2: torch.Tensor  # [L, H, I']
    logits: torch.Tensor  # [T, E] float32
    bias: torch.Tensor | None  # [E] bfloat16
    ids: torch.Tensor
    weights: torch.Tensor
    expert_offset: int
    quantized: dict[str, torch.Tensor]


def _local_experts(args: argparse.Namespace) -> tuple[int, int]:
    if args.routine == CUTLASS:
        per_rank = args.num_experts // args.ep_size
        return args.ep_rank * per_rank, per_rank
    return args.local_expert_offset, args.local_num_experts or args.num_experts


def make_inputs(args: argparse.Namespace, device: torch.device) -> MoeInputs:
    gen = torch.Generator().manual_seed(args.random_seed)
    t, h, i, e = args.num_tokens, args.hidden_size, args.intermediate_size, args.num_experts
    offset, n_local = _local_experts(args)

    def randn(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return (torch.randn(*shape, generator=gen) * scale).to(device=device, dtype=torch.bfloat16)

    hidden = randn(t, h)
    w13 = randn(n_local, 2 * i, h, scale=1 / math.sqrt(h))
    w2 = randn(n_local, h, i, scale=1 / math.sqrt(i))
    logits = torch.randn(t, e, generator=gen).to(device)
    bias = randn(e, scale=0.1) if args.use_routing_bias else None
    if args.routine == CUTLASS:
        ids, weights = route(logits, None, "softmax", args.top_k)
        shard = i // args.tp_size
        cols = slice(args.tp_rank * shard, (args.tp_rank + 1) * shard)
        w13 = torch.cat((w13[:, :i][:, cols], w13[:, i:][:, cols]), dim=1)
        w2 = w2[:, :, cols]
    else:
        ids, weights = route(logits, bias, args.routing_method, args.top_k, args.n_group, args.topk_group,
                             args.routed_scaling_factor)
    hidden, w13, w2, quantized = _quantize(args, hidden, w13, w2)
    return MoeInputs(hidden, w13, w2, logits, bias, ids, weights, offset, quantized)


def _quantize(
    args: argparse.Namespace, hidden: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Quantise per the routine's scheme; return the dequantised tensors and the quantised pieces."""
    if args.routine == FP8_BLOCK:
        b = FP8_BLOCK_SIZE
        hq, hs = quant.quantize_fp8_blockwise(hidden, 1, b)
        w13q, w13s = quant.quantize_fp8_blockwise(w13, b, b)
        w2q, w2s = quant.quantize_fp8_blockwise(w2, b, b)
        q = {"hidden": hq, "hidden_scale": hs, "w13": w13q, "w13_scale": w13s, "w2": w2q, "w2_scale": w2s}
        return (quant.dequantize_blockwise(hq, hs, 1, b), quant.dequantize_blockwise(w13q, w13s, b, b),
                quant.dequantize_blockwise(w2q, w2s, b, b), q)
    if args.routine == FP8_TENSOR or (args.routine == CUTLASS and args.cutlass_variant == "fp8"):
        fp8 = torch.float8_e4m3fn
        (hq, hs), (w13q, w13s), (w2q, w2s) = (quant.quantize_fp8_per_tensor(x, fp8) for x in (hidden, w13, w2))
        q = {"hidden": hq, "hidden_scale": hs, "w13": w13q, "w13_scale": w13s, "w2": w2q, "w2_scale": w2s}
        return hq.float() * hs, w13q.float() * w13s, w2q.float() * w2s, q
    if args.routine == FP4 or (args.routine == CUTLASS and args.cutlass_variant == "nvfp4"):
        out = []
        q = {}
        for name, x in (("hidden", hidden), ("w13", w13), ("w2", w2)):
            if name == "hidden" and args.routine == CUTLASS and not args.quantized_input:
                out.append(x.float())
                continue
            gs = quant.nvfp4_global_scale(x)
            packed, sf = quant.quantize_nvfp4(x, gs)
            q.update({name: packed, f"{name}_scale": sf, f"{name}_global": gs})
            out.append(quant.dequantize_nvfp4(packed, sf, gs))
        return out[0], out[1], out[2], q
    dtype = TORCH_DTYPES[args.input_dtype]
    return hidden.to(dtype), w13.to(TORCH_DTYPES[args.weight_dtype]), w2.to(TORCH_DTYPES[args.weight_dtype]), {}


def torch_moe(args: argparse.Namespace, inp: MoeInputs, dtype: torch.dtype) -> torch.Tensor:
    return moe_forward(inp.hidden, inp.w13, inp.w2, inp.ids, inp.weights, inp.expert_offset, args.gated_act,
                       args.use_routing_scales_on_input, dtype)


def flashinfer_backend(fi: ModuleType, backend: str, args: argparse.Namespace, inp: MoeInputs) -> Any:
    """Wired: trtllm_fp8_block_scale_moe (trtllm) and cutlass_fused_moe base variant (cutlass)."""
    n_local = inp.w13.shape[0]
    if args.routine == CUTLASS and args.cutlass_variant == "base":
        dtype = TORCH_DTYPES[args.input_dtype]
        x, w13, w2 = inp.hidden.to(dtype), inp.w13.to(dtype).contiguous(), inp.w2.to(dtype).contiguous()
        ids, scales = inp.ids.to(torch.int32), inp.weights.float()
        return lambda: fi.fused_moe.cutlass_fused_moe(
            x, ids, scales, w13, w2, dtype, quant_scales=[], tp_size=args.tp_size, tp_rank=args.tp_rank,
            ep_size=args.ep_size, ep_rank=args.ep_rank, activation_type=fi.fused_moe.ActivationType.Swiglu
            if args.gated_act == "swiglu" else fi.fused_moe.ActivationType.Geglu,
        )
    if args.routine == FP8_BLOCK and args.weight_layout == 0:
        q = inp.quantized
        w13, w2 = q["w13"], q["w2"]
        if args.use_shuffled_weight:
            w13 = torch.stack([fi.shuffle_matrix_a(w.view(torch.uint8), 64) for w in w13]).view(w13.dtype)
            w2 = torch.stack([fi.shuffle_matrix_a(w.view(torch.uint8), 64) for w in w2]).view(w2.dtype)
        hidden_scale = q["hidden_scale"].t().contiguous()  # [H/128, T]
        return lambda: fi.fused_moe.trtllm_fp8_block_scale_moe(
            inp.logits, inp.bias, q["hidden"], hidden_scale, w13, q["w13_scale"], w2, q["w2_scale"],
            args.num_experts, args.top_k, args.n_group, args.topk_group, args.intermediate_size,
            inp.expert_offset, n_local, args.routed_scaling_factor,
            routing_method_type=ROUTING_METHOD_TYPE[args.routing_method],
            use_shuffled_weight=args.use_shuffled_weight, weight_layout=0,
            activation_type=ACTIVATION_TYPE[args.gated_act],
        )
    raise NotImplementedError(
        f"the FlashInfer {backend} backend of {args.routine} needs weight layouts this benchmark does not build "
        "(wired: trtllm_fp8_block_scale_moe with --weight_layout 0, cutlass_fused_moe --cutlass_variant base)"
    )


def count(args: argparse.Namespace, inp: MoeInputs) -> tuple[float, float]:
    """(FLOPs, bytes) from the actual routing: routed pairs and active experts among the local ones."""
    local = (inp.ids >= inp.expert_offset) & (inp.ids < inp.expert_offset + inp.w13.shape[0])
    routed = int(local.sum())
    active = int(torch.unique(inp.ids[local]).numel())
    h, i = args.hidden_size, inp.w2.shape[2]
    variant = args.cutlass_variant if args.routine == CUTLASS else args.routine
    if variant in (FP8_BLOCK,):
        act, w, scales = 1.0, 1.0, metrics.FP32_BYTES * 3 * (h // 128) * (i // 128)
    elif variant in (FP8_TENSOR, "fp8"):
        act, w, scales = 1.0, 1.0, 3 * metrics.FP32_BYTES
    elif variant in (FP4, "nvfp4"):
        act = 0.5 + 1 / 16 if (args.routine == FP4 or args.quantized_input) else 2.0
        w, scales = 0.5, 3 * h * i / 16
    else:
        act = w = float(torch.tensor([], dtype=TORCH_DTYPES[args.input_dtype]).element_size())
        scales = 0.0
    return (metrics.moe_flops(routed, h, i),
            metrics.moe_bytes(args.num_tokens, h, i, active, act, w, scales, out_elem=2.0))


def build(args: argparse.Namespace, device: torch.device, fi: ModuleType | None, use_cuda_graph: bool) -> Case:
    inp = make_inputs(args, device)
    dtype = TORCH_DTYPES[args.input_dtype]
    flops, num_bytes = count(args, inp)

    def make_backend(backend: str) -> Any:
        if backend == "torch":
            return lambda: torch_moe(args, inp, dtype)
        assert fi is not None
        return flashinfer_backend(fi, backend, args, inp)

    quantized = bool(inp.quantized)
    return Case(
        reference=lambda: torch_moe(args, inp, reference_dtype(device)),
        make_backend=make_backend,
        flops=flops,
        num_bytes=num_bytes,
        tolerance=tolerance_for(dtype, quantized_pipeline=quantized),
        verbose_lines=[f"Routed token-expert pairs: {int(inp.ids.numel())}"],
    )

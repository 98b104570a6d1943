"""Invalid flag combinations, refused before any tensor is built (FlashInfer's benchmark's rules and messages)."""

from __future__ import annotations

import argparse

from .backends import KNOWN_BACKENDS, TORCH
from .errors import UsageError
from .specs import ROUTINES

FP4_MOE = "trtllm_fp4_block_scale_moe"
FP8_BLOCK_MOE = "trtllm_fp8_block_scale_moe"
FP8_TENSOR_MOE = "trtllm_fp8_per_tensor_scale_moe"

# FlashInfer's benchmark's "MOE Routing Method Compatibility" table: which trtllm MoE routines accept which routing method.
ROUTING_COMPAT: dict[str, frozenset[str]] = {
    "deepseek_v3": frozenset({FP4_MOE, FP8_BLOCK_MOE}),
    "renormalize": frozenset({FP4_MOE, FP8_BLOCK_MOE, FP8_TENSOR_MOE}),
    "renormalize_naive": frozenset({FP4_MOE, FP8_BLOCK_MOE}),
    "llama4": frozenset({FP8_TENSOR_MOE}),
    "topk": frozenset({FP4_MOE}),
}
GROUPS_MESSAGE = "Routing kernel with groups implies DeepSeekV3 routing method."


def _need(cond: bool, message: str) -> None:
    if not cond:
        raise UsageError(message)


def validate(args: argparse.Namespace) -> None:
    """Raise UsageError naming the first rule ``args`` breaks."""
    spec = ROUTINES[args.routine]
    missing = [f"--{name}" for name in spec.required if getattr(args, name) is None]
    _need(not missing, f"{args.routine} requires {', '.join(missing)}")
    known = KNOWN_BACKENDS[spec.family] | {TORCH}
    unknown = [b for b in args.backends or () if b not in known]
    _need(not unknown, f"unknown backend(s) {', '.join(unknown)} for {args.routine}; "
                       f"choose from {', '.join(sorted(known))}")
    _need(args.num_iters >= 1 and args.dry_run_iters >= 0, "--num_iters must be >= 1 and --dry_run_iters >= 0")
    sizes = [name for name in spec.required if getattr(args, name) is not None and getattr(args, name) <= 0]
    _need(not sizes, f"{', '.join('--' + s for s in sizes)} must be positive")
    {"attention": _attention, "gemm": _gemm, "moe": _moe}[spec.family](args)


def _attention(args: argparse.Namespace) -> None:
    if args.routine == "BatchDecodeWithPagedKVCacheWrapper":
        _need(args.s_qo == 1, "--s_qo must be 1 for decode (BatchDecodeWithPagedKVCacheWrapper)")
        _need(not args.causal, "--causal applies to prefill only")
    if args.routine == "BatchMLAPagedAttentionWrapper":
        _need(args.s_qo == 1, "BatchMLAPagedAttentionWrapper benchmarks decode: --s_qo must be 1")
        return
    _need(args.num_qo_heads % args.num_kv_heads == 0, "--num_qo_heads must be a multiple of --num_kv_heads")
    _need(args.s_qo <= args.s_kv, "--s_qo must not exceed --s_kv")


def _gemm(args: argparse.Namespace) -> None:
    if args.routine == "mm_fp4":
        _need(args.k % 32 == 0, "mm_fp4 needs --k divisible by 32 (16-element FP4 scale blocks, packed pairs)")
        return
    if args.routine in ("gemm_fp8_nt_groupwise", "group_gemm_fp8_nt_groupwise"):
        t = args.tile_size
        _need(args.k % t == 0 and args.n % t == 0, f"--k and --n must be multiples of --tile_size ({t})")
    _need(args.batch_size >= 1 and args.group_size >= 1, "--batch_size and --group_size must be >= 1")
    _need(not (args.input_dtype == "fp8_e5m2" and args.mat2_dtype == "fp8_e5m2"),
          "fp8_e5m2 x fp8_e5m2 is not supported; make one operand fp8_e4m3")


def _moe(args: argparse.Namespace) -> None:
    _need(args.top_k <= args.num_experts, "--top_k must not exceed --num_experts")
    local = args.local_num_experts if args.local_num_experts is not None else args.num_experts
    _need(0 <= args.local_expert_offset and args.local_expert_offset + local <= args.num_experts,
          "--local_expert_offset + --local_num_experts must lie within --num_experts")
    if args.routine == "cutlass_fused_moe":
        _cutlass_moe(args)
        return
    method, routine = args.routing_method, args.routine
    if method != "deepseek_v3":
        _need(args.n_group is None and args.topk_group is None, GROUPS_MESSAGE)
    _need(routine in ROUTING_COMPAT[method],
          f"Routing method {method} is not compatible with {routine} "
          f"(compatible: {', '.join(sorted(ROUTING_COMPAT[method]))})")
    _need(not args.use_routing_scales_on_input or method == "llama4",
          "--use_routing_scales_on_input is only used with llama4 routing")
    if method == "deepseek_v3":
        _need(args.n_group is not None and args.topk_group is not None and args.use_routing_bias,
              "deepseek_v3 routing requires --n_group, --topk_group, --routed_scaling_factor and --use_routing_bias")
        _need(args.top_k <= 8, "deepseek_v3 routing requires top_k <= 8")
        _need(args.topk_group <= 4, "deepseek_v3 routing requires topk_group <= 4")
        _need(args.num_experts % args.n_group == 0, "--num_experts must be divisible by --n_group")
        _need(args.topk_group <= args.n_group, "--topk_group must not exceed --n_group")
        _need(args.top_k <= args.topk_group * (args.num_experts // args.n_group),
              "--top_k exceeds the experts in the selected groups (topk_group * num_experts / n_group)")
    elif method == "llama4":
        _need(args.top_k == 1, "llama4 routing requires top_k == 1")
        _need(args.use_routing_bias and args.use_routing_scales_on_input,
              "llama4 routing requires --routed_scaling_factor, --use_routing_bias and --use_routing_scales_on_input")
    elif routine == FP4_MOE:
        _need(args.top_k <= 8, f"{method} routing requires top_k <= 8 for FP4 MoE")
    else:
        _need(args.top_k == 1, f"{method} routing requires top_k == 1 for FP8 MoE")
    block = 128 if routine == FP8_BLOCK_MOE else 16
    _need(args.hidden_size % block == 0 and args.intermediate_size % block == 0,
          f"{routine} needs --hidden_size and --intermediate_size divisible by {block}")


def _cutlass_moe(args: argparse.Namespace) -> None:
    _need(0 <= args.tp_rank < args.tp_size, "--tp_rank must be in [0, --tp_size)")
    _need(0 <= args.ep_rank < args.ep_size, "--ep_rank must be in [0, --ep_size)")
    _need(args.intermediate_size % args.tp_size == 0, "--intermediate_size must be divisible by --tp_size")
    _need(args.num_experts % args.ep_size == 0, "--num_experts must be divisible by --ep_size")
    _need(not args.quantized_input or args.cutlass_variant == "nvfp4", "--quantized_input is for nvfp4 only")
    if args.cutlass_variant == "nvfp4":
        _need(args.hidden_size % 16 == 0 and args.intermediate_size % (16 * args.tp_size) == 0,
              "nvfp4 needs --hidden_size and --intermediate_size / --tp_size divisible by 16")

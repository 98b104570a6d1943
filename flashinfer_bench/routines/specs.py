"""The routines' specs, in one place: the CLI, validation, the testlist runner and the CSV all read them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RoutineSpec:
    """What the framework needs to know about one routine.

    ``backends`` lists every backend the routine can run, in the order of FlashInfer's benchmark's support matrix, ``torch``
    last (the torch backend needs no FlashInfer and is the refcheck reference). ``required`` names the flags
    that must be given. ``cuda_graph_stable`` says whether timing captures a CUDA graph by default (FlashInfer's benchmark:
    only stable for paged decode).
    """

    name: str
    family: str
    backends: tuple[str, ...]
    required: tuple[str, ...]
    cuda_graph_stable: bool = False


_ATTN_SIZES = ("batch_size", "s_kv", "num_qo_heads", "num_kv_heads", "head_dim_qk", "head_dim_vo")
_MOE_SIZES = ("num_tokens", "hidden_size", "intermediate_size", "num_experts", "top_k")

ROUTINES: dict[str, RoutineSpec] = {
    spec.name: spec
    for spec in (
        RoutineSpec(
            "BatchDecodeWithPagedKVCacheWrapper",
            "attention",
            ("fa2", "fa2_tc", "cudnn", "trtllm-gen", "trtllm-gen-native", "torch"),
            ("page_size", *_ATTN_SIZES),
            cuda_graph_stable=True,
        ),
        RoutineSpec(
            "BatchPrefillWithPagedKVCacheWrapper",
            "attention",
            ("fa2", "fa3", "cudnn", "trtllm-gen", "trtllm-gen-native", "torch"),
            ("page_size", *_ATTN_SIZES),
        ),
        RoutineSpec(
            "BatchPrefillWithRaggedKVCacheWrapper",
            "attention",
            ("fa2", "fa3", "cudnn", "cutlass", "torch"),
            _ATTN_SIZES,
        ),
        RoutineSpec(
            "BatchMLAPagedAttentionWrapper",
            "attention",
            ("fa2", "trtllm-gen-native", "torch"),
            ("page_size", "batch_size", "s_kv", "num_qo_heads", "head_dim_ckv", "head_dim_kpe"),
        ),
        RoutineSpec("gemm_fp8_nt_groupwise", "gemm", ("cutlass", "trtllm", "torch"), ("m", "n", "k")),
        RoutineSpec("group_gemm_fp8_nt_groupwise", "gemm", ("cutlass", "torch"), ("m", "n", "k")),
        RoutineSpec("bmm_fp8", "gemm", ("cudnn", "cublas", "cutlass", "torch"), ("m", "n", "k")),
        RoutineSpec("mm_fp4", "gemm", ("cudnn", "cutlass", "trtllm", "torch"), ("m", "n", "k")),
        RoutineSpec("trtllm_fp4_block_scale_moe", "moe", ("trtllm", "torch"), _MOE_SIZES),
        RoutineSpec("trtllm_fp8_block_scale_moe", "moe", ("trtllm", "torch"), _MOE_SIZES),
        RoutineSpec("trtllm_fp8_per_tensor_scale_moe", "moe", ("trtllm", "torch"), _MOE_SIZES),
        RoutineSpec("cutlass_fused_moe", "moe", ("cutlass", "torch"), _MOE_SIZES),
    )
}

FAMILIES: tuple[str, ...] = ("attention", "gemm", "moe")

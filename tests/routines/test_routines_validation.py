import pytest

from flashinfer_bench.routines.args import parse_case
from flashinfer_bench.routines.errors import UsageError
from flashinfer_bench.routines.validation import GROUPS_MESSAGE, validate

MOE = "--num_tokens 8 --hidden_size 256 --intermediate_size 256 --num_experts 16 "


def check(line: str) -> None:
    validate(parse_case(line.split()))


@pytest.mark.parametrize("routine", ["trtllm_fp4_block_scale_moe", "trtllm_fp8_block_scale_moe"])
def test_groups_without_deepseek_use_flashinfers_message(routine):
    with pytest.raises(UsageError, match=GROUPS_MESSAGE.replace(".", r"\.")):
        check(f"--routine {routine} {MOE} --top_k 1 --n_group 4 --routing_method renormalize")


@pytest.mark.parametrize("extra, message", [
    ("--top_k 8 --n_group 4 --topk_group 2 --routing_method deepseek_v3", "requires --n_group"),  # no bias
    ("--top_k 9 --n_group 4 --topk_group 4 --use_routing_bias", "top_k <= 8"),
    ("--top_k 8 --n_group 8 --topk_group 5 --use_routing_bias", "topk_group <= 4"),
    ("--top_k 2 --n_group 3 --topk_group 2 --use_routing_bias", "divisible by --n_group"),
])
def test_deepseek_rules(extra, message):
    with pytest.raises(UsageError, match=message):
        check(f"--routine trtllm_fp4_block_scale_moe {MOE} {extra}")


def test_routing_compat_table():
    check(f"--routine trtllm_fp8_per_tensor_scale_moe {MOE} --top_k 1 --routing_method llama4 "
          "--use_routing_bias --use_routing_scales_on_input")
    with pytest.raises(UsageError, match="not compatible"):
        check(f"--routine trtllm_fp4_block_scale_moe {MOE} --top_k 1 --routing_method llama4 "
              "--use_routing_bias --use_routing_scales_on_input")
    with pytest.raises(UsageError, match="requires --routed_scaling_factor"):
        check(f"--routine trtllm_fp8_per_tensor_scale_moe {MOE} --top_k 1 --routing_method llama4")


def test_fp8_non_deepseek_requires_top1_but_fp4_allows_8():
    check(f"--routine trtllm_fp4_block_scale_moe {MOE} --top_k 8 --routing_method renormalize")
    with pytest.raises(UsageError, match="top_k == 1"):
        check(f"--routine trtllm_fp8_block_scale_moe {MOE} --top_k 2 --routing_method renormalize")


def test_cutlass_ignores_routing_but_checks_parallelism():
    check(f"--routine cutlass_fused_moe {MOE} --top_k 2 --n_group 4 --routing_method renormalize")
    with pytest.raises(UsageError, match="tp_rank"):
        check(f"--routine cutlass_fused_moe {MOE} --top_k 2 --tp_size 2 --tp_rank 2")


@pytest.mark.parametrize("line, message", [
    ("--routine BatchDecodeWithPagedKVCacheWrapper --page_size 16 --batch_size 2 --s_qo 2 --s_kv 8 "
     "--num_qo_heads 4 --num_kv_heads 2 --head_dim_qk 16 --head_dim_vo 16", "s_qo must be 1"),
    ("--routine BatchPrefillWithRaggedKVCacheWrapper --batch_size 2 --s_qo 4 --s_kv 8 --num_qo_heads 3 "
     "--num_kv_heads 2 --head_dim_qk 16 --head_dim_vo 16", "multiple of --num_kv_heads"),
    ("--routine BatchPrefillWithPagedKVCacheWrapper --batch_size 2 --s_qo 4 --s_kv 8 --num_qo_heads 4 "
     "--num_kv_heads 2 --head_dim_qk 16 --head_dim_vo 16", "--page_size must be positive"),
    ("--routine gemm_fp8_nt_groupwise --m 4 --n 100 --k 128", "multiples of --tile_size"),
    ("--routine bmm_fp8 --m 4 --n 16 --k 16 --backends fa3", r"unknown backend\(s\) fa3 for bmm_fp8"),
])
def test_shape_rules(line, message):
    with pytest.raises(UsageError, match=message):
        check(line)

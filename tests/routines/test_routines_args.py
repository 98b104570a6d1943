import pytest

from flashinfer_bench.routines.args import parse_case
from flashinfer_bench.routines.errors import UsageError
from flashinfer_bench.routines.validation import validate

FLASHINFER_EXAMPLES = [
    "--routine BatchPrefillWithPagedKVCacheWrapper --backends fa2 cudnn trtllm-gen --page_size 16 --batch_size 16 --s_qo 4096 --s_kv 4096 --num_qo_heads 64 --num_kv_heads 8 --head_dim_qk 128 --head_dim_vo 128 --random_actual_seq_len --verbose --refcheck --causal --no_cuda_graph --generate_repro_command",
    "--routine BatchDecodeWithPagedKVCacheWrapper --backends fa2 fa2_tc trtllm-gen cudnn --page_size 16 --batch_size 16 --s_qo 1 --s_kv 8192 --num_qo_heads 64 --num_kv_heads 8 --head_dim_qk 128 --head_dim_vo 128 --random_actual_seq_len --verbose --refcheck --generate_repro_command",
    "--routine mm_fp4 --m 8192 --n 4096 --k 16384 --out_dtype bfloat16 --backends cudnn cutlass trtllm --use_128x4_sf_layout --refcheck --verbose --generate_repro_command",
    "--routine trtllm_fp4_block_scale_moe --num_tokens 1024 --hidden_size 1024 --intermediate_size 1024 --num_experts 128 --top_k 8 --n_group 8 --topk_group 4 --routed_scaling_factor 2.5 --use_routing_bias --routing_method deepseek_v3 --use_shuffled_weight --verbose --generate_repro_command",
    "--routine trtllm_fp4_block_scale_moe --num_tokens 1024 --hidden_size 1024 --intermediate_size 1024 --num_experts 128 --top_k 8 --routing_method topk --use_shuffled_weight --gated_act geglu --verbose --generate_repro_command",
    "--routine trtllm_fp8_block_scale_moe --num_tokens 1024 --hidden_size 1024 --intermediate_size 1024 --num_experts 128 --top_k 8 --n_group 8 --topk_group 4 --routed_scaling_factor 2.5 --use_routing_bias --routing_method deepseek_v3 --use_shuffled_weight --verbose --generate_repro_command",
    "--routine cutlass_fused_moe --num_tokens 32 --hidden_size 128 --intermediate_size 128 --num_experts 2 --top_k 2 --cutlass_variant base --input_dtype float16 --verbose --generate_repro_command",
    "--routine cutlass_fused_moe --num_tokens 32 --hidden_size 128 --intermediate_size 128 --num_experts 2 --top_k 2 --cutlass_variant base --input_dtype float16 --tp_size 2 --tp_rank 0 --verbose --generate_repro_command",
    "--routine BatchPrefillWithRaggedKVCacheWrapper --backends fa2 cudnn cutlass --batch_size 16 --s_qo 1024 --s_kv 1024 --num_qo_heads 128 --num_kv_heads 128 --head_dim_qk 192 --head_dim_vo 128 --refcheck --causal --no_cuda_graph --generate_repro_command -v",
    "--routine bmm_fp8 --backends cudnn cublas cutlass --batch_size 256 --m 1 --n 1024 --k 7168 --input_dtype fp8_e4m3 --mat2_dtype fp8_e4m3 --out_dtype bfloat16 --refcheck -vv --generate_repro_command",
    "--routine trtllm_fp8_block_scale_moe --backends trtllm --num_tokens 1024 --hidden_size 5120 --intermediate_size 13824 --num_experts 256 --top_k 8 --n_group 8 --topk_group 1 --routing_method deepseek_v3 --routed_scaling_factor 2.5 --use_routing_bias -vv",
]


@pytest.mark.parametrize("line", FLASHINFER_EXAMPLES)
def test_flashinfer_benchmark_examples_parse_and_validate(line):
    validate(parse_case(line.split()))


def test_namespace_order_and_defaults_match_flashinfers_benchmark():
    args = parse_case("--routine BatchDecodeWithPagedKVCacheWrapper --page_size 16 --batch_size 32 --s_kv 8192 "
                      "--num_qo_heads 64 --num_kv_heads 8 --head_dim_qk 128 --head_dim_vo 128 -v".split())
    keys = list(vars(args))
    assert keys[:3] == ["routine", "no_cuda_graph", "use_cuda_events"]
    assert keys.index("generate_repro_command") + 1 == keys.index("repro_command")
    assert keys.index("repro_command") + 1 == keys.index("enable_pdl")
    assert keys.index("enable_pdl") + 1 == keys.index("backends")
    assert args.enable_pdl is False
    assert keys[-2:] == ["causal", "random_actual_seq_len"]
    assert (args.random_seed, args.num_iters, args.dry_run_iters, args.s_qo, args.verbose) == (42, 30, 5, 1, 1)
    assert repr(args).startswith("Namespace(routine='BatchDecodeWithPagedKVCacheWrapper', no_cuda_graph=False")


def test_moe_defaults():
    args = parse_case("--routine trtllm_fp8_per_tensor_scale_moe --num_tokens 4 --hidden_size 32 "
                      "--intermediate_size 32 --num_experts 4 --top_k 1".split())
    assert (args.routed_scaling_factor, args.routing_method, args.tile_tokens_dim, args.weight_layout) == (
        2.5, "deepseek_v3", 8, 0)
    assert (args.input_dtype, args.gated_act, args.cutlass_variant, args.n_group) == (
        "bfloat16", "swiglu", "base", None)


@pytest.mark.parametrize("line", ["--routine nope", "--routine bmm_fp8 --m 1 --n 2 --k 3 --bogus 1",
                                  "--m 4", "--routine bmm_fp8 --m x"])
def test_bad_flags_raise_usage_error(line):
    with pytest.raises(UsageError):
        parse_case(line.split())


def test_sample_testlist_covers_every_routine_and_validates():
    from pathlib import Path

    from flashinfer_bench.routines.specs import ROUTINES
    from flashinfer_bench.routines.testlist import read_testlist

    path = Path(__file__).parents[2] / "benchmarks" / "samples" / "sample_testlist.txt"
    cases = [parse_case(line.argv) for line in read_testlist(str(path))]
    for args in cases:
        validate(args)
    assert {args.routine for args in cases} == set(ROUTINES)

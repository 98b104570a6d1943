import pytest

from flashinfer_bench.routines import metrics


def test_flashinfer_benchmark_decode_example_throughputs():
    # Seed: batch 32, kv 8192, 64 q / 8 kv heads, dim 128, bf16, fa2 0.712 ms -> 12.070 TFLOPs/s, 1.510 TB/s.
    qo, kv = [1] * 32, [8192] * 32
    flops = metrics.attention_flops(qo, kv, 64, 128, 128, causal=False)
    assert flops == 2 * 64 * 256 * 32 * 8192
    num_bytes = metrics.attention_bytes(qo, kv, 64, 8, 128, 128, 2, 2, 2)
    assert num_bytes == 32 * 64 * 128 * 2 * 2 + 32 * 8192 * 8 * 256 * 2
    assert f"{metrics.tflops_per_sec(flops, 0.712):.3f}" == "12.065"  # FlashInfer's benchmark prints 12.070 for an unrounded time
    assert f"{metrics.tb_per_sec(num_bytes, 0.712):.2f}" == "1.51"


def test_causal_pairs_bottom_right():
    assert metrics.causal_pairs(3, 3) == 1 + 2 + 3
    assert metrics.causal_pairs(3, 5) == 3 + 4 + 5
    assert metrics.causal_pairs(1, 7) == 7
    assert metrics.causal_pairs(4, 2) == 0 + 0 + 1 + 2  # more queries than keys: the first rows see nothing


def test_causal_ragged_gqa_prefill_hand_count():
    # 2 requests (q, kv) = (2, 4) and (3, 3); 8 q heads; d_qk 192, d_vo 128.
    pairs = (3 + 4) + (1 + 2 + 3)
    assert metrics.attention_flops([2, 3], [4, 3], 8, 192, 128, causal=True) == 2 * 8 * 320 * pairs
    assert metrics.attention_flops([2, 3], [4, 3], 8, 192, 128, causal=False) == 2 * 8 * 320 * (8 + 9)
    # GQA: K/V bytes use the 2 kv heads, Q/O the 8 q heads.
    assert metrics.attention_bytes([2, 3], [4, 3], 8, 2, 192, 128, 2, 2, 2) == (
        5 * 8 * 192 * 2 + 7 * 2 * 320 * 2 + 5 * 8 * 128 * 2)


def test_mla():
    assert metrics.mla_flops([10, 6], 16, 512, 64) == 2 * 16 * (1024 + 64) * 16
    assert metrics.mla_bytes([10, 6], 16, 512, 64, 2) == 2 * (2 * 16 * (1024 + 64) + 16 * 576)


def test_gemm_formulas():
    assert metrics.gemm_flops(2, 3, 4, batch=5) == 2 * 5 * 24
    # bmm_fp8: fp8 operands, bf16 output, two fp32 scales.
    assert metrics.gemm_bytes(2, 3, 4, 1, 1, 2, scale_bytes=8, batch=5) == 5 * (8 + 12 + 12) + 8
    assert metrics.fp8_groupwise_scale_bytes(m=256, n=512, k=1024, tile=128) == 4 * (256 * 8 + 4 * 8)
    assert metrics.nvfp4_scale_bytes(8, 64) == 32
    # mm_fp4 at m=n=k=64: half a byte per element, one scale byte per 16, bf16 out, fp32 alpha.
    assert metrics.gemm_bytes(64, 64, 64, 0.5, 0.5, 2, scale_bytes=256 + 256 + 4) == 2048 + 2048 + 8192 + 516


def test_moe_formulas():
    assert metrics.moe_flops(routed_pairs=10, hidden_size=8, intermediate_size=4) == 10 * (2 * 8 * 8 + 2 * 4 * 8)
    # 5 tokens, H=8, I=4, 3 active experts, fp8 weights + 12 scale bytes each, fp8 input, bf16 output.
    assert metrics.moe_bytes(5, 8, 4, 3, 1.0, 1.0, 12, 2.0) == 5 * 8 * 3 + 3 * (96 + 12)


@pytest.mark.parametrize("fn", [metrics.tflops_per_sec, metrics.tb_per_sec])
def test_zero_time_is_not_a_division_error(fn):
    assert fn(1e12, 0.0) == 0.0
    assert fn(1e9, 1.0) == pytest.approx(1.0)  # 1e9 per millisecond = 1e12 per second

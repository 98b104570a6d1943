"""The torch backends at tiny sizes against independent float64 computations written out here."""

import math

import pytest
import torch

from flashinfer_bench.routines import attention, gemm, moe, quant
from flashinfer_bench.routines.args import parse_case
from flashinfer_bench.routines.refcheck import DTYPE_TOLERANCES, compare

CPU = torch.device("cpu")


def naive_attention(q, k, v, causal, scale):
    """q [Q, Hq, D], k [K, Hkv, D], v [K, Hkv, Dv]; explicit loops over heads, float64."""
    out = torch.empty(q.shape[0], q.shape[1], v.shape[2], dtype=torch.float64)
    group = q.shape[1] // k.shape[1]
    for h in range(q.shape[1]):
        s = (q[:, h].double() @ k[:, h // group].double().T) * scale
        if causal:
            for i in range(q.shape[0]):
                s[i, i + k.shape[0] - q.shape[0] + 1:] = -math.inf
        out[:, h] = torch.softmax(s, dim=-1) @ v[:, h // group].double()
    return out


@pytest.mark.parametrize("line", [
    "--routine BatchDecodeWithPagedKVCacheWrapper --page_size 4 --batch_size 3 --s_kv 11 --num_qo_heads 6 "
    "--num_kv_heads 2 --head_dim_qk 16 --head_dim_vo 16 --random_actual_seq_len",
    "--routine BatchPrefillWithPagedKVCacheWrapper --page_size 4 --batch_size 2 --s_qo 5 --s_kv 9 "
    "--num_qo_heads 4 --num_kv_heads 1 --head_dim_qk 16 --head_dim_vo 16 --causal",
    "--routine BatchPrefillWithRaggedKVCacheWrapper --batch_size 3 --s_qo 7 --s_kv 7 --num_qo_heads 2 "
    "--num_kv_heads 2 --head_dim_qk 24 --head_dim_vo 8 --causal --random_actual_seq_len",
])
def test_attention_matches_naive(line):
    args = parse_case(line.split())
    inp = attention.make_inputs(args, CPU)
    expected = []
    for b, q_len in enumerate(inp.qo_lens):
        q = inp.q[int(inp.qo_indptr[b]):int(inp.qo_indptr[b]) + q_len]
        if inp.kv_indices is None:
            k = inp.k[int(inp.kv_indptr[b]):int(inp.kv_indptr[b + 1])]
            v = inp.v[int(inp.kv_indptr[b]):int(inp.kv_indptr[b + 1])]
        else:  # walk the page table token by token
            pages = inp.kv_indices[int(inp.kv_indptr[b]):int(inp.kv_indptr[b + 1])]
            tokens = [(int(pages[t // args.page_size]), t % args.page_size) for t in range(inp.kv_lens[b])]
            k = torch.stack([inp.k[p, s] for p, s in tokens])
            v = torch.stack([inp.v[p, s] for p, s in tokens])
        expected.append(naive_attention(q, k, v, args.causal, 1 / math.sqrt(args.head_dim_qk)))
    expected = torch.cat(expected)
    assert torch.allclose(attention.torch_attention(inp, args, torch.float64), expected, atol=1e-10)
    assert compare(attention.torch_attention(inp, args, torch.bfloat16), expected,
                   DTYPE_TOLERANCES[torch.bfloat16]).passed


def test_mla_is_mqa_over_latent_cache():
    args = parse_case("--routine BatchMLAPagedAttentionWrapper --page_size 4 --batch_size 2 --s_kv 6 "
                      "--num_qo_heads 3 --head_dim_ckv 16 --head_dim_kpe 8".split())
    inp = attention.make_inputs(args, CPU)
    out = attention.torch_attention(inp, args, torch.float64)
    for b in range(2):
        pages = inp.kv_indices[int(inp.kv_indptr[b]):int(inp.kv_indptr[b + 1])].long()
        kv = inp.k[pages].reshape(-1, 24)[:6].double()
        s = inp.q[b].double() @ kv.T / math.sqrt(24)
        assert torch.allclose(out[b], torch.softmax(s, -1) @ kv[:, :16], atol=1e-10)


@pytest.mark.parametrize("line", [
    "--routine bmm_fp8 --batch_size 2 --m 3 --n 8 --k 16",
    "--routine gemm_fp8_nt_groupwise --m 4 --n 32 --k 64 --tile_size 16",
    "--routine group_gemm_fp8_nt_groupwise --m 4 --n 16 --k 32 --tile_size 16 --group_size 3",
    "--routine mm_fp4 --m 4 --n 8 --k 64",
])
def test_gemm_matches_float64_of_dequantised_operands(line):
    args = parse_case(line.split())
    q, a_hp, b_hp = gemm.make_inputs(args, CPU)
    a, b = gemm.dequantize(args, q)
    if args.routine == "group_gemm_fp8_nt_groupwise":
        expected = torch.cat([a[g * 4:(g + 1) * 4].double() @ b[g].double().T for g in range(3)])
    else:
        expected = a.double() @ b.double().transpose(-1, -2)
    assert torch.allclose(gemm.torch_gemm(args, q, torch.float64), expected)
    assert compare(gemm.torch_gemm(args, q, torch.bfloat16), expected, DTYPE_TOLERANCES[torch.bfloat16]).passed
    # quantisation stays close to the bf16 operands it came from (FP8: ~6%, NVFP4: ~30% per element worst case)
    assert (a - a_hp.float()).abs().max() <= 0.35 * a_hp.float().abs().max()


def test_fp8_blockwise_roundtrip_and_scale_shape():
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(1))
    q, s = quant.quantize_fp8_blockwise(x, 1, 32)
    assert s.shape == (4, 2) and q.dtype == torch.float8_e4m3fn
    assert torch.allclose(quant.dequantize_blockwise(q, s, 1, 32), x, rtol=0.07, atol=1e-6)
    assert torch.allclose(s, x.abs().reshape(4, 2, 32).amax(-1) / 448)


def test_nvfp4_encodes_grid_values_exactly():
    gs = torch.tensor(1.0)
    row = torch.tensor([[0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0, 0.0]])
    packed, sf = quant.quantize_nvfp4(row, gs)
    assert packed.shape == (1, 8) and sf.float().item() == 1.0  # amax 6 -> block scale 6/6 * gs = 1
    assert int(packed[0, 0]) == (0 | (1 << 4))  # codes 0 and 1 share the first byte, low nibble first
    assert torch.equal(quant.dequantize_nvfp4(packed, sf, gs), row)


def test_deepseek_v3_routing_by_hand():
    logits = torch.tensor([[0.0, 3.0, -1.0, 2.0, 1.0, -2.0, 0.5, 0.2]])
    bias = torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 5.0])
    ids, w = moe.route(logits, bias, "deepseek_v3", top_k=2, n_group=4, topk_group=2, routed_scaling_factor=2.0)
    # biased sigmoid scores; groups {0,1},{2,3},{4,5},{6,7}: top-2 sums pick groups 3 (bias) and 0 (sum .5+.95)
    assert sorted(ids[0].tolist()) == [1, 7]
    sig = torch.sigmoid(logits[0])
    expected = torch.stack((sig[1], sig[7])) / (sig[1] + sig[7]) * 2.0
    assert torch.allclose(w[0].sort().values, expected.sort().values)


def test_other_routing_methods_by_hand():
    logits = torch.tensor([[1.0, 3.0, 2.0, 0.0]])
    ids, w = moe.route(logits, None, "renormalize", top_k=2)
    assert ids[0].tolist() == [1, 2] and torch.allclose(w[0], torch.softmax(torch.tensor([3.0, 2.0]), 0))
    ids, w = moe.route(logits, None, "renormalize_naive", top_k=2)
    assert ids[0].tolist() == [1, 2] and torch.allclose(w.sum(), torch.tensor(1.0))
    ids, w = moe.route(logits, torch.tensor([5.0, 0, 0, 0]), "llama4", top_k=1)
    assert ids[0].tolist() == [0] and torch.allclose(w[0], torch.sigmoid(torch.tensor([6.0])))
    ids, w = moe.route(logits, None, "topk", top_k=2)
    assert w[0].tolist() == [3.0, 2.0]


@pytest.mark.parametrize("act, scales_on_input", [("swiglu", False), ("geglu", True)])
def test_moe_forward_matches_per_token_loop(act, scales_on_input):
    g = torch.Generator().manual_seed(3)
    x, w13, w2 = torch.randn(5, 8, generator=g), torch.randn(3, 12, 8, generator=g), torch.randn(3, 8, 6, generator=g)
    ids = torch.tensor([[1], [2], [3], [1], [0]])  # experts 1..3 local (offset 1); expert 0 is not
    weights = torch.rand(5, 1, generator=g)
    out = moe.moe_forward(x, w13, w2, ids, weights, 1, act, scales_on_input, torch.float64)
    for t in range(5):
        e = int(ids[t, 0]) - 1
        if e < 0:
            assert torch.all(out[t] == 0)
            continue
        xin = x[t].double() * (weights[t, 0] if scales_on_input else 1)
        up, gate = (w13[e].double() @ xin).split(6)
        a = (torch.nn.functional.silu(gate) if act == "swiglu" else torch.nn.functional.gelu(gate)) * up
        y = (w2[e].double() @ a) * (1 if scales_on_input else weights[t, 0])
        assert torch.allclose(out[t], y)


def test_cutlass_tp_shards_sum_to_the_full_moe():
    line = ("--routine cutlass_fused_moe --num_tokens 6 --hidden_size 16 --intermediate_size 8 --num_experts 4 "
            "--top_k 2 --tp_size 2 --tp_rank {}")
    full = moe.torch_moe(p := parse_case(line.format(0).replace("--tp_size 2", "--tp_size 1").split()),
                         moe.make_inputs(p, CPU), torch.float64)
    parts = []
    for rank in range(2):
        args = parse_case(line.format(rank).split())
        parts.append(moe.torch_moe(args, moe.make_inputs(args, CPU), torch.float64))
    assert torch.allclose(parts[0] + parts[1], full, atol=1e-9)  # the intermediate columns split across ranks


@pytest.mark.parametrize(("routine", "s_qo", "s_kv"), [
    ("BatchDecodeWithPagedKVCacheWrapper", 1, 8192),
    ("BatchPrefillWithPagedKVCacheWrapper", 512, 512),
    ("BatchPrefillWithRaggedKVCacheWrapper", 128, 1024),
])
def test_random_lengths_are_the_ones_flashinfers_benchmark_draws_from_the_same_seed(routine, s_qo, s_kv):
    line = (f"--routine {routine} --page_size 16 --batch_size 16 --s_qo {s_qo} --s_kv {s_kv} --num_qo_heads 8 "
            "--num_kv_heads 8 --head_dim_qk 64 --head_dim_vo 64 --random_actual_seq_len --random_seed 7")
    args = parse_case(line.split())
    device = torch.device("cpu")
    torch.manual_seed(7)
    qo, kv = attention.sequence_lengths(args, device)
    # FlashInfer's benchmark, after torch.manual_seed(random_seed): decode draws the kv lengths on the device,
    # [batch, 1, 1, 1] int32 in [1, s_kv], at least s_qo; prefill draws the q lengths on the CPU, then the kv
    # lengths (the q lengths when s_qo == s_kv), each at least its q length.
    torch.manual_seed(7)
    shape = (16, 1, 1, 1)
    if routine.startswith("BatchDecode"):
        expected_kv = torch.randint(1, s_kv + 1, shape, device=device, dtype=torch.int32).clamp_min(s_qo)
        expected_qo = torch.full(shape, s_qo)
    else:
        expected_qo = torch.randint(1, s_qo + 1, shape, dtype=torch.int32)
        expected_kv = expected_qo.clone() if s_qo == s_kv else torch.maximum(
            torch.randint(1, s_kv + 1, shape, dtype=torch.int32), expected_qo)
    assert (qo, kv) == (expected_qo.flatten().tolist(), expected_kv.flatten().tolist())
    assert len(set(kv)) > 1 and all(k >= q for q, k in zip(qo, kv, strict=True))

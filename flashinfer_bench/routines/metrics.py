"""FLOP and byte counts per routine (formulas in benchmarks/README.md) and the throughputs derived from them.

Conventions: a multiply-add is 2 FLOPs; softmax, activations and scaling are not counted. Bytes are the
compulsory traffic: every input read once and the output written once, at the element sizes actually stored
(FP8 = 1 byte, FP4 = 1/2 byte) plus their scale factors. Attention counts only the (query, key) pairs that the
mask leaves visible, with the actual (possibly random) sequence lengths; MoE counts only routed token-expert
pairs and the weights of the experts that received tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

FP32_BYTES = 4


def causal_pairs(q_len: int, kv_len: int) -> int:
    """Visible (query, key) pairs under a bottom-right-aligned causal mask: query i sees keys j <= i + kv - q."""
    return sum(max(0, min(kv_len, kv_len - q_len + i + 1)) for i in range(q_len))


def attention_flops(
    qo_lens: Sequence[int],
    kv_lens: Sequence[int],
    num_qo_heads: int,
    head_dim_qk: int,
    head_dim_vo: int,
    causal: bool,
) -> int:
    """sum_b 2 * H_qo * (d_qk + d_vo) * pairs_b, pairs_b = q_b * kv_b (or the causal count)."""
    pairs = sum(causal_pairs(q, kv) if causal else q * kv for q, kv in zip(qo_lens, kv_lens, strict=True))
    return 2 * num_qo_heads * (head_dim_qk + head_dim_vo) * pairs


def attention_bytes(
    qo_lens: Sequence[int],
    kv_lens: Sequence[int],
    num_qo_heads: int,
    num_kv_heads: int,
    head_dim_qk: int,
    head_dim_vo: int,
    q_bytes: int,
    kv_bytes: int,
    o_bytes: int,
) -> int:
    """Q and O once per query token and head; K and V once per KV token and *KV* head (GQA shares them)."""
    tq, tkv = sum(qo_lens), sum(kv_lens)
    return (
        tq * num_qo_heads * head_dim_qk * q_bytes
        + tkv * num_kv_heads * (head_dim_qk + head_dim_vo) * kv_bytes
        + tq * num_qo_heads * head_dim_vo * o_bytes
    )


def mla_flops(kv_lens: Sequence[int], num_heads: int, head_dim_ckv: int, head_dim_kpe: int) -> int:
    """Decode MLA (one query token): QK over d_ckv + d_kpe, then PV over d_ckv; 2 FLOPs per multiply-add."""
    return 2 * num_heads * (2 * head_dim_ckv + head_dim_kpe) * sum(kv_lens)


def mla_bytes(
    kv_lens: Sequence[int], num_heads: int, head_dim_ckv: int, head_dim_kpe: int, elem_bytes: int
) -> int:
    """q_nope + q_pe + o per request and head, and the compressed KV (ckv + kpe) once per token (shared by heads)."""
    batch = len(kv_lens)
    return elem_bytes * (
        batch * num_heads * (2 * head_dim_ckv + head_dim_kpe) + sum(kv_lens) * (head_dim_ckv + head_dim_kpe)
    )


def gemm_flops(m: int, n: int, k: int, batch: int = 1) -> int:
    return 2 * batch * m * n * k


def gemm_bytes(
    m: int, n: int, k: int, a_elem: float, b_elem: float, out_elem: float, scale_bytes: float = 0, batch: int = 1
) -> float:
    """batch * (A[m,k] + B[k,n] + Out[m,n]) at their element sizes, plus all scale factors (``scale_bytes``)."""
    return batch * (m * k * a_elem + k * n * b_elem + m * n * out_elem) + scale_bytes


def fp8_groupwise_scale_bytes(m: int, n: int, k: int, tile: int) -> int:
    """float32 scales: A per (1 x tile) block -> m * k/tile; B per (tile x tile) block -> n/tile * k/tile."""
    return FP32_BYTES * (m * (k // tile) + (n // tile) * (k // tile))


def nvfp4_scale_bytes(rows: int, k: int) -> float:
    """One e4m3 byte per 16 elements along K."""
    return rows * k / 16


def moe_flops(routed_pairs: int, hidden_size: int, intermediate_size: int) -> int:
    """Per routed (token, expert) pair: gated GEMM1 [H -> 2I] and GEMM2 [I -> H]: 2*H*2I + 2*I*H = 6*H*I."""
    return 6 * routed_pairs * hidden_size * intermediate_size


def moe_bytes(
    num_tokens: int,
    hidden_size: int,
    intermediate_size: int,
    active_experts: int,
    act_elem: float,
    weight_elem: float,
    weight_scale_bytes_per_expert: float,
    out_elem: float,
) -> float:
    """Input [T,H] + weights of every expert that got a token (W13 [2I,H] + W2 [H,I], with scales) + output [T,H]."""
    weights = active_experts * (3 * hidden_size * intermediate_size * weight_elem + weight_scale_bytes_per_expert)
    return num_tokens * hidden_size * (act_elem + out_elem) + weights


def tflops_per_sec(flops: float, median_ms: float) -> float:
    return flops / (median_ms * 1e-3) / 1e12 if median_ms > 0 else 0.0


def tb_per_sec(num_bytes: float, median_ms: float) -> float:
    return num_bytes / (median_ms * 1e-3) / 1e12 if median_ms > 0 else 0.0

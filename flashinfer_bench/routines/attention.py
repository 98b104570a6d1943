"""Attention routines: paged decode, paged and ragged prefill, MLA decode.

Inputs follow FlashInfer's layouts: paged KV caches are ``[num_pages, page_size, num_kv_heads, head_dim]`` (NHD)
with pages handed out in order (as FlashInfer's own benchmark does; page order changes decode times), ragged tensors are packed ``[total_tokens, heads, head_dim]`` with indptr
arrays. The torch backend gathers each request's pages and runs SDPA per request (GQA by repeating KV heads,
causal masks aligned to the bottom right as in FlashInfer); the reference runs the same math in float64/float32.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F

from . import metrics
from .case import TORCH_DTYPES, Case, output_tensor, reference_dtype
from .refcheck import tolerance_for

DECODE = "BatchDecodeWithPagedKVCacheWrapper"
PREFILL_PAGED = "BatchPrefillWithPagedKVCacheWrapper"
PREFILL_RAGGED = "BatchPrefillWithRaggedKVCacheWrapper"
MLA = "BatchMLAPagedAttentionWrapper"
WORKSPACE_BYTES = 128 * 1024 * 1024


def _lengths(max_len: int, batch: int, random: bool, device: torch.device | None) -> torch.Tensor:
    """``batch`` lengths: uniform in [1, max_len] from torch's default generator of ``device`` (the CPU's when
    None), drawn in the shape FlashInfer's benchmark draws them, or all ``max_len``."""
    if random:
        return torch.randint(1, max_len + 1, (batch, 1, 1, 1), dtype=torch.int32, device=device)
    return torch.full((batch, 1, 1, 1), max_len, dtype=torch.int32, device=device)


def sequence_lengths(args: argparse.Namespace, device: torch.device) -> tuple[list[int], list[int]]:
    """(qo_lens, kv_lens), drawn as FlashInfer's benchmark draws them right after ``torch.manual_seed(random_seed)``
    (which the caller has done), so the same ``--random_seed`` gives the same lengths: decode and MLA draw the kv
    lengths on the device (at least s_qo); prefill draws the q lengths on the CPU, then the kv lengths (the q
    lengths again when s_qo == s_kv), each at least its request's q length. Random lengths are uniform in
    [1, max]. A CPU run draws on the CPU's generator where a GPU run draws on the GPU's: their lengths differ."""
    batch, random = args.batch_size, args.random_actual_seq_len
    if args.routine in (DECODE, MLA):
        kv = _lengths(args.s_kv, batch, random, device).clamp_min(args.s_qo)
        return [args.s_qo] * batch, kv.flatten().tolist()
    qo = _lengths(args.s_qo, batch, random, None)
    kv = qo.clone() if args.s_qo == args.s_kv else torch.maximum(_lengths(args.s_kv, batch, random, None), qo)
    return qo.flatten().tolist(), kv.flatten().tolist()


def causal_mask(q_len: int, kv_len: int, device: torch.device) -> torch.Tensor:
    """Bottom-right-aligned causal mask: query i may see key j iff j <= i + kv_len - q_len."""
    rows = torch.arange(q_len, device=device).unsqueeze(1)
    cols = torch.arange(kv_len, device=device).unsqueeze(0)
    return cols <= rows + (kv_len - q_len)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, sm_scale: float) -> torch.Tensor:
    """One request: q [q_len, Hq, D], k [kv_len, Hkv, D], v [kv_len, Hkv, Dv] -> [q_len, Hq, Dv] (SDPA)."""
    group = q.shape[1] // k.shape[1]
    qh = q.transpose(0, 1)
    kh = k.transpose(0, 1).repeat_interleave(group, dim=0)
    vh = v.transpose(0, 1).repeat_interleave(group, dim=0)
    mask = causal_mask(q.shape[0], k.shape[0], q.device) if causal else None
    return F.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask, scale=sm_scale).transpose(0, 1)


@dataclass
class AttentionInputs:
    qo_lens: list[int]
    kv_lens: list[int]
    q: torch.Tensor  # [total_q, Hq, Dqk]; for MLA the concatenation [B, H, ckv + kpe]
    k: torch.Tensor  # paged: [pages, page_size, Hkv, Dqk]; ragged: [total_kv, Hkv, Dqk]; MLA: [pages, ps, ckv+kpe]
    v: torch.Tensor | None  # paged/ragged V (None for MLA, whose V is the ckv part of k)
    qo_indptr: torch.Tensor
    kv_indptr: torch.Tensor  # paged: page indptr; ragged: token indptr
    kv_indices: torch.Tensor | None
    last_page_len: torch.Tensor | None
    sm_scale: float

    def kv_of(self, b: int) -> torch.Tensor:
        """Request b's K (or MLA's ckv|kpe) rows, gathered from pages or sliced from the ragged tensor."""
        start, end = int(self.kv_indptr[b]), int(self.kv_indptr[b + 1])
        if self.kv_indices is None:
            return self.k[start:end]
        pages = self.kv_indices[start:end].long()
        return self.k[pages].flatten(0, 1)[: self.kv_lens[b]]

    def v_of(self, b: int) -> torch.Tensor:
        assert self.v is not None
        start, end = int(self.kv_indptr[b]), int(self.kv_indptr[b + 1])
        if self.kv_indices is None:
            return self.v[start:end]
        pages = self.kv_indices[start:end].long()
        return self.v[pages].flatten(0, 1)[: self.kv_lens[b]]


def _indptr(lengths: list[int], device: torch.device) -> torch.Tensor:
    return torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32, device=device)


def make_inputs(args: argparse.Namespace, device: torch.device) -> AttentionInputs:
    qo_lens, kv_lens = sequence_lengths(args, device)
    gen = torch.Generator().manual_seed(args.random_seed)
    dtype = TORCH_DTYPES[args.q_dtype]
    kv_dtype = TORCH_DTYPES[args.kv_dtype]

    def randn(*shape: int, dt: torch.dtype) -> torch.Tensor:
        return torch.randn(*shape, generator=gen).to(device=device, dtype=dt)

    paged = args.routine != PREFILL_RAGGED
    kv_indices = last_page_len = None
    if paged:
        pages_per_req = [math.ceil(n / args.page_size) for n in kv_lens]
        num_pages = sum(pages_per_req)
        kv_indptr = _indptr(pages_per_req, device)
        kv_indices = torch.arange(num_pages, dtype=torch.int32, device=device)
        last_page_len = torch.tensor(
            [n - (p - 1) * args.page_size for n, p in zip(kv_lens, pages_per_req, strict=True)],
            dtype=torch.int32, device=device,
        )
    else:
        kv_indptr = _indptr(kv_lens, device)
    if args.routine == MLA:
        d = args.head_dim_ckv + args.head_dim_kpe
        q = randn(args.batch_size, args.num_qo_heads, d, dt=dtype)
        k = randn(num_pages, args.page_size, d, dt=kv_dtype)
        v = None
        sm_scale = 1.0 / math.sqrt(d)
    else:
        hq, hkv = args.num_qo_heads, args.num_kv_heads
        q = randn(sum(qo_lens), hq, args.head_dim_qk, dt=dtype)
        lead = (num_pages, args.page_size) if paged else (sum(kv_lens),)
        k = randn(*lead, hkv, args.head_dim_qk, dt=kv_dtype)
        v = randn(*lead, hkv, args.head_dim_vo, dt=kv_dtype)
        sm_scale = 1.0 / math.sqrt(args.head_dim_qk)
    return AttentionInputs(
        qo_lens, kv_lens, q, k, v, _indptr(qo_lens, device), kv_indptr, kv_indices, last_page_len, sm_scale
    )


def torch_attention(inp: AttentionInputs, args: argparse.Namespace, dtype: torch.dtype) -> torch.Tensor:
    """Gather-then-attend over every request in ``dtype``; output [total_q, Hq, Dv] ([B, H, ckv] for MLA)."""
    outs = []
    for b, q_len in enumerate(inp.qo_lens):
        start = int(inp.qo_indptr[b])
        q = inp.q[start : start + q_len].to(dtype)
        kv = inp.kv_of(b).to(dtype)
        if args.routine == MLA:
            outs.append(attend(q, kv.unsqueeze(1), kv[:, : args.head_dim_ckv].unsqueeze(1), False, inp.sm_scale))
        else:
            v = inp.v_of(b).to(dtype)
            outs.append(attend(q, kv, v, args.causal, inp.sm_scale))
    return torch.cat(outs)


def _workspace(device: torch.device) -> torch.Tensor:
    return torch.zeros(WORKSPACE_BYTES, dtype=torch.uint8, device=device)


def _hnd(paged: torch.Tensor) -> torch.Tensor:
    """[pages, page_size, H, D] -> [pages, H, page_size, D] (the layout of the trtllm-gen and cuDNN kernels)."""
    return paged.transpose(1, 2).contiguous()


def _block_tables(inp: AttentionInputs) -> torch.Tensor:
    assert inp.kv_indices is not None
    counts = (inp.kv_indptr[1:] - inp.kv_indptr[:-1]).tolist()
    table = torch.zeros(len(counts), max(counts), dtype=torch.int32, device=inp.q.device)
    for b, n in enumerate(counts):
        table[b, :n] = inp.kv_indices[int(inp.kv_indptr[b]) : int(inp.kv_indptr[b]) + n]
    return table


def flashinfer_backend(
    fi: ModuleType, backend: str, inp: AttentionInputs, args: argparse.Namespace, use_cuda_graph: bool
) -> Any:
    """Plan FlashInfer's kernel for ``backend`` and return the call to time. The wrappers are called as
    FlashInfer's benchmark calls them, so that both time the same work: into an output allocated once (else
    ``run`` allocates one per call, and paged prefill zero-fills it, a kernel of its own), ragged prefill with its
    lse, and with programmatic dependent launch only under ``--enable_pdl`` (FlashInfer's own default turns it
    on where the GPU has it)."""
    dev, dtype = inp.q.device, TORCH_DTYPES[args.q_dtype]
    kv_dtype = TORCH_DTYPES[args.kv_dtype]
    ws = _workspace(dev)
    hq, hkv = args.num_qo_heads, args.num_kv_heads
    seq_lens = torch.tensor(inp.kv_lens, dtype=torch.int32, device=dev)
    kv_tokens_indptr = _indptr(inp.kv_lens, dev)
    if args.routine == MLA:
        ckv = args.head_dim_ckv
        q_nope, q_pe = inp.q[..., :ckv].contiguous(), inp.q[..., ckv:].contiguous()
        ckv_cache, kpe_cache = inp.k[..., :ckv].contiguous(), inp.k[..., ckv:].contiguous()
        if backend == "trtllm-gen-native":
            table = _block_tables(inp)
            # qk_nope_head_dim is DeepSeek's 128; the kernel takes it but only kv_lora_rank/rope dims shape the data.
            return lambda: fi.mla.trtllm_batch_decode_with_kv_cache_mla(
                inp.q.unsqueeze(1), inp.k.unsqueeze(1), ws, qk_nope_head_dim=128, kv_lora_rank=ckv,
                qk_rope_head_dim=args.head_dim_kpe, block_tables=table, seq_lens=seq_lens,
                max_seq_len=args.s_kv, bmm1_scale=inp.sm_scale,
            )
        w = fi.mla.BatchMLAPagedAttentionWrapper(ws, backend=backend)
        w.plan(inp.qo_indptr, inp.kv_indptr, inp.kv_indices, seq_lens, hq, ckv, args.head_dim_kpe,
               args.page_size, False, inp.sm_scale, dtype, kv_dtype)
        return lambda: w.run(q_nope, q_pe, ckv_cache, kpe_cache)
    if backend == "trtllm-gen-native":
        kv = (_hnd(inp.k), _hnd(inp.v))
        table = _block_tables(inp)
        if args.routine == DECODE:
            return lambda: fi.decode.trtllm_batch_decode_with_kv_cache(
                inp.q, kv, ws, table, seq_lens, args.s_kv, bmm1_scale=inp.sm_scale, bmm2_scale=1.0,
                kv_layout="HND",
            )
        return lambda: fi.prefill.trtllm_batch_context_with_kv_cache(
            inp.q, kv, ws, table, seq_lens, max(inp.qo_lens), args.s_kv, inp.sm_scale, 1.0, args.batch_size,
            inp.qo_indptr, kv_tokens_indptr, kv_layout="HND", causal=args.causal,
        )
    if backend == "cudnn":
        return _cudnn(fi, inp, args, ws, seq_lens, use_cuda_graph)
    out = torch.empty(*inp.q.shape[:-1], args.head_dim_vo, dtype=dtype, device=dev)
    run_kwargs = {"out": out, "enable_pdl": args.enable_pdl}
    if args.routine == DECODE:
        layout = "HND" if backend == "trtllm-gen" else "NHD"
        kv = (_hnd(inp.k), _hnd(inp.v)) if layout == "HND" else (inp.k, inp.v)
        w = fi.BatchDecodeWithPagedKVCacheWrapper(
            ws, layout, use_cuda_graph=use_cuda_graph, use_tensor_cores=backend == "fa2_tc",
            paged_kv_indptr_buffer=inp.kv_indptr if use_cuda_graph else None,
            paged_kv_indices_buffer=inp.kv_indices if use_cuda_graph else None,
            paged_kv_last_page_len_buffer=inp.last_page_len if use_cuda_graph else None,
            backend="trtllm-gen" if backend == "trtllm-gen" else "fa2",
        )
        extra = {"block_tables": _block_tables(inp), "seq_lens": seq_lens} if backend == "trtllm-gen" else {}
        w.plan(inp.kv_indptr, inp.kv_indices, inp.last_page_len, hq, hkv, args.head_dim_qk, args.page_size,
               q_data_type=dtype, kv_data_type=kv_dtype, sm_scale=inp.sm_scale, **extra)
        return lambda: w.run(inp.q, kv, **run_kwargs)
    if args.routine == PREFILL_PAGED:
        layout = "HND" if backend == "trtllm-gen" else "NHD"
        kv = (_hnd(inp.k), _hnd(inp.v)) if layout == "HND" else (inp.k, inp.v)
        w = fi.BatchPrefillWithPagedKVCacheWrapper(ws, layout, backend=backend)
        extra = (
            {"block_tables": _block_tables(inp), "seq_lens": seq_lens, "max_token_per_sequence": max(inp.qo_lens),
             "max_sequence_kv": args.s_kv}
            if backend == "trtllm-gen" else {}
        )
        w.plan(inp.qo_indptr, inp.kv_indptr, inp.kv_indices, inp.last_page_len, hq, hkv, args.head_dim_qk,
               args.page_size, head_dim_vo=args.head_dim_vo, causal=args.causal, sm_scale=inp.sm_scale,
               q_data_type=dtype, kv_data_type=kv_dtype, **extra)
        return lambda: w.run(inp.q, kv, **run_kwargs)
    w = fi.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD", backend=backend)
    w.plan(inp.qo_indptr, inp.kv_indptr, hq, hkv, args.head_dim_qk, head_dim_vo=args.head_dim_vo,
           causal=args.causal, sm_scale=inp.sm_scale, q_data_type=dtype, kv_data_type=kv_dtype)
    return lambda: w.run_return_lse(inp.q, inp.k, inp.v, **run_kwargs)[0]  # FlashInfer's benchmark times this


def _cudnn(
    fi: ModuleType, inp: AttentionInputs, args: argparse.Namespace, ws: torch.Tensor, seq_lens: torch.Tensor,
    use_cuda_graph: bool,
) -> Any:
    """cuDNN SDPA: HND paged caches (or ragged K/V with element offsets), lengths shaped [B, 1, 1, 1]."""
    lens_kv = seq_lens.view(-1, 1, 1, 1)
    if args.routine == DECODE:
        k, v = _hnd(inp.k), _hnd(inp.v)
        table = _block_tables(inp)
        return lambda: fi.decode.cudnn_batch_decode_with_kv_cache(
            inp.q, k, v, inp.sm_scale, ws, max_sequence_kv=args.s_kv, actual_seq_lens_kv=lens_kv,
            block_tables=table, is_cuda_graph_compatible=use_cuda_graph,
        )
    hq, dqk, dvo = args.num_qo_heads, args.head_dim_qk, args.head_dim_vo
    lens_q = torch.tensor(inp.qo_lens, dtype=torch.int32, device=inp.q.device).view(-1, 1, 1, 1)
    common: dict[str, Any] = {
        "max_token_per_sequence": max(inp.qo_lens), "max_sequence_kv": args.s_kv, "actual_seq_lens_q": lens_q,
        "actual_seq_lens_kv": lens_kv, "causal": args.causal, "return_lse": True,
        "batch_offsets_q": inp.qo_indptr * hq * dqk, "batch_offsets_o": inp.qo_indptr * hq * dvo,
        "is_cuda_graph_compatible": use_cuda_graph,
    }
    if args.routine == PREFILL_PAGED:
        k, v = _hnd(inp.k), _hnd(inp.v)
        common["block_tables"] = _block_tables(inp)
    else:
        k, v = inp.k, inp.v
        hkv = args.num_kv_heads
        common["batch_offsets_k"] = inp.kv_indptr * hkv * dqk
        common["batch_offsets_v"] = inp.kv_indptr * hkv * dvo
    return lambda: fi.prefill.cudnn_batch_prefill_with_kv_cache(inp.q, k, v, inp.sm_scale, ws, **common)


def build(args: argparse.Namespace, device: torch.device, fi: ModuleType | None, use_cuda_graph: bool) -> Case:
    inp = make_inputs(args, device)
    dtype = TORCH_DTYPES[args.q_dtype]
    elem = torch.tensor([], dtype=dtype).element_size()
    kv_elem = torch.tensor([], dtype=TORCH_DTYPES[args.kv_dtype]).element_size()
    if args.routine == MLA:
        flops = metrics.mla_flops(inp.kv_lens, args.num_qo_heads, args.head_dim_ckv, args.head_dim_kpe)
        num_bytes = metrics.mla_bytes(inp.kv_lens, args.num_qo_heads, args.head_dim_ckv, args.head_dim_kpe, elem)
    else:
        flops = metrics.attention_flops(inp.qo_lens, inp.kv_lens, args.num_qo_heads, args.head_dim_qk,
                                        args.head_dim_vo, args.causal)
        num_bytes = metrics.attention_bytes(inp.qo_lens, inp.kv_lens, args.num_qo_heads, args.num_kv_heads,
                                            args.head_dim_qk, args.head_dim_vo, elem, kv_elem, elem)

    def make_backend(backend: str) -> Any:
        if backend == "torch":
            return lambda: torch_attention(inp, args, dtype)
        assert fi is not None
        call = flashinfer_backend(fi, backend, inp, args, use_cuda_graph)
        return lambda: output_tensor(call())

    avg = sum(inp.kv_lens) // len(inp.kv_lens)
    return Case(
        reference=lambda: torch_attention(inp, args, reference_dtype(device)),
        make_backend=make_backend,
        flops=flops,
        num_bytes=num_bytes,
        tolerance=tolerance_for(dtype),
        verbose_lines=[f"Average actual seq len: {avg}"],
        csv_values={"avg_actual_seq_len": avg},
    )

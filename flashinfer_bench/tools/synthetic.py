"""Synthetic workloads: small axes, and the tensors a definition's constraints and reference call for.

The harness draws a workload's unlisted inputs at random (``bench.inputs``). What cannot be random is built
here, from the bound axes alone: CSR page tables and ragged offsets, sequence offsets, state slots, sparse and
block-table indices, rotary positions, routing inputs that really select the local experts, packed routed-MoE
ids, positive scales, fp8 key caches with their scales, peaked sampling distributions with valid ``top_k`` and
``top_p``, and scalars such as the softmax scale. The same builders serve two uses:

* ``synthesize(definition)``: a new small workload (its var axes chosen here, small enough for a CPU run);
* ``tools.workload_files.write_missing_blobs(root, definition, workload)``: the blobs of an existing workload
  whose safetensors files are absent (the public dataset ships its workloads without them), consistent with its
  axes.

Everything built is checked with ``Definition.constraint_violations``; random inputs take part as
``ShapeOnly`` stand-ins.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from flashinfer_bench.data import Definition, DType
from flashinfer_bench.data.constraints import ShapeOnly

#: Var-axis lengths of a synthetic workload, unless a structure below derives them.
SMALL_AXES = {
    "batch_size": 2, "num_tokens": 2, "seq_len": 3, "M": 3, "num_seqs": 2, "num_qo_heads": 4,
    "num_kv_heads": 2, "max_seq_len": 16, "pool_size": 4, "state_cache_size": 4, "total_seq_len": 5,
}
DEFAULT_VAR_AXIS = 2
#: Sequence lengths of the two requests of an attention workload: kv tokens (paged: pages) and query tokens.
KV_PAGES_PS1, KV_PAGES_PAGED, Q_LENS = (5, 9), (2, 1), (3, 4)
#: Masses of the likeliest tokens of a synthetic sampling row; the rest of the mass is spread over the others.
SAMPLING_HEAD = (0.85, 0.08, 0.04, 0.02)
#: top_p alone keeps three of them (the cumulative mass 0.85, 0.93, 0.97 crosses 0.95 at the third); top_k
#: keeps two, and top_p after it both (0.914, 1.0).
SAMPLING_TOP_K, SAMPLING_TOP_P = 2, 0.95
#: Logit added to a MoE's local experts, so that the tokens of a small workload do reach them.
LOCAL_EXPERT_BOOST = 2.0


class UnsatisfiableWorkload(ValueError):
    """The axes admit no valid tensors (e.g. page indices into a cache of zero pages)."""


@dataclass
class SyntheticInputs:
    """A workload's var axes, the tensors to store in its blob, and its fixed scalars; every other input is
    left to the harness's random draw."""

    axes: dict[str, int]
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)
    scalars: dict[str, int | float] = field(default_factory=dict)


@dataclass
class _Context:
    definition: Definition
    axes: dict[str, int]  # every axis, const and var
    generator: torch.Generator
    scalars: dict[str, int | float]
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)

    def has(self, name: str) -> bool:
        return name in self.definition.inputs

    def shape(self, name: str) -> tuple[int, ...]:
        return self.definition.shape_of(self.definition.inputs[name], self.axes) or ()

    def dtype(self, name: str) -> torch.dtype:
        return DType(self.definition.inputs[name].dtype).to_torch()

    def put(self, name: str, tensor: torch.Tensor) -> None:
        if self.has(name):
            self.tensors[name] = tensor.to(self.dtype(name)).reshape(self.shape(name)).contiguous()


# ----------------------------------------------------------------------------------------------- helpers
def _split(total: int, parts: int, g: torch.Generator) -> list[int]:
    """A random composition of ``total`` into ``parts`` non-negative lengths, each >= 1 when total allows."""
    if parts <= 0:
        return []
    if total < parts:
        return [1] * total + [0] * (parts - total)
    cuts = sorted(torch.randperm(total - 1, generator=g)[: parts - 1].add(1).tolist()) if parts > 1 else []
    bounds = [0, *cuts, total]
    return [b - a for a, b in zip(bounds, bounds[1:], strict=False)]


def _split_capped(total: int, caps: list[int]) -> list[int]:
    """``total`` spread over parts in proportion to ``caps`` and within them where possible (a causal
    prefill's query lengths within its kv lengths); what does not fit goes to the parts in turn."""
    if not caps:
        return []
    capacity = sum(caps)
    lengths = [min(cap, total * cap // capacity) for cap in caps] if capacity else [0] * len(caps)
    remaining = total - sum(lengths)
    for index in range(len(caps)):  # within the caps first
        extra = min(remaining, caps[index] - lengths[index])
        lengths[index] += extra
        remaining -= extra
    for index in range(remaining):  # then beyond them
        lengths[index % len(caps)] += 1
    return lengths


def _offsets(lengths: list[int]) -> torch.Tensor:
    return torch.tensor([0, *torch.tensor(lengths, dtype=torch.int64).cumsum(0).tolist()], dtype=torch.int64)


def _distinct(count: int, high: int, g: torch.Generator, what: str) -> torch.Tensor:
    """``count`` distinct integers in [0, high) (with repeats only when there are not enough)."""
    if count == 0:
        return torch.zeros(0, dtype=torch.int64)
    if high <= 0:
        raise UnsatisfiableWorkload(f"{count} {what} must lie in [0, {high}), which is empty")
    if count <= high:
        return torch.randperm(high, generator=g)[:count]
    return torch.randint(0, high, (count,), generator=g)


def _requests(ctx: _Context, indptr: str) -> int:
    return ctx.shape(indptr)[0] - 1


# ---------------------------------------------------------------------------------------------- builders
def _paged_kv(ctx: _Context) -> None:
    """kv_indptr / kv_indices / kv_last_page_len (and qo_indptr for prefill): a CSR page table."""
    if not (ctx.has("kv_indptr") and ctx.has("kv_indices")):
        return
    g, axes = ctx.generator, ctx.axes
    requests = _requests(ctx, "kv_indptr")
    count = ctx.shape("kv_indices")[0]
    cache = next(name for name in ctx.definition.inputs if name.endswith("_cache"))
    num_pages, page_size = ctx.shape(cache)[0], axes.get("page_size", 1)
    pages = _split(count, requests, g)
    ctx.put("kv_indptr", _offsets(pages))
    ctx.put("kv_indices", _distinct(count, num_pages, g, "page indices"))
    last = torch.randint(1, page_size + 1, (requests,), generator=g).tolist()
    if ctx.has("kv_last_page_len"):
        length = ctx.shape("kv_last_page_len")[0]
        ctx.put("kv_last_page_len", torch.tensor((last + [page_size] * length)[:length]))
    else:
        last = [page_size] * requests
    kv_tokens = [(p - 1) * page_size + end if p else 0 for p, end in zip(pages, last, strict=True)]
    if ctx.has("qo_indptr"):
        ctx.put("qo_indptr", _offsets(_split_capped(ctx.shape("q" if ctx.has("q") else "q_nope")[0], kv_tokens)))


def _ragged(ctx: _Context) -> None:
    """qo_indptr / kv_indptr of ragged (non-paged) attention, query lengths within kv lengths."""
    if not (ctx.has("qo_indptr") and ctx.has("kv_indptr")) or ctx.has("kv_indices"):
        return
    requests = _requests(ctx, "kv_indptr")
    kv = _split(ctx.shape("k")[0], requests, ctx.generator)
    ctx.put("kv_indptr", _offsets(kv))
    ctx.put("qo_indptr", _offsets(_split_capped(ctx.shape("q")[0], kv)))


def _cu_seqlens(ctx: _Context) -> None:
    if ctx.has("cu_seqlens"):
        tokens = ctx.shape("q")[0]
        ctx.put("cu_seqlens", _offsets(_split(tokens, ctx.shape("cu_seqlens")[0] - 1, ctx.generator)))


#: Slot inputs and the state tensor whose leading axis they index.
_SLOTS = {"initial_state_indices": "initial_state", "state_batch_indices": "state"}


def _state_slots(ctx: _Context) -> None:
    for slots, state in _SLOTS.items():
        if ctx.has(slots) and ctx.has(state):
            count, pool = ctx.shape(slots)[0], ctx.shape(state)[0]
            ctx.put(slots, _distinct(count, pool, ctx.generator, f"{slots} values"))


def _sparse_indices(ctx: _Context) -> None:
    """DSA's [tokens, topk] token indices into the paged cache: the first row full, the others shorter and
    padded with -1."""
    if not ctx.has("sparse_indices"):
        return
    tokens, topk = ctx.shape("sparse_indices")
    cache_tokens = ctx.shape("ckv_cache")[0] * ctx.shape("ckv_cache")[1]
    rows = torch.full((tokens, topk), -1, dtype=torch.int64)
    for t in range(tokens):
        valid = min(topk, cache_tokens) if t == 0 else max(1, min(topk, cache_tokens) // (t + 2))
        rows[t, :valid] = _distinct(valid, cache_tokens, ctx.generator, "sparse indices")
    ctx.put("sparse_indices", rows)


def _block_table(ctx: _Context) -> None:
    """DSA indexer: seq_lens, a block table of distinct pages, and the fp8 key cache with its float32 scales
    packed per page (``page_size * head_dim`` fp8 bytes, then ``page_size`` scales)."""
    if not (ctx.has("block_table") and ctx.has("seq_lens")):
        return
    g = ctx.generator
    batch, max_pages = ctx.shape("block_table")
    page_size = ctx.axes["page_size"]
    capacity = max_pages * page_size
    lens = [max(1, capacity - page_size // 2) if b == 0 else max(1, capacity // (b + 3)) for b in range(batch)]
    needed = [math.ceil(n / page_size) for n in lens]
    cache = "k_index_cache_fp8"
    num_pages = ctx.shape(cache)[0] if ctx.has(cache) else ctx.axes["num_pages"]
    pages = _distinct(sum(needed), num_pages, g, "block-table pages").tolist()
    table = torch.zeros(batch, max_pages, dtype=torch.int64)
    start = 0
    for b, count in enumerate(needed):
        table[b, :count] = torch.tensor(pages[start:start + count], dtype=torch.int64)
        start += count
    ctx.put("seq_lens", torch.tensor(lens))
    ctx.put("block_table", table)
    if ctx.has(cache):
        pages_n, size, heads, width = ctx.shape(cache)
        head_dim = width - 4  # float32 scale bytes follow the fp8 values
        values = torch.randn(pages_n, size * heads * head_dim, generator=g).to(torch.float8_e4m3fn)
        scales = 0.5 + torch.rand(pages_n, size * heads, generator=g)
        packed = torch.cat([values.view(torch.uint8), scales.view(torch.uint8)], dim=1)
        ctx.put(cache, packed.view(torch.int8))


def _positions(ctx: _Context) -> None:
    if ctx.has("positions") and ctx.has("cos_sin_cache"):
        max_seq_len = ctx.shape("cos_sin_cache")[0]
        ctx.put("positions", torch.randint(0, max_seq_len, ctx.shape("positions"), generator=ctx.generator))


def _moe(ctx: _Context) -> None:
    """Routing that reaches the local experts, small routing bias, packed routed ids, positive scales."""
    if not ctx.has("gemm1_weights"):
        return
    g = ctx.generator
    local = ctx.shape("gemm1_weights")[0]
    if ctx.has("local_expert_offset") and "local_expert_offset" not in ctx.scalars:
        experts = ctx.shape("routing_logits")[1]
        ctx.scalars["local_expert_offset"] = local if 2 * local <= experts else 0
    if ctx.has("routed_scaling_factor") and "routed_scaling_factor" not in ctx.scalars:
        ctx.scalars["routed_scaling_factor"] = 2.5
    if ctx.has("routing_logits"):
        logits = torch.randn(ctx.shape("routing_logits"), generator=g)
        if ctx.has("local_expert_offset"):
            offset = int(ctx.scalars["local_expert_offset"])
            logits[:, offset:offset + local] += LOCAL_EXPERT_BOOST
        ctx.put("routing_logits", logits)
    if ctx.has("routing_bias"):
        ctx.put("routing_bias", 0.1 * torch.randn(ctx.shape("routing_bias"), generator=g))
    if ctx.has("topk_ids"):
        tokens, top_k = ctx.shape("topk_ids")
        experts = torch.stack([torch.randperm(local, generator=g)[:top_k] for _ in range(tokens)]).to(torch.int32)
        weights = torch.softmax(torch.randn(tokens, top_k, generator=g), dim=-1).to(torch.bfloat16)
        bits = weights.view(torch.int16).to(torch.int32) & 0xFFFF
        ctx.put("topk_ids", (experts << 16) | bits)
    for name, spec in ctx.definition.inputs.items():
        if name.endswith(("_scale", "_scalar")) and spec.shape is not None and DType(spec.dtype).is_floating:
            ctx.put(name, 0.5 + torch.rand(ctx.shape(name), generator=g))


def _sampling(ctx: _Context) -> None:
    """Peaked rows (a few likely tokens, as a language model's are), and top_k / top_p that keep a few of them:
    a histogram of a hundred draws is then a fair estimate of the distribution, whatever the vocabulary size."""
    if not ctx.has("probs") or ctx.definition.op_type != "sampling":
        return
    g = ctx.generator
    rows, vocab = ctx.shape("probs")
    head = torch.tensor(SAMPLING_HEAD)
    probs = torch.full((rows, vocab), (1 - float(head.sum())) / max(vocab - len(head), 1))
    for r in range(rows):
        probs[r, torch.randperm(vocab, generator=g)[: len(head)]] = head
    ctx.put("probs", probs / probs.sum(dim=-1, keepdim=True))
    ctx.put("top_k", torch.full((rows,), SAMPLING_TOP_K))
    ctx.put("top_p", torch.full((rows,), SAMPLING_TOP_P))


def _softmax_scale(ctx: _Context) -> None:
    for name in ("sm_scale", "scale"):
        if ctx.has(name) and ctx.definition.inputs[name].shape is None and name not in ctx.scalars:
            first = ctx.shape(next(iter(ctx.definition.inputs)))
            ctx.scalars[name] = 1.0 / math.sqrt(first[-1]) if first else 1.0


_BUILDERS: tuple[Callable[[_Context], None], ...] = (
    _paged_kv, _ragged, _cu_seqlens, _state_slots, _sparse_indices, _block_table, _positions, _moe, _sampling,
    _softmax_scale,
)


# ------------------------------------------------------------------------------------------ axes chosen
def small_axes(definition: Definition) -> dict[str, int]:
    """Var-axis lengths for a small workload that the structures above can fill validly."""
    var = set(definition.var_axes)
    const = definition.const_axes
    axes = {name: SMALL_AXES.get(name, DEFAULT_VAR_AXIS) for name in var}

    def set_if_var(name: str, value: int) -> None:
        if name in var:
            axes[name] = value

    inputs = definition.inputs
    requests = axes.get("batch_size", 2)
    set_if_var("len_indptr", requests + 1)
    set_if_var("len_cu_seqlens", axes.get("num_seqs", 2) + 1)
    page_size = const.get("page_size", 1)
    if "kv_indices" in inputs:
        pages = KV_PAGES_PS1 if page_size == 1 else KV_PAGES_PAGED
        set_if_var("num_kv_indices", sum(pages))
        set_if_var("num_pages", sum(pages) + 3)
        set_if_var("total_q", sum(Q_LENS))
    elif "qo_indptr" in inputs:
        set_if_var("total_q", sum(Q_LENS))
        set_if_var("total_kv", sum(KV_PAGES_PS1) + 2)
    if "sparse_indices" in inputs:
        topk = const.get("topk", 64)
        set_if_var("num_pages", math.ceil((topk + 100) / page_size))
    if "block_table" in inputs:
        topk = const.get("topk", 64)
        set_if_var("max_num_pages", math.ceil(topk / page_size) + 8)
        set_if_var("num_pages", 2 * axes.get("max_num_pages", const.get("max_num_pages", 1)) + 4)
    return axes


def build_inputs(definition: Definition, axes: dict[str, int], *, seed: int = 0,
                 scalars: dict[str, int | float] | None = None) -> SyntheticInputs:
    """The structured tensors and scalars for bound ``axes`` (var axes; const axes are the definition's).

    ``scalars`` are scalar inputs already fixed (an existing workload's); the builders respect them. Raises
    UnsatisfiableWorkload when no valid tensors exist for these axes.
    """
    generator = torch.Generator()
    generator.manual_seed(seed)
    bound = definition.bind_axes(axes)
    ctx = _Context(definition, bound, generator, dict(scalars or {}))
    for builder in _BUILDERS:
        builder(ctx)
    var_axes = {name: bound[name] for name in definition.var_axes}
    return SyntheticInputs(var_axes, ctx.tensors, ctx.scalars)


def synthesize(definition: Definition, *, seed: int = 0) -> SyntheticInputs:
    """A small workload for ``definition``; raises ValueError if it breaks one of the definition's constraints."""
    synthetic = build_inputs(definition, small_axes(definition), seed=seed)
    violations = constraint_violations(definition, synthetic)
    if violations:
        raise ValueError(f"synthetic workload of {definition.name} breaks its constraints: {violations}")
    return synthetic


def constraint_violations(definition: Definition, synthetic: SyntheticInputs) -> list[str]:
    """The definition's constraints evaluated on the synthetic tensors (random inputs as shapes only)."""
    axes = definition.bind_axes(synthetic.axes)
    values: dict[str, Any] = {}
    for name, spec in definition.inputs.items():
        if name in synthetic.tensors:
            values[name] = synthetic.tensors[name]
        elif name in synthetic.scalars:
            values[name] = synthetic.scalars[name]
        elif spec.shape is not None:
            values[name] = ShapeOnly(definition.shape_of(spec, axes) or ())
    return definition.constraint_violations(axes, values)

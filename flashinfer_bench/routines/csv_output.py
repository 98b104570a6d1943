"""The results CSV: FlashInfer's column names and order (../shared/spec/routine-csv.md), then our own columns.

One row per (case, backend), appended and flushed as soon as it is measured, so an interrupted testlist keeps
everything measured so far.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from typing import Any

PERF_COLUMNS = ["routine", "median_time", "std_time", "tflops", "tb_per_sec", "backend"]
FAMILY_COLUMNS: dict[str, list[str]] = {
    "attention": [
        "page_size", "batch_size", "s_qo", "s_kv", "num_qo_heads", "num_kv_heads", "head_dim_qk", "head_dim_vo",
        "head_dim_ckv", "head_dim_kpe", "causal", "q_dtype", "kv_dtype", "avg_actual_seq_len",
        "random_actual_seq_len",
    ],
    "gemm": [
        "m", "n", "k", "group_size", "tile_size", "scale_major_mode", "out_dtype", "mma_sm",
        "use_128x4_sf_layout", "input_dtype", "mat2_dtype",
    ],
    "moe": [
        "num_tokens", "hidden_size", "intermediate_size", "num_experts", "top_k", "n_group", "topk_group",
        "routed_scaling_factor", "routing_method", "local_expert_offset", "local_num_experts", "tile_tokens_dim",
        "use_shuffled_weight", "weight_layout", "use_routing_bias", "use_routing_scales_on_input", "weight_dtype",
        "cutlass_variant", "quantized_input", "tp_size", "tp_rank", "ep_size", "ep_rank", "gated_act", "autotune",
    ],
}
GENERAL_COLUMNS = [
    "refcheck", "no_cuda_graph", "allow_output_mismatch", "random_seed", "case_tag", "generate_repro_command",
    "repro_command",
]
EXTRA_COLUMNS = [
    "device", "timing_method", "cuda_graph", "use_cuda_events", "num_iters", "dry_run_iters", "num_samples",
    "ci95_low_ms", "ci95_high_ms",
]


def _unique(names: list[str]) -> list[str]:
    """Flags shared by families (batch_size, input_dtype, autotune) keep the first position they appear at."""
    return list(dict.fromkeys(names))


COLUMNS: list[str] = _unique(
    PERF_COLUMNS + [c for fam in ("attention", "gemm", "moe") for c in FAMILY_COLUMNS[fam]] + GENERAL_COLUMNS
    + EXTRA_COLUMNS
)


def format_row(values: Mapping[str, Any]) -> dict[str, str]:
    """Every column present; values the row does not have are empty."""
    unknown = set(values) - set(COLUMNS)
    if unknown:
        raise KeyError(f"not CSV columns: {sorted(unknown)}")
    return {c: "" if values.get(c) is None else str(values[c]) for c in COLUMNS}


def append_row(path: str, values: Mapping[str, Any]) -> None:
    """Append one row (writing the header first when the file is new or empty) and flush it to disk."""
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow(format_row(values))
        f.flush()
        os.fsync(f.fileno())

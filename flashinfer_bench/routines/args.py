"""Command-line flags of the routine benchmark: the general flags and one flag group per routine family.

A case is parsed in two steps, as FlashInfer's benchmark's ``[INFO] args = Namespace(...)`` line shows: first the general flags
(routine, timing, refcheck, output, ...), then the flags of the routine's family, so the namespace lists general
flags first and family flags after them, in the order of FlashInfer's benchmark's flag tables.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .errors import UsageError
from .specs import ROUTINES

ATTN_DTYPES = ("bfloat16", "float16")
OUT_DTYPES = ("bfloat16", "float16")
FP8_DTYPES = ("fp8_e4m3", "fp8_e5m2")
MOE_DTYPES = ("bfloat16", "float16")
ROUTING_METHODS = ("deepseek_v3", "renormalize", "renormalize_naive", "llama4", "topk")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises :class:`UsageError` instead of exiting, so a testlist can go on."""

    def __init__(self, **kwargs) -> None:
        super().__init__(allow_abbrev=False, add_help=False, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(message)


def general_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="flashinfer_benchmark.py")
    p.add_argument("--routine", required=True, choices=sorted(ROUTINES), help="Test routine to run.")
    p.add_argument("--no_cuda_graph", action="store_true", help="Disable CUDA graph capture while timing.")
    p.add_argument("--use_cuda_events", action="store_true", help="Time with CUDA events instead of CUPTI.")
    p.add_argument("--refcheck", action="store_true", help="Verify outputs against the torch reference.")
    p.add_argument("--allow_output_mismatch", action="store_true", help="Continue after a refcheck mismatch.")
    p.add_argument("--random_seed", type=int, default=42, help="Random seed for reproducibility.")
    p.add_argument("--verbose", "-v", action="count", default=0, help="More output; repeat (-vv) for more.")
    p.add_argument("--output_path", default=None, help="CSV file to append results to.")
    p.add_argument("--num_iters", type=int, default=30, help="Measured iterations.")
    p.add_argument("--dry_run_iters", type=int, default=5, help="Warmup iterations.")
    p.add_argument("--full_size_on_cpu", action="store_true",
                   help="On a CPU, keep the sizes and counts given (by default a case is shrunk to finish in seconds).")
    p.add_argument("--case_tag", default=None, help="Tag stored in the CSV's case_tag column.")
    p.add_argument(
        "--generate_repro_command", action="store_true", help="Print and store a reproducer command."
    )
    p.add_argument("--enable_pdl", action="store_true",
                   help="Launch with programmatic dependent launch where FlashInfer's call takes it (off: forced off).")
    p.add_argument("--backends", nargs="+", default=None, help="Backends to test (default as FlashInfer's benchmark: fa2 for attention, cudnn for GEMMs, "
                        "a MoE routine's own backend); torch is this tool's reference backend.")
    return p


def _attention_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="flashinfer_benchmark.py (attention)")
    p.add_argument("--page_size", type=int, default=0)
    p.add_argument("--batch_size", type=int, default=None)
    p.add_argument("--s_qo", type=int, default=1)
    p.add_argument("--s_kv", type=int, default=None)
    p.add_argument("--num_qo_heads", type=int, default=None)
    p.add_argument("--num_kv_heads", type=int, default=None)
    p.add_argument("--head_dim_qk", type=int, default=None)
    p.add_argument("--head_dim_vo", type=int, default=None)
    p.add_argument("--head_dim_ckv", type=int, default=None)
    p.add_argument("--head_dim_kpe", type=int, default=None)
    p.add_argument("--q_dtype", default="bfloat16", choices=ATTN_DTYPES)
    p.add_argument("--kv_dtype", default="bfloat16", choices=ATTN_DTYPES)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--random_actual_seq_len", action="store_true")
    return p


def _gemm_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="flashinfer_benchmark.py (gemm)")
    p.add_argument("--batch_size", type=int, default=1, help="Batch count (bmm_fp8).")
    p.add_argument("--m", type=int, default=None)
    p.add_argument("--n", type=int, default=None)
    p.add_argument("--k", type=int, default=None)
    p.add_argument("--tile_size", type=int, default=128)
    p.add_argument("--group_size", type=int, default=1)
    p.add_argument("--scale_major_mode", default="MN", choices=("MN", "K"))
    p.add_argument("--out_dtype", default="bfloat16", choices=OUT_DTYPES)
    p.add_argument("--mma_sm", type=int, default=1, choices=(1, 2))
    p.add_argument("--input_dtype", default="fp8_e4m3", choices=FP8_DTYPES)
    p.add_argument("--mat2_dtype", default="fp8_e4m3", choices=FP8_DTYPES)
    p.add_argument("--use_128x4_sf_layout", action="store_true")
    p.add_argument("--autotune", action="store_true")
    return p


def _moe_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="flashinfer_benchmark.py (moe)")
    p.add_argument("--num_tokens", type=int, default=None)
    p.add_argument("--hidden_size", type=int, default=None)
    p.add_argument("--intermediate_size", type=int, default=None)
    p.add_argument("--num_experts", type=int, default=None)
    p.add_argument("--top_k", type=int, default=None)
    p.add_argument("--n_group", type=int, default=None)
    p.add_argument("--topk_group", type=int, default=None)
    p.add_argument("--routed_scaling_factor", type=float, default=2.5)
    p.add_argument("--local_expert_offset", type=int, default=0)
    p.add_argument("--local_num_experts", type=int, default=None)
    p.add_argument("--tile_tokens_dim", type=int, default=8)
    p.add_argument("--routing_method", default="deepseek_v3", choices=ROUTING_METHODS)
    p.add_argument("--use_shuffled_weight", action="store_true")
    p.add_argument("--weight_layout", type=int, default=0, choices=(0, 1, 2))
    p.add_argument("--use_routing_bias", action="store_true")
    p.add_argument("--use_routing_scales_on_input", action="store_true")
    p.add_argument("--input_dtype", default="bfloat16", choices=MOE_DTYPES)
    p.add_argument("--weight_dtype", default="bfloat16", choices=MOE_DTYPES)
    p.add_argument("--cutlass_variant", default="base", choices=("base", "fp8", "nvfp4"))
    p.add_argument("--quantized_input", action="store_true")
    p.add_argument("--tp_size", type=int, default=1)
    p.add_argument("--tp_rank", type=int, default=0)
    p.add_argument("--ep_size", type=int, default=1)
    p.add_argument("--ep_rank", type=int, default=0)
    p.add_argument("--gated_act", default="swiglu", choices=("swiglu", "geglu"))
    p.add_argument("--autotune", action="store_true")
    return p


FAMILY_PARSERS = {"attention": _attention_parser, "gemm": _gemm_parser, "moe": _moe_parser}


def parse_case(argv: Sequence[str]) -> argparse.Namespace:
    """Parse one case's flags into a namespace ordered as FlashInfer's benchmark prints it; raise UsageError if bad."""
    general, rest = general_parser().parse_known_args(list(argv))
    ordered = argparse.Namespace()
    for key, value in vars(general).items():
        if key == "enable_pdl":
            ordered.repro_command = ""
        setattr(ordered, key, value)
    spec = ROUTINES[general.routine]
    return FAMILY_PARSERS[spec.family]().parse_args(rest, namespace=ordered)

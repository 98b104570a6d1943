"""Which backends run where, as in FlashInfer's benchmark: its default backends, its per-routine compute-capability
tables, and FlashInfer's presence.

Every backend but ``torch`` (this tool's own, the refcheck reference) calls the ``flashinfer`` package and needs
a CUDA device whose compute capability (CC) the routine's table allows. Skipped backends are reported with a
``[WARNING]`` naming what and why, and the others run.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from types import ModuleType

from .specs import ROUTINES

TORCH = "torch"
CC = tuple[int, int]

#: The backend names FlashInfer's benchmark accepts per routine family; a name outside these (and ``torch``) is
#: a usage error, a name inside them that this tool does not implement for a routine is skipped with a warning.
KNOWN_BACKENDS: dict[str, frozenset[str]] = {
    "attention": frozenset({"fa2", "fa2_tc", "fa3", "auto", "cudnn", "cudnn-native", "cutlass", "trtllm-gen",
                            "trtllm-native", "trtllm-fmha-v2", "trtllm-gen-native", "cute-dsl", "prims-ts",
                            "prims_ts"}),
    "gemm": frozenset({"cudnn", "cublas", "trtllm", "cutlass", "tgv", "cublaslt", "cute-dsl", "b12x", "auto",
                       "tinygemm", "cutile", "trtllm_low_latency"}),
    "moe": frozenset({"trtllm", "cutlass", "cute-dsl", "b12x"}),
}
#: What FlashInfer's benchmark runs when --backends is not given (a MoE routine runs its one backend).
DEFAULT_BACKENDS: dict[str, tuple[str, ...]] = {"attention": ("fa2",), "gemm": ("cudnn",)}

# Compute capabilities on which FlashInfer's benchmark lets a routine's backends run (its per-routine tables;
# trtllm-gen-native is its deprecated name of trtllm-native). bmm_fp8 and mm_fp4 are not in them: FlashInfer
# asks the kernels themselves, and RULES below stand in for that.
_AMPERE_ON = ("8.0", "8.6", "8.9")
_LATER = ("10.0", "10.3", "10.7", "12.0", "12.1")
_CC_TABLES: dict[str, dict[str, frozenset[str]]] = {
    "BatchDecodeWithPagedKVCacheWrapper": {
        "fa2": frozenset({"7.5", *_AMPERE_ON, "9.0", *_LATER}), "fa2_tc": frozenset({*_AMPERE_ON, "9.0", *_LATER}),
        "cudnn": frozenset({*_AMPERE_ON, "9.0", *_LATER}), "trtllm-gen": frozenset({"10.0", "10.3", "10.7"}),
        "trtllm-native": frozenset({"9.0", *_LATER}),
    },
    "BatchPrefillWithPagedKVCacheWrapper": {
        "fa2": frozenset({*_AMPERE_ON, "9.0", *_LATER}), "fa3": frozenset({"9.0"}),
        "cudnn": frozenset({*_AMPERE_ON, "9.0", *_LATER}), "trtllm-gen": frozenset({"10.0", "10.3", "10.7"}),
        "trtllm-native": frozenset({"10.0", "10.3", "10.7"}),
    },
    "BatchPrefillWithRaggedKVCacheWrapper": {
        "fa2": frozenset({*_AMPERE_ON, "9.0", "10.0", "10.3", "12.0", "12.1"}), "fa3": frozenset({"9.0"}),
        "cudnn": frozenset({*_AMPERE_ON, "9.0", "10.0", "10.3", "12.0", "12.1"}),
        "cutlass": frozenset({"10.0", "10.3"}),
    },
    "BatchMLAPagedAttentionWrapper": {
        "fa2": frozenset({*_AMPERE_ON, "9.0", *_LATER}), "fa3": frozenset({"9.0"}),
        "trtllm-native": frozenset({"10.0", "10.3", "10.7"}),
    },
    "gemm_fp8_nt_groupwise": {"cutlass": frozenset({"10.0", "10.3", "10.7"})},
    "group_gemm_fp8_nt_groupwise": {"cutlass": frozenset({"10.0", "10.3", "10.7"})},
    "trtllm_fp4_block_scale_moe": {"trtllm": frozenset({"10.0", "10.3", "10.7"})},
    "trtllm_fp8_block_scale_moe": {"trtllm": frozenset({"10.0", "10.3", "10.7"})},
    "trtllm_fp8_per_tensor_scale_moe": {"trtllm": frozenset({"10.0", "10.3", "10.7"})},
    "cutlass_fused_moe": {"cutlass": frozenset(_LATER)},
}
_ALIASES = {"trtllm-gen-native": "trtllm-native"}


@dataclass(frozen=True)
class CCRule:
    """Compute capabilities a backend runs on: an explicit set, or everything from a minimum on."""

    exact: frozenset[CC] | None = None
    minimum: CC | None = None

    def allows(self, cc: CC) -> bool:
        if self.exact is not None:
            return cc in self.exact
        return self.minimum is None or cc >= self.minimum


_BLACKWELL_ANY = CCRule(exact=frozenset({(10, 0), (10, 3), (12, 0), (12, 1)}))
#: Where FlashInfer's benchmark asks the kernels (bmm_fp8, mm_fp4): what those kernels accept.
RULES: dict[tuple[str, str], CCRule] = {
    ("bmm_fp8", "cudnn"): CCRule(minimum=(8, 9)),
    ("bmm_fp8", "cublas"): CCRule(minimum=(8, 9)),
    ("bmm_fp8", "cutlass"): CCRule(exact=frozenset({(10, 0), (10, 3)})),
    ("mm_fp4", "cudnn"): _BLACKWELL_ANY,
    ("mm_fp4", "cutlass"): _BLACKWELL_ANY,
    ("mm_fp4", "trtllm"): CCRule(exact=frozenset({(10, 0), (10, 3)})),
}


def default_backends(routine: str) -> list[str]:
    """What runs without --backends: FlashInfer's benchmark's default for the routine's family."""
    spec = ROUTINES[routine]
    if spec.family == "moe":
        return [b for b in spec.backends if b != TORCH]
    return list(DEFAULT_BACKENDS[spec.family])


def runs_on(routine: str, backend: str, cc: CC) -> bool:
    table = _CC_TABLES.get(routine)
    if table is None:
        return RULES[(routine, backend)].allows(cc)
    return f"{cc[0]}.{cc[1]}" in table.get(_ALIASES.get(backend, backend), frozenset())


def load_flashinfer() -> tuple[ModuleType | None, str | None]:
    """Import ``flashinfer``; return (module, None) or (None, why it is unavailable)."""
    try:
        return importlib.import_module("flashinfer"), None
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available", with the reason shown
        return None, f"{type(exc).__name__}: {exc}"


def problem_skip_reason(routine: str, backend: str, args: argparse.Namespace) -> str | None:
    """Problem-shape limits of a backend (FlashInfer's benchmark: fa2 does not support a GQA ratio of 5)."""
    if backend == "fa2" and ROUTINES[routine].family == "attention" and args.num_kv_heads:
        if args.num_qo_heads // args.num_kv_heads == 5:
            return "does not support GQA ratio of 5"
    return None


def select_backends(
    routine: str,
    requested: list[str],
    cc: CC | None,
    flashinfer_error: str | None,
    args: argparse.Namespace,
) -> tuple[list[str], list[str]]:
    """Split the requested backends into (runnable, warning messages for the skipped ones).

    ``cc`` is None on a machine without CUDA; ``flashinfer_error`` is None when FlashInfer imported.
    """
    kept: list[str] = []
    warnings: list[str] = []
    for backend in requested:
        if backend == TORCH:
            kept.append(backend)
            continue
        reason: str | None
        if backend not in ROUTINES[routine].backends:
            reason = "is not implemented by this benchmark"
        elif cc is None:
            reason = "needs a CUDA device (none available)"
        elif not runs_on(routine, backend, cc):
            reason = f"is not supported on compute capability {cc[0]}.{cc[1]}"
        elif flashinfer_error is not None:
            reason = f"needs the flashinfer package, which is not importable ({flashinfer_error})"
        else:
            reason = problem_skip_reason(routine, backend, args)
        if reason is None:
            kept.append(backend)
        else:
            warnings.append(f"{backend} for routine {routine} {reason}. Skipping.")
    return kept, warnings

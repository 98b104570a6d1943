"""Which backends can run where: the seed's support matrix, the compute-capability filter, FlashInfer's presence.

Every backend but ``torch`` calls the ``flashinfer`` package and needs a CUDA device whose compute capability
(CC) the kernel family supports. Skipped backends are reported with a ``[WARNING]`` naming what and why.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from types import ModuleType

from .registry import ROUTINES

TORCH = "torch"
CC = tuple[int, int]


@dataclass(frozen=True)
class CCRule:
    """Compute capabilities a backend runs on: an explicit set, or everything from a minimum on."""

    exact: frozenset[CC] | None = None
    minimum: CC | None = None

    def allows(self, cc: CC) -> bool:
        if self.exact is not None:
            return cc in self.exact
        return self.minimum is None or cc >= self.minimum


_SM80_UP = CCRule(minimum=(8, 0))
_SM89_UP = CCRule(minimum=(8, 9))
_SM90_UP = CCRule(minimum=(9, 0))
_HOPPER = CCRule(exact=frozenset({(9, 0)}))
_BLACKWELL = CCRule(exact=frozenset({(10, 0), (10, 3)}))
_BLACKWELL_ANY = CCRule(exact=frozenset({(10, 0), (10, 3), (12, 0), (12, 1)}))

# Default rule per backend; per-routine exceptions below. Seed: cudnn, cutlass and trtllm attention backends are
# CC 10.0 only, fa3 CC 9.0 only. GEMM/MoE rules follow FlashInfer's own checks for those APIs.
_BACKEND_RULES: dict[str, CCRule] = {
    "fa2": _SM80_UP,
    "fa2_tc": _SM80_UP,
    "fa3": _HOPPER,
    "cudnn": _BLACKWELL,
    "cutlass": _BLACKWELL,
    "trtllm": _BLACKWELL,
    "trtllm-gen": _BLACKWELL,
    "trtllm-gen-native": _BLACKWELL,
    "cublas": _SM89_UP,
}
_ROUTINE_RULES: dict[tuple[str, str], CCRule] = {
    ("bmm_fp8", "cudnn"): _SM89_UP,
    ("mm_fp4", "cudnn"): _BLACKWELL_ANY,
    ("mm_fp4", "cutlass"): _BLACKWELL_ANY,
    ("cutlass_fused_moe", "cutlass"): _SM90_UP,
}


def cc_rule(routine: str, backend: str) -> CCRule:
    return _ROUTINE_RULES.get((routine, backend), _BACKEND_RULES[backend])


def load_flashinfer() -> tuple[ModuleType | None, str | None]:
    """Import ``flashinfer``; return (module, None) or (None, why it is unavailable)."""
    try:
        return importlib.import_module("flashinfer"), None
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available", with the reason shown
        return None, f"{type(exc).__name__}: {exc}"


def problem_skip_reason(routine: str, backend: str, args: argparse.Namespace) -> str | None:
    """Problem-shape limits of a backend (seed: fa2 does not support a GQA ratio of 5)."""
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
        if cc is None:
            reason = "needs a CUDA device (none available)"
        elif not cc_rule(routine, backend).allows(cc):
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

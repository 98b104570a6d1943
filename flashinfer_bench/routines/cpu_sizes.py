"""A case shrunk to finish in seconds on a CPU, where the torch backend is all that runs and a GPU-sized case
(the README's decode example: 1 GFLOP a call in bfloat16) takes minutes.

The counts a user did not give become CPU_NUM_ITERS timed and CPU_DRY_RUN_ITERS warm-up calls; the size flags
of SHRINKABLE are halved in turn, each only as far as the case stays valid (and a GEMM's n or k that was a
multiple of the tile size stays one), until a call's work is at most CPU_FLOP_BUDGET. What changed is printed
in one [INFO] line; ``--full_size_on_cpu`` keeps the case as given. The CSV rows record the sizes that ran.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from . import metrics
from .errors import UsageError
from .specs import ROUTINES
from .validation import validate

#: The FLOPs of one call the CPU case is shrunk to: a few tenths of a second for the slowest torch backend
#: measured here (bfloat16 paged decode: 0.03-0.15 GFLOP/s on two busy cores).
CPU_FLOP_BUDGET = 1e7
CPU_NUM_ITERS, CPU_DRY_RUN_ITERS = 3, 1
#: Per family, the size flags that may shrink, in the order they are halved (head counts and dimensions are the
#: kernel's shape and stay).
SHRINKABLE = {"attention": ("batch_size", "s_kv", "s_qo"), "gemm": ("m", "batch_size", "group_size", "n", "k"),
              "moe": ("num_tokens",)}
#: Size flags that stay multiples of TILE when they were (tile sizes and scale blocks divide them).
ALIGNED, TILE = frozenset({"n", "k"}), 128


def estimated_flops(args: argparse.Namespace) -> float:
    """The FLOPs of one call of the case, from its flags (every sequence at its full length)."""
    family = ROUTINES[args.routine].family
    if family == "gemm":
        from .gemm import count

        return count(args)[0]
    if family == "moe":
        return metrics.moe_flops(args.num_tokens * args.top_k, args.hidden_size, args.intermediate_size)
    kv = [args.s_kv] * args.batch_size
    if args.routine == "BatchMLAPagedAttentionWrapper":
        return metrics.mla_flops(kv, args.num_qo_heads, args.head_dim_ckv, args.head_dim_kpe)
    return metrics.attention_flops([args.s_qo] * args.batch_size, kv, args.num_qo_heads, args.head_dim_qk,
                                   args.head_dim_vo, args.causal)


def _halve(args: argparse.Namespace, flag: str) -> bool:
    """Halve ``flag`` when the case stays valid and the value keeps its alignment; False (unchanged) otherwise."""
    value = getattr(args, flag)
    smaller = value // 2
    if smaller < 1 or (flag in ALIGNED and value % TILE == 0 and smaller % TILE):
        return False
    setattr(args, flag, smaller)
    try:
        validate(args)
    except UsageError:
        setattr(args, flag, value)
        return False
    return True


def shrink_for_cpu(args: argparse.Namespace, argv: Sequence[str]) -> list[str]:
    """Shrink ``args`` in place (the module docstring); returns the changes, ``--flag old -> new`` each."""
    before = {flag: getattr(args, flag) for flag in (*SHRINKABLE[ROUTINES[args.routine].family], "num_iters",
                                                     "dry_run_iters")}
    if "--num_iters" not in argv:
        args.num_iters = min(args.num_iters, CPU_NUM_ITERS)
    if "--dry_run_iters" not in argv:
        args.dry_run_iters = min(args.dry_run_iters, CPU_DRY_RUN_ITERS)
    flags = [f for f in SHRINKABLE[ROUTINES[args.routine].family] if isinstance(getattr(args, f, None), int)]
    turn = 0
    while flags and estimated_flops(args) > CPU_FLOP_BUDGET:  # each flag halved in turn
        flag = flags[turn % len(flags)]
        if _halve(args, flag):
            turn += 1
        else:
            flags.remove(flag)
    return [f"--{flag} {old} -> {getattr(args, flag)}" for flag, old in before.items() if getattr(args, flag) != old]

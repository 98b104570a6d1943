"""Cold-L2 support: flushing the L2 cache, or rotating through copies of the arguments."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import torch

from .devices import iter_tensors

# The flush buffer is this many times the L2 size, so every line is evicted whatever the replacement policy.
FLUSH_FACTOR = 2
# Rotation needs the other copies to cover this many times the L2 between two uses of one copy.
ROTATION_FACTOR = 2
# Beyond this many copies (arguments far smaller than L2) rotation is not worth it; flush instead.
MAX_ROTATION_COPIES = 256

ArgSet = tuple[tuple[Any, ...], dict[str, Any]]


def l2_cache_bytes(device: torch.device) -> int:
    return int(torch.cuda.get_device_properties(device).L2_cache_size)


# After writing the flush buffer, read it back, so the L2 is left holding clean lines: otherwise the
# timed kernel pays for writing back up to a whole L2 of dirty flush data (seen on an H100: +8% on a
# 64 MiB elementwise kernel against ncu, which starts each kernel from a clean, invalidated L2).
FLUSH_READ_BACK = True


@functools.cache
def _flush_buffer(device: torch.device) -> torch.Tensor:
    """Kept for the process's lifetime (2x L2, ~100 MiB on an H100) so repeated timings don't reallocate."""
    words = math.ceil(FLUSH_FACTOR * l2_cache_bytes(device) / 8)
    return torch.empty(words, dtype=torch.int64, device=device)


def flush_l2(device: torch.device) -> None:
    """Evict the whole L2 by writing a buffer twice its size (then reading it back), on the current stream."""
    buffer = _flush_buffer(device)
    buffer.zero_()
    if FLUSH_READ_BACK:
        buffer.max()


def tensor_bytes(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """Total bytes of the distinct tensors in args and kwargs."""
    seen: dict[int, int] = {}
    for t in iter_tensors((args, kwargs)):
        seen[id(t)] = t.numel() * t.element_size()
    return sum(seen.values())


def copies_needed(arg_bytes: int, l2_bytes: int) -> int:
    """Copies of the arguments so that, between two uses of one copy, the others cover
    ``ROTATION_FACTOR`` times the L2 (at least 2)."""
    if arg_bytes <= 0:
        raise ValueError("arguments hold no tensor bytes")
    return max(2, math.ceil(ROTATION_FACTOR * l2_bytes / arg_bytes) + 1)


def _clone(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.clone()
    if isinstance(obj, tuple):
        return tuple(_clone(x) for x in obj)
    if isinstance(obj, list):
        return [_clone(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _clone(v) for k, v in obj.items()}
    return obj


def rotating_arg_sets(args: tuple[Any, ...], kwargs: Mapping[str, Any], copies: int) -> list[ArgSet]:
    """``copies`` argument sets: the originals first, then clones of every tensor (other values shared)."""
    sets: list[ArgSet] = [(tuple(args), dict(kwargs))]
    for _ in range(copies - 1):
        sets.append((_clone(tuple(args)), _clone(dict(kwargs))))
    return sets

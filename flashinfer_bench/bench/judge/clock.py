"""The judge's own clock: what the harness costs per call (``ClockFloor``) and what copying outputs costs here.

These are the known costs the judge subtracts from a call's wall time before comparing what is left with a timing
claim (judge/schedule.py).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ClockFloor:
    """What the harness costs per call when the call does nothing (see ``calibrate``), in ms."""

    per_call_ms: float
    """A call's window, less the judge's time to draw the inputs where they were drawn in it."""
    ship_ms: float
    """Outputs asked for to outputs shipped, less the judge's time to copy that many bytes and to draw the next
    call's inputs (drawn meanwhile)."""


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


@functools.cache
def copy_out_ms(nbytes: int, device: str) -> float:
    """This process's time to copy ``nbytes`` from ``device`` into page-locked host memory, as a worker ships
    outputs (on the CPU: a memory copy), best of three; measured once per size and device."""
    if nbytes == 0:
        return 0.0
    source = torch.empty(nbytes, dtype=torch.uint8, device=device)
    target = torch.empty(nbytes, dtype=torch.uint8, pin_memory=device.startswith("cuda"))
    best = float("inf")
    for _ in range(3):
        synchronize(device)
        start = time.perf_counter()
        target.copy_(source)
        synchronize(device)
        best = min(best, (time.perf_counter() - start) * 1e3)
    return best

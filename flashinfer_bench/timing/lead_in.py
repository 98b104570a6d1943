"""The lead-in: GPU work queued just before each sample, so that fn's first launch is already waiting when the
GPU gets to it.

Without it, a warm sample starts on an idle GPU and its first kernel waits for the host to submit it; CUDA
events then count that host latency, and CUPTI has nothing to tell when the GPU was ready. With a cold
cache the L2 flush is the lead-in; with a warm cache it is a spin kernel that touches no memory.
"""

from __future__ import annotations

import torch

from .l2 import flush_l2
from .steps import Step

# About 50 us at 2 GHz: longer than the host needs to issue a typical fn's first launch after queuing it.
SPIN_CYCLES = 100_000


def spin() -> None:
    """Queue a one-thread kernel that spins for SPIN_CYCLES clock cycles on the current device and stream."""
    torch.cuda._sleep(SPIN_CYCLES)


def lead_in_step(device: torch.device, flush: bool) -> Step:
    """The lead-in of each sample: the L2 flush when the cache must be cold, otherwise the spin."""
    if flush:
        return lambda _: flush_l2(device)
    return lambda _: spin()

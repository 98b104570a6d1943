"""The lead-in: GPU work queued just before each sample, so that fn's first launch is already waiting when the
GPU gets to it.

Without it, a warm sample starts on an idle GPU and its first kernel waits for the host to submit it; CUDA
events then count that host latency, and CUPTI has nothing to tell when the GPU was ready. With a cold
cache the L2 flush is the lead-in; with a warm cache it is a spin kernel that touches no memory. When fn
does host work before its first launch for longer than that (argument checks, a planner), the timer lengthens
the lead-in with a spin sized from what it saw (``extended``).
"""

from __future__ import annotations

import torch

from .l2 import flush_l2
from .steps import Step

# About 50 us at 2 GHz: longer than the host needs to issue a typical fn's first launch after queuing it.
SPIN_CYCLES = 100_000

# Cycles per nanosecond assumed when a spin must last at least a given time: no data-centre GPU clocks its
# SMs faster, so the spin is never shorter than asked (on an H100 at 1.98 GHz it lasts 1.26x longer).
MAX_SM_CYCLES_PER_NS = 2.5

# The longest lead-in the timer adds for fn's host work before its first launch (timing/api.py): beyond it,
# the gap before fn's first kernel is estimated instead of observed (cupti_records.py).
MAX_EXTRA_LEAD_IN_NS = 2_000_000


def spin(cycles: int = SPIN_CYCLES) -> None:
    """Queue a one-thread kernel that spins for ``cycles`` clock cycles on the current device and stream."""
    torch.cuda._sleep(cycles)


def extended(lead_in: Step, extra_ns: int) -> Step:
    """``lead_in`` followed by a spin of at least ``extra_ns``: time for fn's host work before its first
    launch, so that the launch is waiting when the GPU gets to it."""
    if extra_ns <= 0:
        return lead_in
    cycles = int(extra_ns * MAX_SM_CYCLES_PER_NS)

    def step(i: int) -> None:
        lead_in(i)
        spin(cycles)

    return step


def lead_in_step(device: torch.device, flush: bool) -> Step:
    """The lead-in of each sample: the L2 flush when the cache must be cold, otherwise the spin."""
    if flush:
        return lambda _: flush_l2(device)
    return lambda _: spin()

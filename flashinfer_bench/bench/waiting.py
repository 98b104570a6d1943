"""Waiting awake for what is due soon: the worker's, for the end of a replayed round and for the judge's answers
in a timing session.

A worker thread that sleeps until the device wakes it took 0.2-0.3 ms to run again on an H100 host (a blocking CUDA
event), part of every replayed round's window on the judge's clock: the exchange and its noise, which decide how
long rounds must be for an honest claim of a few microseconds to be read against them (judge/replayed.py,
benchmarks/round_exchange.py, docs/measurements.md). So the worker polls where the moment is near: from
``WAKE_AHEAD_S`` before it (asleep until then) to ``POLL_AFTER_S`` after it, then sleeps as before. Polling costs a
CPU for that stretch only; a waiter kept from a CPU by a busy host is what the judge's clock measures and takes out
(judge/clock.py). The judge does not poll: woken by the worker's answer on its pipe, it read it no later than
when it polled for it (benchmarks/round_exchange.py, docs/measurements.md)."""

from __future__ import annotations

import time
from collections.abc import Callable

#: Polling begins this long before the moment something is due.
WAKE_AHEAD_S = 3e-4
#: Polling ends this long after that moment; the waiter then sleeps until it comes.
POLL_AFTER_S = 1e-3


def poll_until(ready: Callable[[float], bool], due: float) -> bool:
    """Whether what is awaited came by ``POLL_AFTER_S`` past ``due`` (a ``time.perf_counter`` time), polled with
    ``ready(timeout)``: True once it has come, else False after waiting at most ``timeout`` seconds (0: at once).
    Until ``WAKE_AHEAD_S`` before ``due`` the timeouts span what is left of that stretch, then they are 0."""
    wake, give_up = due - WAKE_AHEAD_S, due + POLL_AFTER_S
    while (now := time.perf_counter()) < give_up:
        if ready(max(0.0, wake - now)):
            return True
    return False

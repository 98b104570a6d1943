"""Waiting awake for what is due soon: a timing session's answers and the end of a replayed round.

A thread that sleeps until the device or a pipe wakes it takes a while to run again: on an H100 host a replayed
round's window held 0.2-0.4 ms of such wake-ups at each end (the worker woken by the seeds and by the round's end,
the judge by the worker's answer), most of the round's exchange and of its noise, which decides how long rounds
must be for an honest claim of a few microseconds to be read against them (judge/replayed.py, docs/measurements.md).
So a waiter polls where the moment is near: from ``WAKE_AHEAD_S`` before it (asleep until then) to ``POLL_AFTER_S``
after it, then sleeps as before. Polling costs a CPU for that stretch only; a waiter kept from a CPU by a busy host
is what the judge's clock measures and takes out (judge/clock.py)."""

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

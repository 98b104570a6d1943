"""No descriptor but those the sandboxed process is meant to hold.

A forked process inherits every descriptor of its parent: a CLI's terminal (the fds the output capture saves),
multiprocessing's resource tracker pipe (whose tracker unlinks what it is told to when the CLI exits), pipes of
processes that are gone. Once inside, all of them are closed but the ones kept on purpose (a worker's channel to
its judge); what the judge passes later (a log file, the output buffer) comes over that channel."""

from __future__ import annotations

import os

MAX_FD = 2**31 - 1


def _forget_resource_tracker() -> None:
    """Its pipe is closed: registering shared memory must not write to whatever reuses the number, nor start
    a tracker (the private /dev/shm goes with the namespace, so there is nothing to clean up after)."""
    from multiprocessing import resource_tracker

    tracker = resource_tracker._resource_tracker
    tracker._fd = tracker._pid = None
    resource_tracker.register = resource_tracker.unregister = lambda *args, **kwargs: None


def _close_inherited(keep: tuple[int, ...]) -> None:
    """Close every descriptor but ``keep``; 0, 1 and 2 (unless kept) point at /dev/null."""
    null = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):
        if std not in keep and std != null:
            os.dup2(null, std)
    low = 0
    for fd in sorted({*keep, 0, 1, 2}):
        if low < fd:  # closerange(n, n) would close everything from n on (close_range with last = -1)
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, MAX_FD)
    _forget_resource_tracker()

"""The shape shared by all measuring loops.

A sample i is ``prepare(i)`` (untimed: on a GPU the lead-in of lead_in.py, on the host nothing) followed by
``body(i)`` (timed: call fn on the i-th argument set, or replay a CUDA graph). Measurers differ only in the
clock they read.
"""

from __future__ import annotations

from collections.abc import Callable

Step = Callable[[int], None]


def nothing(_: int) -> None:
    """A prepare step that does nothing (warm cache)."""

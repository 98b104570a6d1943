"""The shape shared by all measuring loops.

A sample i is ``setup(i)`` (untimed work of the caller, e.g. new input values; optional; on a GPU it runs
once the previous sample's work has finished, outside the sample), ``lead_in(i)`` (untimed: on a GPU the
lead-in of lead_in.py, on the host nothing) and ``body(i)`` (timed: call fn on the i-th argument set, or
replay a CUDA graph), then ``after(i)`` (untimed work of the caller once the sample's work has finished, e.g.
keeping its outputs; optional). Measurers differ only in the clock they read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Step = Callable[[int], None]


def nothing(_: int) -> None:
    """A prepare step that does nothing (warm cache)."""


@dataclass(frozen=True)
class SampleSteps:
    lead_in: Step
    body: Step
    setup: Step | None = None
    after: Step | None = None

    def prepare(self, i: int) -> None:
        """Everything untimed before ``body(i)``: the setup, then the lead-in."""
        if self.setup is not None:
            self.setup(i)
        self.lead_in(i)

"""Host-clock timing: the CPU path, so the pipeline runs without a GPU."""

from __future__ import annotations

import time

from .steps import Step

NS_PER_MS = 1e6


def measure_host(prepare: Step, body: Step, indices: range, after: Step | None = None) -> list[float]:
    """Wall time of ``body(i)`` for each i, ms, by ``time.perf_counter_ns``; ``prepare(i)`` and ``after(i)`` run
    untimed."""
    samples: list[float] = []
    for i in indices:
        prepare(i)
        start = time.perf_counter_ns()
        body(i)
        samples.append((time.perf_counter_ns() - start) / NS_PER_MS)
        if after is not None:
            after(i)
    return samples

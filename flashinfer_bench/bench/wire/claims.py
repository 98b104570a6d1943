"""What a timing loop's process says about its calls: the samples, and the conditions they were taken under.

A worker's claim is the solution's word (checked by the judge, never just believed, judge/schedule.py); the
judge's own claim for the reference comes from the same loop (harness.py), so the two sides of a speed-up are
measured the same way and under the same conditions.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TimingClaim:
    """What the solution's process says about its timed calls (checked by the judge, never just believed)."""

    samples_ms: list[float]
    #: The timer that took the samples (timing/result.py: "cupti", "cuda_events" or "host_clock").
    method: str
    #: Per timed call, how long the solution's setup took before it (empty without a setup).
    setup_ms: list[float] = field(default_factory=list)
    #: The cache policy the samples were taken under (timing/result.py: "warm", "flush_l2", ...).
    cache_policy: str = "warm"
    #: Whether the samples are replays of a captured CUDA graph.
    cuda_graph: bool = False

    def conditions(self) -> dict[str, object]:
        """The conditions a trace records beside the latency (``performance.extra``)."""
        return {"timer": self.method, "cache_policy": self.cache_policy, "cuda_graph": self.cuda_graph}

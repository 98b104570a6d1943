"""What a timing loop's process says about its calls: the samples, and the conditions they were taken under.

A worker's claim is the solution's word (checked by the judge, never just believed, judge/schedule.py); the
judge's own claim for the reference comes from the same loop (harness.py), so the two sides of a speed-up are
measured the same way and under the same conditions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flashinfer_bench.bench.wire.failures import CallFailed
from flashinfer_bench.data import EvaluationStatus


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

    def check_samples(self, timed_calls: int) -> None:
        """Raises CallFailed (RUNTIME_ERROR) unless there are 1 to ``timed_calls`` samples, each positive and
        finite, and the setups' times are finite and not negative."""
        if not self.samples_ms or len(self.samples_ms) > timed_calls \
                or not all(0.0 < s < float("inf") for s in self.samples_ms) \
                or not all(0.0 <= s < float("inf") for s in self.setup_ms):
            raise CallFailed(EvaluationStatus.RUNTIME_ERROR,
                             f"the solution's process reported {len(self.samples_ms)} timing samples for "
                             f"{timed_calls} timed calls, or samples that are not positive and finite")

    def conditions(self) -> dict[str, object]:
        """The conditions a trace records beside the latency (``performance.extra``)."""
        return {"timer": self.method, "cache_policy": self.cache_policy, "cuda_graph": self.cuda_graph}

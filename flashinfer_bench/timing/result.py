"""The record of one timing: every sample and the conditions it was taken under."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .stats import SampleStats

# Values of TimingResult.method.
CUPTI = "cupti"
CUDA_EVENTS = "cuda_events"
HOST_CLOCK = "host_clock"

# Values of TimingResult.cache_policy.
WARM = "warm"
FLUSH_L2 = "flush_l2"
ROTATE_BUFFERS = "rotate_buffers"


@dataclass
class TimingResult:
    """Samples of one callable's time and how they were taken (NVBench style: a number carries its noise
    and its conditions)."""

    samples_ms: list[float]
    """Per-call time of each sample, ms (for CUDA graphs: replay time / calls_per_sample)."""
    method: str
    """"cupti", "cuda_events" or "host_clock" (the method actually used, after any fallback)."""
    cuda_graph: bool
    """True when samples are replays of a captured CUDA graph."""
    device: str
    """Device name, e.g. "NVIDIA H100 80GB HBM3", or "cpu"."""
    cache_policy: str
    """"warm", "flush_l2" (L2 overwritten before each sample) or "rotate_buffers" (copies of the args)."""
    clocks_before: int | None
    """SM clock in MHz just before measuring (NVML), None where unknown."""
    clocks_after: int | None
    """SM clock in MHz just after measuring, None where unknown."""
    stats: SampleStats
    calls_per_sample: int = 1
    """Calls of fn per sample (more than one only for CUDA graphs)."""
    warnings: list[str] = field(default_factory=list)
    kernel_samples_ms: list[float] | None = None
    """CUPTI only, per call like samples_ms: each sample from its first GPU activity's start to its last
    one's end, i.e. kernel records alone, without the GPU's work to launch the first kernel (about 1 us
    per sample on an H100). samples_ms includes that work, as Nsight Compute's durations do."""
    activities_per_call: float | None = None
    """CUPTI only: the GPU activities (kernels, copies, fills) a dry run made per call, the median, where the dry
    runs were traced to count them (``cupti_most_activities``)."""

    @property
    def median_ms(self) -> float:
        return self.stats.median_ms

    @property
    def std_ms(self) -> float:
        return self.stats.std_ms

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "samples_ms": list(self.samples_ms),
            "method": self.method,
            "cuda_graph": self.cuda_graph,
            "device": self.device,
            "cache_policy": self.cache_policy,
            "clocks_before": self.clocks_before,
            "clocks_after": self.clocks_after,
            "calls_per_sample": self.calls_per_sample,
            "stats": self.stats.to_dict(),
            "warnings": list(self.warnings),
            "kernel_samples_ms": None if self.kernel_samples_ms is None else list(self.kernel_samples_ms),
        }

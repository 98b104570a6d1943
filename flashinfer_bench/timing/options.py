"""How to time a callable, in one frozen object: what ``bench_gpu_time``'s keyword arguments say."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TimingOptions:
    enable_cupti: bool = True
    """Time GPU work from CUPTI records (all streams); False forces CUDA events."""
    num_iters: int = 30
    """Samples to take (the first batch when sampling adaptively)."""
    dry_run_iters: int = 5
    """Untimed warm-up calls before measuring."""
    cold_l2_cache: bool = False
    """Evict the L2 before each sample (flush, or rotation under a CUDA graph)."""
    rotate_buffers: bool = False
    """Rotate through copies of the tensor arguments whose total exceeds the L2."""
    use_cuda_graph: bool = False
    """Capture several calls into a CUDA graph and time its replays."""
    target_ci_pct: float | None = None
    """Keep sampling, in batches of num_iters, until the 95% CI of the median is narrower than this
    percentage of the median (or the budget is spent)."""
    time_budget_s: float | None = None
    """Seconds of sampling allowed; alone, sampling continues until it is spent."""
    cupti_most_activities: int | None = None
    """Time with CUPTI only while fn's dry runs make at most this many GPU activities per call (their median);
    beyond it, CUDA events (cuda_sampler.py ``CudaSampler.warm_up``). None: no limit."""

    def __post_init__(self) -> None:
        if self.num_iters < 1:
            raise ValueError("num_iters must be at least 1")
        if self.dry_run_iters < 0:
            raise ValueError("dry_run_iters must not be negative")
        if self.target_ci_pct is not None and self.target_ci_pct <= 0:
            raise ValueError("target_ci_pct must be positive")
        if self.cupti_most_activities is not None and self.cupti_most_activities < 1:
            raise ValueError("cupti_most_activities must be at least 1")

    @property
    def cold(self) -> bool:
        """A cold cache was asked for, one way or the other."""
        return self.cold_l2_cache or self.rotate_buffers

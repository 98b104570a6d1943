"""Turning CUPTI activity records into per-sample GPU times (pure Python, testable without a GPU).

How a sample is delimited: the host reads CUPTI's clock before queuing the sample's lead-in (the L2 flush,
or a short spin kernel), before calling fn and after it returns, giving a ``SampleWindow``. Every CUDA API
call that starts in the lead-in part belongs to the lead-in, every one that starts in the body part
belongs to the sample, and every GPU activity (kernel, memcpy, memset) carries the correlation id of the
API call that launched it. So kernels on any stream, and every kernel of a CUDA-graph replay, are
attributed to the right sample, and the lead-in is never counted.

Where a sample starts: when the GPU could begin fn's first command, that is, when the lead-in's last
activity ended, or later if the host had not yet submitted that command (the end of the API call that
launched it). It ends with fn's last GPU activity. So a sample covers the GPU front end's work to launch
fn's first kernel as well as the gaps between fn's kernels, as Nsight Compute's ``gpu__time_duration``
does (its start timestamp is written before the grid is launched), while host launch latency is kept out
because the lead-in is still running when fn's first launch is queued. A kernel record alone starts when
its first block runs and misses about a microsecond of launch work (measured on an H100:
docs/measurements.md). The span is never shorter than fn's own activities.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

NS_PER_MS = 1e6


@dataclass(frozen=True)
class ApiRecord:
    """A CUDA runtime/driver API call seen by CUPTI (CPU timestamps, ns)."""

    start_ns: int
    end_ns: int
    correlation_id: int


@dataclass(frozen=True)
class GpuRecord:
    """A kernel, memcpy or memset executed by the GPU (ns, on CUPTI's clock)."""

    start_ns: int
    end_ns: int
    correlation_id: int


@dataclass(frozen=True)
class SampleWindow:
    """Host timestamps of one sample: lead-in queued in [lead_in_ns, body_ns), fn called in [body_ns, end_ns]."""

    lead_in_ns: int
    body_ns: int
    end_ns: int


@dataclass(frozen=True)
class IterationSpan:
    start_ns: int
    """When the GPU could begin the sample's first command (see the module docstring)."""
    end_ns: int
    """End of the sample's last GPU activity."""
    activities: int
    """Number of GPU activities attributed to the sample."""
    first_activity_ns: int
    """Start of the sample's first GPU activity (equals start_ns without a lead-in)."""

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / NS_PER_MS

    @property
    def activity_ms(self) -> float:
        """First activity start to last activity end: what kernel records alone would give."""
        return (self.end_ns - self.first_activity_ns) / NS_PER_MS


@dataclass
class _Bucket:
    first: GpuRecord | None = None
    last_end: int | None = None
    count: int = 0
    lead_in_end: int | None = None


def _check_windows(windows: Sequence[SampleWindow]) -> None:
    for i, w in enumerate(windows):
        ordered = w.lead_in_ns <= w.body_ns <= w.end_ns
        if not ordered or (i + 1 < len(windows) and windows[i + 1].lead_in_ns < w.end_ns):
            raise ValueError("windows must be ordered and must not overlap")


def bucket_iterations(
    windows: Sequence[SampleWindow],
    api_records: Iterable[ApiRecord],
    gpu_records: Iterable[GpuRecord],
) -> list[IterationSpan | None]:
    """The GPU span of each sample window, or None for a window whose body launched no GPU work."""
    _check_windows(windows)
    starts = [w.lead_in_ns for w in windows]
    body_of: dict[int, int] = {}
    lead_in_of: dict[int, int] = {}
    submitted: dict[int, int] = {}
    for api in api_records:
        idx = bisect.bisect_right(starts, api.start_ns) - 1
        if idx < 0 or api.start_ns > windows[idx].end_ns:
            continue
        if api.start_ns >= windows[idx].body_ns:
            body_of[api.correlation_id] = idx
            # A runtime call and the driver call beneath it share an id; the inner one returns first.
            submitted[api.correlation_id] = min(api.end_ns, submitted.get(api.correlation_id, api.end_ns))
        else:
            lead_in_of[api.correlation_id] = idx
    buckets = [_Bucket() for _ in windows]
    for gpu in gpu_records:
        if (idx := lead_in_of.get(gpu.correlation_id)) is not None:
            b = buckets[idx]
            b.lead_in_end = gpu.end_ns if b.lead_in_end is None else max(b.lead_in_end, gpu.end_ns)
        elif (idx := body_of.get(gpu.correlation_id)) is not None:
            b = buckets[idx]
            if b.first is None or gpu.start_ns < b.first.start_ns:
                b.first = gpu
            b.last_end = gpu.end_ns if b.last_end is None else max(b.last_end, gpu.end_ns)
            b.count += 1
    return [_span(b, submitted) for b in buckets]


def _span(b: _Bucket, submitted: dict[int, int]) -> IterationSpan | None:
    if b.first is None or b.last_end is None:
        return None
    first_start = b.first.start_ns
    start = first_start
    if b.lead_in_end is not None:
        ready = max(b.lead_in_end, submitted.get(b.first.correlation_id, b.lead_in_end))
        start = min(first_start, ready)
    return IterationSpan(start, b.last_end, b.count, first_start)

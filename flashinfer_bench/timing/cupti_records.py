"""Turning CUPTI activity records into per-sample GPU times (pure Python, testable without a GPU).

How a sample is delimited: the host reads CUPTI's clock before queuing the sample's lead-in (the L2 flush,
or a short spin kernel), before calling fn and after it returns, giving a ``SampleWindow``. Every CUDA API
call that starts in the lead-in part belongs to the lead-in, every one that starts in the body part
belongs to the sample, and every GPU activity (kernel, memcpy, memset) carries the correlation id of the
API call that launched it. So kernels on any stream, and every kernel of a CUDA-graph replay, are
attributed to the right sample, and the lead-in is never counted.

What a sample counts: the GPU's own time for fn's work, launch processing included as Nsight Compute's
``gpu__time_duration`` counts it (its start timestamp is written before the grid is launched), host latency
excluded. Walking fn's activities in start order from the end of the lead-in (or from fn's first activity,
if that started earlier, on a stream that did not wait for the lead-in):

- time some activity of fn was running is counted once, however many streams overlap;
- an idle gap before an activity whose launch the host had submitted while the GPU was still busy is the
  GPU front end's own work on that launch: it is counted (a kernel record alone starts when its first block
  runs and misses about a microsecond of it; docs/measurements.md);
- an idle gap before an activity the host submitted late (after the GPU had run out of work, because fn did
  host work first or between its launches) holds host latency that ncu never sees. It counts as an estimate
  of launch processing instead: the median gap observed before fn's first activity in the samples of the
  same batch where the host was early (``launch_ns`` from earlier batches when there were none), or, with
  no observation at all, the part of the gap after the launch call returned.

On a device whose launch processing was measured across processes (``device_launch_ns``, launch_processing.py:
the gap itself depends on the process), both kinds of gap count as that figure instead, a queued one only when
it is at least half of it (a shorter one is counted as observed).

The timer keeps the host early where it can by lengthening the lead-in (timing/api.py), so estimates are
only needed for launches that come late inside fn; each span says how many it holds. A kernel launched with
programmatic dependent launch (FlashInfer's on Hopper) may start before the work ahead of it on its stream has
ended, its launch processing hidden behind that work: the overlap is counted once, as the GPU spends it, and
each span says how many such early starts it holds (ncu runs kernels one at a time and counts every launch in
full, so its per-call sum is larger by about a launch per such kernel).
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

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
    stream_id: int | None = None


@dataclass(frozen=True)
class SampleWindow:
    """Host timestamps of one sample: lead-in queued in [lead_in_ns, body_ns), fn called in [body_ns, end_ns]."""

    lead_in_ns: int
    body_ns: int
    end_ns: int


@dataclass(frozen=True)
class IterationSpan:
    start_ns: int
    """Where counting began: the lead-in's end, or fn's first activity if that came first or there is no lead-in."""
    end_ns: int
    """End of the sample's last GPU activity."""
    activities: int
    """Number of GPU activities attributed to the sample."""
    first_activity_ns: int
    """Start of the sample's first GPU activity."""
    gpu_ns: int
    """The GPU time counted for the sample (see the module docstring): at most end_ns - start_ns."""
    estimated_gaps: int = 0
    """Idle gaps before launches the host submitted late, counted as estimated launch processing."""
    first_late_ns: int = 0
    """How long after the lead-in's end the host submitted fn's first launch (0 when it was early)."""
    launch_gap_ns: int | None = None
    """The observed idle gap before fn's first activity when the host was early: launch processing."""
    early_starts: int = 0
    """Activities that started before the work ahead of them on their own stream had ended (a programmatic
    dependent launch): their launch processing was hidden behind that work, which ncu, running kernels one at a
    time, never lets happen."""

    @property
    def duration_ms(self) -> float:
        return self.gpu_ns / NS_PER_MS

    @property
    def activity_ms(self) -> float:
        """First activity start to last activity end: what kernel records alone would give."""
        return (self.end_ns - self.first_activity_ns) / NS_PER_MS


@dataclass
class _Bucket:
    activities: list[GpuRecord] = field(default_factory=list)
    lead_in_end: int | None = None
    lead_in_streams: set[int | None] = field(default_factory=set)


def _check_windows(windows: Sequence[SampleWindow]) -> None:
    for i, w in enumerate(windows):
        ordered = w.lead_in_ns <= w.body_ns <= w.end_ns
        if not ordered or (i + 1 < len(windows) and windows[i + 1].lead_in_ns < w.end_ns):
            raise ValueError("windows must be ordered and must not overlap")


def bucket_iterations(
    windows: Sequence[SampleWindow],
    api_records: Iterable[ApiRecord],
    gpu_records: Iterable[GpuRecord],
    launch_ns: float | None = None,
    device_launch_ns: int | None = None,
) -> list[IterationSpan | None]:
    """The GPU span of each sample window, or None for a window whose body launched no GPU work.

    ``launch_ns`` is the launch-processing estimate to use when this batch observes none of its own;
    ``device_launch_ns`` the device's measured figure, which replaces observation (the module docstring)."""
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
            b.lead_in_streams.add(gpu.stream_id)
        elif (idx := body_of.get(gpu.correlation_id)) is not None:
            buckets[idx].activities.append(gpu)
    for b in buckets:
        b.activities.sort(key=lambda a: a.start_ns)
    gaps = [_early_first_gap(b, submitted) for b in buckets]
    observed = [g for g in gaps if g is not None]
    if device_launch_ns is not None:
        launch_ns = device_launch_ns
    elif observed:
        launch_ns = statistics.median(observed)
    return [_span(b, submitted, launch_ns, g, device_launch_ns) for b, g in zip(buckets, gaps, strict=True)]


def _early_first_gap(b: _Bucket, submitted: dict[int, int]) -> int | None:
    """The idle gap before fn's first activity when the host had submitted it while the lead-in still ran."""
    if not b.activities or b.lead_in_end is None:
        return None
    first = b.activities[0]
    if first.start_ns < b.lead_in_end or submitted.get(first.correlation_id, b.lead_in_end) > b.lead_in_end:
        return None
    return first.start_ns - b.lead_in_end


def _span(
    b: _Bucket, submitted: dict[int, int], launch_ns: float | None, first_gap: int | None,
    device_launch_ns: int | None,
) -> IterationSpan | None:
    if not b.activities:
        return None
    first_start = b.activities[0].start_ns
    frontier = first_start if b.lead_in_end is None else min(b.lead_in_end, first_start)
    start, counted, estimated, first_late = frontier, 0.0, 0, 0
    # Where the work queued ahead of each stream ends: the lead-in's, then fn's own activities'.
    stream_end = {stream: b.lead_in_end for stream in b.lead_in_streams if stream is not None}
    early_starts = 0
    for a in b.activities:
        if a.stream_id is not None:
            ahead = stream_end.get(a.stream_id)
            early_starts += ahead is not None and a.start_ns < ahead
            stream_end[a.stream_id] = max(a.end_ns, ahead or a.end_ns)
        if a.start_ns > frontier:
            gap = a.start_ns - frontier
            sent = submitted.get(a.correlation_id, frontier)
            if sent <= frontier:
                counted += device_launch_ns if device_launch_ns is not None and 2 * gap >= device_launch_ns else gap
            else:
                estimated += 1
                counted += min(gap, launch_ns) if launch_ns is not None else max(0, a.start_ns - sent)
                if a is b.activities[0]:
                    first_late = sent - frontier
        counted += max(0, a.end_ns - max(a.start_ns, frontier))
        frontier = max(frontier, a.end_ns)
    return IterationSpan(
        start, frontier, len(b.activities), first_start, round(counted), estimated, first_late, first_gap, early_starts
    )

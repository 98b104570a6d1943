"""Turning CUPTI activity records into per-iteration GPU times (pure Python, testable without a GPU).

How an iteration is delimited: the host reads CUPTI's clock just before and just after issuing an
iteration's work, giving a window [t0, t1]. Every CUDA API call issued in the window (a runtime or driver
record whose start lies in it) belongs to the iteration, and every GPU activity (kernel, memcpy, memset)
carries the correlation id of the API call that launched it, so kernels on any stream, and every kernel a
CUDA-graph replay launches, are attributed to the right iteration. Work issued outside every window, such
as the L2 flush issued before t0, is never counted. An iteration's time is from its first GPU activity's
start to its last one's end, so gaps between its kernels count, as they would for a caller.
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
    correlation_id: int


@dataclass(frozen=True)
class GpuRecord:
    """A kernel, memcpy or memset executed by the GPU (ns, on CUPTI's clock)."""

    start_ns: int
    end_ns: int
    correlation_id: int


@dataclass(frozen=True)
class IterationSpan:
    start_ns: int
    end_ns: int
    activities: int
    """Number of GPU activities attributed to the iteration."""

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / NS_PER_MS


def bucket_iterations(
    windows: Sequence[tuple[int, int]],
    api_records: Iterable[ApiRecord],
    gpu_records: Iterable[GpuRecord],
) -> list[IterationSpan | None]:
    """The GPU span of each host window, or None for a window that launched no GPU work.

    ``windows`` are (t0, t1) host timestamps in issue order and must not overlap.
    """
    starts = [t0 for t0, _ in windows]
    for i, (t0, t1) in enumerate(windows):
        if t1 < t0 or (i + 1 < len(windows) and starts[i + 1] < t1):
            raise ValueError("windows must be ordered and must not overlap")
    iteration_of: dict[int, int] = {}
    for api in api_records:
        idx = bisect.bisect_right(starts, api.start_ns) - 1
        if idx >= 0 and api.start_ns <= windows[idx][1]:
            iteration_of[api.correlation_id] = idx
    first: list[int | None] = [None] * len(windows)
    last: list[int | None] = [None] * len(windows)
    counts = [0] * len(windows)
    for gpu in gpu_records:
        idx = iteration_of.get(gpu.correlation_id)
        if idx is None:
            continue
        lo, hi = first[idx], last[idx]
        first[idx] = gpu.start_ns if lo is None else min(lo, gpu.start_ns)
        last[idx] = gpu.end_ns if hi is None else max(hi, gpu.end_ns)
        counts[idx] += 1
    spans: list[IterationSpan | None] = []
    for lo, hi, count in zip(first, last, counts, strict=True):
        spans.append(None if lo is None or hi is None else IterationSpan(lo, hi, count))
    return spans

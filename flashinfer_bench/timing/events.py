"""CUDA-event timing: an event pair around each sample on the current stream.

Events only see work ordered on the current stream: work that ``fn`` leaves on a side stream without
joining back is not counted (CUPTI counts it). Each pair also includes the gap between the start event
and the first kernel, which over-reports kernels of a few microseconds.
"""

from __future__ import annotations

import torch

from .steps import Step


def measure_events(prepare: Step, body: Step, indices: range, device: torch.device, *,
                   setup: Step | None = None, after: Step | None = None) -> list[float]:
    """Elapsed time between events recorded just before and just after ``body(i)``, ms.

    Every sample is queued before a single synchronize, so the host never stalls the GPU between samples;
    ``prepare(i)`` (e.g. an L2 flush) is queued on the same stream before the start event. With a ``setup``,
    each ``setup(i)`` runs first, once the previous sample's work has finished (it waits for it); with an
    ``after``, each ``after(i)`` runs once sample i's work has finished.
    """
    stream = torch.cuda.current_stream(device)
    pairs: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
    for i in indices:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        if setup is not None:
            torch.cuda.synchronize(device)
            setup(i)
        prepare(i)
        start.record(stream)
        body(i)
        end.record(stream)
        pairs.append((start, end))
        if after is not None:
            torch.cuda.synchronize(device)
            after(i)
    torch.cuda.synchronize(device)
    return [start.elapsed_time(end) for start, end in pairs]

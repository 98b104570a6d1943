"""``CudaSampler``: measures batches of samples on a CUDA device with CUPTI, or CUDA events where CUPTI is missing or
fails at run time, keeping fn's first launch early under CUPTI (the lead-in lengthened when the host was late)."""

from __future__ import annotations

import statistics
from typing import Any

import torch

from . import notices
from .cupti_records import IterationSpan
from .cupti_timer import CuptiUnavailable, measure_cupti, pause_tracing
from .devices import device_name
from .events import measure_events
from .launch_processing import device_launch_ns
from .lead_in import MAX_EXTRA_LEAD_IN_NS, extended
from .result import CUDA_EVENTS, CUPTI
from .steps import SampleSteps

# The lead-in is lengthened when the host submitted fn's first launch after the GPU had run out of work in
# more than this fraction of a batch's samples; the batch is then measured again, at most LEAD_IN_TRIES times.
# The dry runs are traced too, so that the first batch usually starts with a lead-in long enough.
LATE_FRACTION = 0.25
LEAD_IN_TRIES = 3
# A lengthened lead-in lasts this many times the host's lateness it answers, plus LEAD_IN_SLACK_NS.
LEAD_IN_GROWTH, LEAD_IN_SLACK_NS = 1.5, 10_000


class CudaSampler:
    """Measures batches with the chosen method, falling back to CUDA events if CUPTI fails at run time.

    Under CUPTI it also keeps fn's first launch early (lengthening the lead-in when the host was late with
    it) and carries the launch-processing estimate from batch to batch (cupti_records.py)."""

    def __init__(self, method: str, cupti: Any, steps: SampleSteps, calls: int, dev: torch.device,
                 notes: list[str], most_activities: int | None = None) -> None:
        self.method = method
        #: TimingOptions.cupti_most_activities: beyond it per dry run, ``warm_up`` turns to CUDA events.
        self.most_activities = most_activities
        self.cupti = cupti
        self.steps = steps
        self.calls = calls
        self.dev = dev
        self.notes = notes
        self.dropped = 0
        self.kernel_samples: list[float] = []
        self.extra_lead_in_ns = 0
        self.launch_ns: float | None = None
        #: The device's measured launch processing, which every idle gap counts as (launch_processing.py).
        self.device_launch_ns = device_launch_ns(device_name(dev))
        self.estimated_samples = 0
        self.early_start_samples = 0
        #: The dry runs' median activities per call, once traced dry runs have counted them (``warm_up``).
        self.activities_per_call: float | None = None

    def __call__(self, indices: range) -> list[float]:
        steps = self.steps
        if self.method == CUPTI:
            try:
                found = self._trace(indices)
            except CuptiUnavailable as exc:
                notices.warn_once(str(exc), self.notes)
                self.method = CUDA_EVENTS
            else:
                if found:
                    self.dropped += len(indices) - len(found)
                    self.kernel_samples.extend(s.activity_ms / self.calls for s in found)
                    self.estimated_samples += sum(1 for s in found if s.estimated_gaps)
                    self.early_start_samples += sum(1 for s in found if s.early_starts)
                    return [s.duration_ms / self.calls for s in found]
                notices.warn(
                    "CUPTI recorded no GPU work for fn (does it launch kernels on this device?); "
                    "falling back to CUDA events.",
                    self.notes,
                )
                self.method = CUDA_EVENTS
        return [t / self.calls for t in measure_events(steps.lead_in, steps.body, indices, self.dev, setup=steps.setup,
                                                          after=steps.after)]

    def warm_up(self, count: int, *, traced: bool) -> None:
        """The ``count`` dry runs. Under CUPTI, when ``traced`` (eager calls: a graph's replay has no host work
        of fn's), they are traced as a batch is, and the lead-in starts out long enough for all but
        LATE_FRACTION of them: a first batch measured again costs as many calls as it has samples. Where they
        made more GPU activities per call than ``most_activities``, the samples are taken with CUDA events."""
        if traced and self.method == CUPTI and count:
            try:
                spans = self._measure(range(count))
            except CuptiUnavailable as exc:
                notices.warn_once(str(exc), self.notes)
                self.method = CUDA_EVENTS
            else:
                # The first dry run pays one-off costs (compilation, module loads) that no sample will.
                found = [s for s in spans[1:] or spans if s is not None]
                if self._too_many_activities(found):
                    return
                late = _lateness_to_cover(found)
                if late > 0:
                    self._lengthen_lead_in(late)
                return
        for i in range(count):
            self.steps.prepare(i)
            self.steps.body(i)
            if self.steps.setup is not None or self.steps.after is not None:
                # The next setup, and this call's after, run once this call's work has finished.
                torch.cuda.synchronize(self.dev)
                if self.steps.after is not None:
                    self.steps.after(i)
        torch.cuda.synchronize(self.dev)

    def _too_many_activities(self, spans: list[IterationSpan]) -> bool:
        """Whether the dry runs' median activities per call exceed ``most_activities``; if so, tracing stops
        and the samples are taken with CUDA events (TimingOptions.cupti_most_activities says why)."""
        if not spans:
            return False
        per_call = self.activities_per_call = statistics.median(s.activities for s in spans) / self.calls
        if self.most_activities is None or per_call <= self.most_activities:
            return False
        pause_tracing(self.cupti)
        notices.warn(f"fn made {per_call:g} GPU activities per call, more than {self.most_activities}: timed with "
                     "CUDA events, whose cost does not grow with them (CUPTI's does, per record).", self.notes)
        self.method = CUDA_EVENTS
        return True

    def _trace(self, indices: range) -> list[IterationSpan]:
        """The batch's spans, measured again with a longer lead-in while the host was late with fn's first
        launch in too many samples."""
        for _ in range(LEAD_IN_TRIES):
            found = [s for s in self._measure(indices) if s is not None]
            late = _lateness_to_cover(found)
            if late == 0 or self.extra_lead_in_ns >= MAX_EXTRA_LEAD_IN_NS:
                break
            self._lengthen_lead_in(late)
        return found

    def _measure(self, indices: range) -> list[IterationSpan | None]:
        """One traced batch with the current lead-in: each sample's span (None where it ran no GPU work); the
        launch-gap estimate updated from what it observed."""
        spans = measure_cupti(self.cupti, extended(self.steps.lead_in, self.extra_lead_in_ns), self.steps.body,
                              indices, self.dev, setup=self.steps.setup, launch_ns=self.launch_ns,
                              device_launch_ns=self.device_launch_ns, after=self.steps.after)
        observed = [s.launch_gap_ns for s in spans if s is not None and s.launch_gap_ns is not None]
        if observed:
            self.launch_ns = statistics.median(observed)
        return spans

    def _lengthen_lead_in(self, late_ns: int) -> None:
        """Lengthen the lead-in for a host that submitted fn's first launch ``late_ns`` after it ended."""
        grown = self.extra_lead_in_ns + int(LEAD_IN_GROWTH * late_ns) + LEAD_IN_SLACK_NS
        self.extra_lead_in_ns = min(MAX_EXTRA_LEAD_IN_NS, grown)


def _lateness_to_cover(spans: list[IterationSpan]) -> int:
    """How late the host was with fn's first launch in the latest sample but LATE_FRACTION of ``spans`` (0 when
    at most that fraction was late): what a longer lead-in must answer. Not the latest of all, so that one
    sample's hiccup does not lengthen every later one."""
    if not spans:
        return 0
    late = sorted(s.first_late_ns for s in spans)
    return late[len(late) - 1 - int(LATE_FRACTION * len(late))]

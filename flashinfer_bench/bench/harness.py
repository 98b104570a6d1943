"""The solution's side of an evaluation: draw the inputs from a seed, call the solution, put its outputs'
bytes in the judge's buffer, and run the timing loop on the seeds the judge hands out a round at a time.

This code runs in the solution's process, so a solution can change any of it: nothing it reports is trusted
for a verdict. It is written for honest solutions (a clear INCORRECT_SHAPE rather than garbage bytes), and so
that a dishonest one gains nothing by changing it: the judge draws the same inputs from the same seed, reads
the outputs as bytes of the types it expects, and checks the timed calls it picks after they were made.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any, Protocol, TypeVar

import torch

from flashinfer_bench.bench.calling import (
    Callee,
    OutputCountError,
    TimedCall,
    clone_inputs,
    invoke,
    modified_inputs,
    setup_of,
    take_values,
)
from flashinfer_bench.bench.inputs import InputPlan
from flashinfer_bench.bench.replay import ReplayedCalls, ReplayShape
from flashinfer_bench.bench.slot import Slot, TensorLayout, output_layouts, output_mismatch, total_bytes
from flashinfer_bench.bench.wire.claims import TimingClaim
from flashinfer_bench.bench.wire.failures import CallFailed
from flashinfer_bench.data import Definition, EvaluationStatus, Workload
from flashinfer_bench.timing.graph import GraphCaptureFailed
from flashinfer_bench.timing.result import CUDA_EVENTS, WARM

#: Calls made one at a time are timed with CUPTI while they make at most this many GPU activities each, else with
#: CUDA events (TimingOptions.cupti_most_activities): a call of many launches is host-bound, and CUPTI's records of
#: it would cost the worker more than the call (cupti-python 13.0: about 50 us a record).
CUPTI_MOST_ACTIVITIES = 16
#: Calls made one at a time are timed with CUDA events from the start, their warm-up untraced, where the solution's
#: latest known call (``Harness.latest_call_ms``) took at least this: at that length CUPTI's span adds nothing that
#: events miss, while tracing the warm-up to count a call's activities costs a call of many launches far more than
#: the call (the real dataset's mla_paged_prefill reference, a Python loop of about 230,000 launches: seconds a
#: traced call, docs/measurements.md).
EVENTS_FROM_CALL_MS = 20.0

#: What the solution's log says where its calls could not be captured in a CUDA graph (``Harness._replays``),
#: before the reason: its calls are then made one at a time.
CAPTURE_FAILED_NOTE = "timing: the calls could not be captured in a CUDA graph and are made one at a time"

_Result = TypeVar("_Result")


@contextmanager
def seeded(seed: int, device: str) -> Iterator[None]:
    """torch's default generators (the CPU's and ``device``'s) seeded inside, restored after."""
    devices = [torch.device(device).index or 0] if device.startswith("cuda") else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


class Exchange(Protocol):
    """The judge's side of the timing loop, as the harness sees it: seeds come a round at a time, asked for when
    the harness needs them; when a round's calls have all ended the judge may ask for the kept outputs of some of
    them (judge/schedule.py)."""

    def more(self) -> list[int]:
        """The next round's seeds."""

    def ran(self, count: int, more: bool, replay: bool = False) -> list[int]:
        """Every call before ``count`` has ended (``more``: more calls follow at once; ``replay``: the calls after
        these are replayed from a CUDA graph, bench/replay.py); returns the indices of the calls of that round
        whose outputs the judge asks for, in order. With none, and ``more``, the judge may hand the next round's
        seeds with the answer (``more()`` then returns them without asking)."""

    def shipped(self, indices: list[int]) -> None:
        """The outputs of calls ``indices`` are in the buffer, one after the other."""


@dataclass
class Harness:
    definition: Definition
    workload: Workload
    device: str
    trace_set_root: str | None
    callee: Callee
    #: How long the solution's latest known call took: ``call``'s last, its work waited for, or the median sample of
    #: a session timed one call at a time (None: no call yet).
    latest_call_ms: float | None = None
    #: A session timed one call at a time found the calls making more GPU activities than ``CUPTI_MOST_ACTIVITIES``
    #: (in its traced warm-up) and took its samples with CUDA events: later sessions do so from the start, their
    #: warm-up untraced (cupti-python 13.0 took about 50 us a record to count them, session after session).
    many_activities: bool = False

    @cached_property
    def plan(self) -> InputPlan:
        return InputPlan(self.definition, self.workload, self.device, self.trace_set_root)

    @cached_property
    def layouts(self) -> list[TensorLayout]:
        """The outputs' layouts, bound once: the timing loop checks every shipped call against them."""
        return output_layouts(self.definition, self.workload)

    def inputs(self, seed: int) -> list[Any]:
        return self.plan.draw(seed)

    def outputs(self, call_inputs: Sequence[Any]) -> tuple[Any, ...]:
        """One call's outputs, once they have the definition's structure (else CallFailed)."""
        try:
            outputs = invoke(self.callee, self.definition, self.workload, call_inputs, self.device)
        except OutputCountError as exc:
            raise CallFailed(EvaluationStatus.INCORRECT_SHAPE, str(exc)) from None
        mismatch = output_mismatch(outputs, self.layouts, self.device)
        if mismatch is not None:
            raise CallFailed(*mismatch)
        return outputs

    def call(self, seed: int, slot: Slot, *, repeat: int = 1, rng_seed: int | None = None,
             return_inputs: Sequence[str] = ()) -> list[str]:
        """``repeat`` calls on the inputs drawn from ``seed`` (fresh copies each), their outputs one after the
        other in ``slot``, then the values the last call left in ``return_inputs``. Returns the names of the
        inputs the last call wrote into."""
        names = list(self.definition.inputs)
        pristine = self.inputs(seed)
        offset = 0
        live = pristine
        with seeded(rng_seed, self.device) if rng_seed is not None else nullcontext():
            for _ in range(repeat):
                live = clone_inputs(pristine)
                outputs, self.latest_call_ms = self._clocked(partial(self.outputs, live))
                offset = slot.write(offset, outputs)
        slot.write(offset, [live[names.index(name)] for name in return_inputs])
        return modified_inputs(names, pristine, live)

    def time(self, iterations: int, warmup: int, seeds: Sequence[int], exchange: Exchange,
             slot: Slot, *, keep_outputs: bool = True, replay: ReplayShape | None = None) -> TimingClaim:
        """The timing loop: every call on fresh inputs, drawn outside the timed span from the seeds the judge hands
        out a round at a time (``seeds``: the first round's). A round's end is reported as soon as its last call's
        work has finished, before the timer works on its samples. With ``keep_outputs`` (unless the judge never
        asks for outputs), every call's outputs are kept until its round has ended, for the judge to ask for any.

        With ``replay`` (and warm-up calls), the timed calls are replayed from a CUDA graph (``_time_replayed``)
        where they can be; otherwise they are made one at a time."""
        if replay is not None and warmup:
            replays = self._replays(replay, keep_outputs)
            if replays is not None:
                return self._time_replayed(replays, replay, warmup, seeds, exchange, slot, keep_outputs)
        return self._time_each(iterations, warmup, seeds, exchange, slot, keep_outputs)

    def _replays(self, replay: ReplayShape, keep_outputs: bool) -> tuple[TimedCall, ReplayedCalls] | None:
        """The call this harness replays and its graphs (kept for the next sessions), those of the first round and of
        the longest captured now, before the warm-up's end: a graph captured inside a round's window (a tenth of a
        millisecond per call) made that round useless for sizing the next ones, and the rounds after it too short
        (judge/replayed.py ``next_round_calls``). None where the calls cannot be replayed: the plan's draws need the
        host, the callee has a setup (it runs per call, for the values drawn), or the capture failed (and is not
        tried again)."""
        key = (keep_outputs, replay.most_calls)
        if key not in self._replayed:
            replays = None
            if self.plan.replay_obstacle is None and setup_of(self.callee) is None:
                timed = TimedCall(self.callee, self.definition, self.workload, self.inputs(0), self.device)
                replayed = ReplayedCalls(self.plan, timed.inputs, timed.call,
                                         timed.latest if keep_outputs else None, self.layouts, replay.most_calls,
                                         destinations=timed.outputs or ())
                try:
                    for size in replay.captured_ahead:
                        replayed.graph(size)
                    replays = timed, replayed
                except GraphCaptureFailed as exc:
                    # Into the solution's log: the judge notes that the calls were made one at a time, not why.
                    print(f"{CAPTURE_FAILED_NOTE}: {exc}", file=sys.stderr, flush=True)
            self._replayed[key] = replays
        return self._replayed[key]

    @cached_property
    def _replayed(self) -> dict[tuple[bool, int], tuple[TimedCall, ReplayedCalls] | None]:
        return {}

    def _time_replayed(self, replays: tuple[TimedCall, ReplayedCalls], replay: ReplayShape, warmup: int,
                       seeds: Sequence[int], exchange: Exchange, slot: Slot, keep_outputs: bool) -> TimingClaim:
        """The warm-up calls one at a time on their own seeds, then ``replay.rounds`` replayed rounds, each seeded
        with the seed of the round's first call (its calls' inputs: ``DrawAt(seed, k)``; a round whose graph was not
        captured yet has it captured first, inside its window, which only makes that round longer: the judge takes
        the work from the shortest, judge/replayed.py); a sample is a round's time per call, the harness's own
        device work in it included (the judge takes out its own measure of that work). The last warm-up round's end
        tells the judge that replays follow."""
        slot.reserve(max(len(seeds), replay.shipped_reserved_calls) * total_bytes(self.layouts))
        timed, replayed = replays
        pending = deque(seeds)
        kept: list[tuple[Any, ...]] = []
        begun = reported = 0
        while begun < warmup:
            if not pending:
                pending.extend(exchange.more())
            take_values(timed.inputs, self.inputs(pending.popleft()))
            timed.call()
            if keep_outputs:
                kept.append(kept_copy(timed.latest))
            begun += 1
            if not pending:
                torch.cuda.synchronize(self.device)
                picked = exchange.ran(begun, True, replay=begun == warmup)
                if picked:
                    self._ship([kept[index - reported] for index in picked], slot)
                    exchange.shipped(picked)
                kept.clear()
                reported = begun
        samples: list[float] = []
        for left in reversed(range(replay.rounds)):
            round_seeds = exchange.more()
            if len(round_seeds) > replay.most_calls:
                raise RuntimeError(f"the judge sent a round of {len(round_seeds)} calls to replay, more than "
                                   f"{replay.most_calls}")
            replayed.run(round_seeds[0], len(round_seeds))
            replayed.wait()
            first, begun = begun, begun + len(round_seeds)
            picked = exchange.ran(begun, bool(left))
            if picked:  # the rows gathered on the device, a copy to the host per piece, not per call and output
                offset = 0
                for piece in replayed.shipped([index - first for index in picked]):
                    offset = slot.write(offset, [piece])
                exchange.shipped(picked)
            samples.append(replayed.replay_ms())
        return TimingClaim(samples, CUDA_EVENTS, [], WARM, True)

    def _time_each(self, iterations: int, warmup: int, seeds: Sequence[int], exchange: Exchange,
                   slot: Slot, keep_outputs: bool) -> TimingClaim:
        """The timing loop one call at a time, timed by ``bench_gpu_time_detailed``."""
        from flashinfer_bench.testing import bench_gpu_time_detailed

        # Room for shipping a whole round as large as the first (at the defaults the warm-up's, twice a timed
        # round), locked for the device's copies now, inside the first window, not in a shipment the judge clocks.
        slot.reserve(len(seeds) * total_bytes(self.layouts))
        live = self.inputs(seeds[0])
        upcoming = deque(seeds[1:])
        timed = TimedCall(self.callee, self.definition, self.workload, live, self.device)
        kept: list[tuple[Any, ...]] = []
        setup_ms: list[float] = []
        begun = reported = 0

        def end_round() -> None:
            nonlocal reported
            # More calls follow at once within the warm-up and within the planned timed calls; between the two
            # the timer works on the warm-up's records, which must fall between rounds, not in the next one.
            picked = exchange.ran(begun, begun < warmup or warmup < begun < warmup + iterations)
            if picked:
                self._ship([kept[index - reported] for index in picked], slot)
                exchange.shipped(picked)
            kept.clear()
            reported = begun

        def before_each(_: int) -> None:
            nonlocal begun
            if begun:
                if not upcoming:
                    upcoming.extend(exchange.more())
                take_values(live, self.inputs(upcoming.popleft()))
                if timed.has_setup:
                    _, elapsed = self._clocked(timed.set_up)
                    if begun >= warmup:
                        setup_ms.append(elapsed)
            begun += 1

        def after_each(_: int) -> None:
            if keep_outputs:
                kept.append(kept_copy(timed.latest))
            if not upcoming:
                end_round()

        long_calls = self.latest_call_ms is not None and self.latest_call_ms >= EVENTS_FROM_CALL_MS
        result = bench_gpu_time_detailed(timed.call, num_iters=iterations, dry_run_iters=warmup, device=self.device,
                                         before_each=before_each, after_each=after_each,
                                         enable_cupti=not (long_calls or self.many_activities),
                                         cupti_most_activities=CUPTI_MOST_ACTIVITIES)
        if result.activities_per_call is not None and result.activities_per_call > CUPTI_MOST_ACTIVITIES:
            self.many_activities = True
        if reported < begun:
            end_round()
        if result.samples_ms:
            self.latest_call_ms = statistics.median(result.samples_ms)
        return TimingClaim([float(s) for s in result.samples_ms], result.method, setup_ms, result.cache_policy,
                           result.cuda_graph)

    def _clocked(self, step: Callable[[], _Result]) -> tuple[_Result, float]:
        """What ``step`` returns, and the milliseconds it takes, the device work it queues included."""
        start = time.perf_counter()
        result = step()
        if self.device.startswith("cuda"):
            torch.cuda.synchronize(self.device)
        return result, (time.perf_counter() - start) * 1e3

    def _ship(self, calls: list[tuple[Any, ...]], slot: Slot) -> None:
        """Put these calls' kept outputs in the buffer, one after the other (each call's timer step ran once its
        work had finished, so they are complete)."""
        offset = 0
        for outputs in calls:
            mismatch = output_mismatch(outputs, self.layouts, self.device)
            if mismatch is not None:
                raise CallFailed(*mismatch)
            offset = slot.write(offset, outputs)


def kept_copy(latest: Callable[[], tuple[Any, ...]]) -> tuple[Any, ...]:
    """A copy of the latest call's outputs that later calls cannot overwrite (a destination-passing call reuses
    its buffers; a value-returning one may return the same tensor every time)."""
    try:
        outputs = latest()
    except OutputCountError as exc:
        raise CallFailed(EvaluationStatus.INCORRECT_SHAPE, str(exc)) from None
    return tuple(value.clone() if isinstance(value, torch.Tensor) else value for value in outputs)

"""``LocalSolution``: the harness in the judge's own process, for trusted callees only (the reference's timing,
the evaluators' tests, tools). Solution code never runs here in a run: the judge reaches it through
``RemoteSolution`` (judge/remote.py)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from flashinfer_bench.bench.calling import Callee
from flashinfer_bench.bench.harness import Harness
from flashinfer_bench.bench.judge.calibration import calibrate, zero_filling_callee
from flashinfer_bench.bench.judge.clock import ClockFloor
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.judge.replayed import (
    less_harness,
    next_round_calls,
    replay_shape,
    replayed_round_seeds,
    trial_rounds,
)
from flashinfer_bench.bench.judge.solution import (
    CallResult,
    Schedule,
    SolutionHandle,
    call_slot_bytes,
    most_calls_shipped,
    read_call_result,
    read_outputs,
)
from flashinfer_bench.bench.judge.windows import Round
from flashinfer_bench.bench.slot import Slot
from flashinfer_bench.bench.wire.claims import TimingClaim
from flashinfer_bench.bench.wire.failures import failure_of
from flashinfer_bench.bench.wire.judge_worker import Sent


class LocalSolution(SolutionHandle):
    """The harness in this process: the evaluators' logic without a second process (tests, tools)."""

    def __init__(self, ctx: EvaluationContext, callee: Callee) -> None:
        super().__init__(ctx)
        self.harness = Harness(ctx.definition, ctx.workload, ctx.device, ctx.trace_set_root, callee)
        self._floor: ClockFloor | None = None

    def clock_floor(self) -> ClockFloor:
        """Measured once, on the zero-filling callee in this process."""
        if self._floor is None:
            self._floor = calibrate(self.ctx, LocalSolution(self.ctx, zero_filling_callee(self.ctx)))
        return self._floor

    def call(self, seed: int, *, repeat: int = 1, rng_seed: int | None = None,
             return_inputs: Sequence[str] = ()) -> CallResult:
        slot = Slot(bytearray(call_slot_bytes(self.ctx, repeat, return_inputs) or 1))
        started = time.perf_counter()
        try:
            wrote = self.harness.call(seed, slot, repeat=repeat, rng_seed=rng_seed, return_inputs=return_inputs)
        except Exception as exc:  # noqa: BLE001 - solution code may raise anything
            raise failure_of(exc) from None
        self.latest_call_ms = (time.perf_counter() - started) * 1e3 / max(repeat, 1)
        return read_call_result(self.ctx, slot, repeat, return_inputs, wrote)

    def time(self, iterations: int, warmup: int, schedule: Schedule) -> TimingClaim:
        per_call = call_slot_bytes(self.ctx, 1, ())
        slot = Slot(bytearray(per_call * most_calls_shipped(schedule) if schedule.picks_calls else 1))
        layouts = self.ctx.output_layouts

        class Direct:
            """The judge's side as RemoteSolution runs it, the next round's seeds sent with no picks included."""

            asked_at = 0.0
            ready: list[int] = []

            def more(self) -> list[int]:
                seeds, self.ready = self.ready or schedule.next_round(), []
                return seeds

            def ran(self, count: int, more: bool, replay: bool = False) -> list[int]:
                picked = schedule.on_ran(count, replay)
                self.asked_at = schedule.asking() if picked else 0.0
                self.ready = schedule.next_round() if more and not picked else []
                return picked

            def shipped(self, indices: list[int]) -> None:
                arrived_at = schedule.arrived()
                outputs, _ = read_outputs(slot, layouts, len(indices), "cpu", schedule.keep)
                schedule.on_shipped(outputs, indices, self.asked_at, arrived_at)

        try:
            claim = self.harness.time(iterations, warmup, schedule.opening_round(), Direct(), slot,
                                      keep_outputs=schedule.picks_calls, replay=schedule.replay)
        except Exception as exc:  # noqa: BLE001 - solution code may raise anything
            raise failure_of(exc) from None
        schedule.finished()
        return claim


class UncheckedSchedule:
    """A timing loop's schedule for a trusted callee (the reference): a fresh seed for every call, all of a
    session's planned calls in one round (where they are replayed, bench/replay.py: the warm-up calls, then rounds
    sized as a TimedSchedule sizes a solution's, on this process's clock: ``next_round_calls``), no call picked.

    The rounds are as long as a solution's so that the two sides of a speed-up are timed alike. Sized for the
    planned calls alone, the reference's were 64 calls (about 0.3 ms) where a solution's of 4 Ki-element calls were
    1,024 (4-8 ms), and its own code as a solution was recorded at 1.2-1.7x over it on a quiet H100 (about 1.0x
    with the GPU kept busy by another process): a short round after the device idled pays its start-up spread over
    few calls (docs/measurements.md, seventeenth session)."""

    picks_calls = False

    def __init__(self, ctx: EvaluationContext, purpose: tuple[object, ...], warmup: int, iterations: int,
                 trials: int = 1) -> None:
        self.ctx, self.issued = ctx, 0
        self.stream = ctx.seed_stream(*purpose)
        self.warmup, self.calls, self.planned = warmup, warmup + iterations, iterations * trials
        self.round_limit = max(1, self.calls)
        self.replay = replay_shape(ctx, warmup, 0.0, trials)
        self.trials = trials
        #: The replayed rounds so far on this process's clock (no exchange: the callee runs here), and the one
        #: under way: its calls and when it was handed out.
        self.rounds: list[Round] = []
        self.open_round, self.opened_at = 0, 0.0

    replayed = False

    def opening_round(self) -> list[int]:
        return self.next_round()

    def on_ran(self, count: int, replay: bool = False, sent: Sent | None = None) -> list[int]:
        if count == self.warmup and not replay:
            self.replay = None  # calls one at a time: the rest in one round
        if self.open_round:
            wall_ms = (time.perf_counter() - self.opened_at) * 1e3
            self.rounds.append(Round(count - self.open_round, self.open_round, wall_ms, 0.0, True))
            self.open_round = 0
        return []

    def on_shipped(self, outputs: Sequence[tuple[torch.Tensor, ...]], indices: Sequence[int], asked_at: float,
                   arrived_at: float) -> None:
        raise AssertionError("an unchecked schedule asks for no outputs")

    def asking(self) -> float:
        raise AssertionError("an unchecked schedule asks for no outputs")

    def arrived(self, sent: Sent | None = None) -> float:
        raise AssertionError("an unchecked schedule asks for no outputs")

    def keep(self, nbytes: int) -> torch.Tensor:
        raise AssertionError("an unchecked schedule asks for no outputs")

    def next_round(self) -> list[int]:
        first = self.issued
        if self.replay is None:
            size = self.round_limit
        elif first < self.warmup:
            size = self.warmup - first
        else:
            size = next_round_calls(self.replay, self.planned, self.rounds, 0.0, self.trials)
            self.open_round, self.opened_at = size, time.perf_counter()
        self.issued += size
        if self.replay is not None and first >= self.warmup:
            return replayed_round_seeds(self.stream, first, size)
        return [self.stream.seed(index) for index in range(first, self.issued)]

    def finished(self) -> None:
        pass

    def trial_samples(self, samples_ms: list[float]) -> list[list[float]]:
        """The samples of each trial the session timed: ``trials`` where its calls were replayed (a sample per
        round, judge/replayed.py ``trial_rounds``, less the harness's own device work per call, its draws, as a
        solution's replayed samples are: else a tiny reference would be charged for them, and the speed-up over it
        inflated), else one."""
        if self.replay is None:
            return [samples_ms]
        harness = self.ctx.replay_harness_ms(max((r.calls for r in self.rounds), default=self.replay.first_calls),
                                             ring_rows=0)
        net = less_harness(samples_ms, harness)
        return [[net[i] for i in rounds] for rounds in trial_rounds(len(net), self.trials)]

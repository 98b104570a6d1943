"""``RemoteSolution``: the judge's SolutionHandle for a solution that runs in a worker process."""

from __future__ import annotations

import time
from collections.abc import Sequence

from flashinfer_bench.bench.judge.clock import ClockFloor, HostWatch
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.judge.slots import SlotKeeper
from flashinfer_bench.bench.judge.solution import (
    CallResult,
    Schedule,
    SolutionFacts,
    SolutionHandle,
    call_slot_bytes,
    most_calls_shipped,
    read_call_result,
    read_outputs,
)
from flashinfer_bench.bench.wire.claims import TimingClaim
from flashinfer_bench.bench.wire.judge_worker import (
    Call,
    Called,
    More,
    Next,
    Ran,
    Ship,
    Shipped,
    Time,
    Timed,
    WorkerChannel,
    WorkerGone,
)


class RemoteSolution(SolutionHandle):
    def __init__(self, ctx: EvaluationContext, channel: WorkerChannel, slots: SlotKeeper,
                 floor: ClockFloor | None = None, worker_pid: int | None = None,
                 facts: SolutionFacts | None = None) -> None:
        super().__init__(ctx, facts)
        self.channel = channel
        self.slots = slots
        self.floor = floor
        #: The worker's process (the one that makes the calls), as the judge sees it; None where unknown.
        self.worker_pid = worker_pid

    def host_watch(self) -> HostWatch:
        return HostWatch(self.worker_pid) if self.worker_pid is not None else super().host_watch()

    def clock_floor(self) -> ClockFloor:
        """Measured by the judge in a worker before it loaded any solution (judge.py); None only for the handle
        that takes the measurement."""
        if self.floor is None:
            raise RuntimeError("timing needs the clock floor of the worker's device, which was not measured")
        return self.floor

    def call(self, seed: int, *, repeat: int = 1, rng_seed: int | None = None,
             return_inputs: Sequence[str] = ()) -> CallResult:
        slot = self.slots.at_least(call_slot_bytes(self.ctx, repeat, return_inputs))
        started = time.perf_counter()
        self.channel.send(Call(seed=seed, repeat=repeat, rng_seed=rng_seed, return_inputs=list(return_inputs)))
        called = self.channel.receive(Called)
        self.latest_call_ms = (time.perf_counter() - started) * 1e3 / max(repeat, 1)
        return read_call_result(self.ctx, slot, repeat, return_inputs, list(called.wrote))

    def time(self, iterations: int, warmup: int, schedule: Schedule) -> TimingClaim:
        per_call = call_slot_bytes(self.ctx, 1, ())
        slot = self.slots.at_least(per_call * most_calls_shipped(schedule))
        layouts = self.ctx.output_layouts
        replay = schedule.replay
        self.channel.send(Time(iterations=iterations, warmup=warmup, seeds=schedule.opening_round(),
                               replay_first_calls=replay.first_calls if replay else 0,
                               replay_most_calls=replay.most_calls if replay else 0,
                               replay_rounds=replay.rounds if replay else 0))
        while True:
            message = self.channel.receive(Ran, More, Timed)
            if isinstance(message, Timed):
                schedule.finished()
                return TimingClaim(list(message.samples_ms), message.method, list(message.setup_ms),
                                   message.cache_policy, message.cuda_graph)
            if isinstance(message, More):
                self.channel.send(Next(**Next.packed(schedule.next_round())))
                continue
            picked = schedule.on_ran(message.count, message.replay, message.sent)
            asked_at = schedule.asking() if picked else 0.0
            # With none picked the next round's seeds go with the answer (the worker would ask for them at once).
            self.channel.send(Ship(indices=picked, **Ship.packed(schedule.next_round() if message.more and not picked
                                                                 else [])))
            if picked:
                shipped = self.channel.receive(Shipped)
                arrived_at = schedule.arrived(shipped.sent)
                if list(shipped.indices) != picked:
                    raise WorkerGone(f"the worker broke the protocol: shipped calls {list(shipped.indices)[:8]}, "
                                     f"not {picked[:8]}")
                # Host copies only: the checks run after the loop, so the judge puts no work on the device
                # between the solution's calls.
                outputs, _ = read_outputs(slot, layouts, len(picked), "cpu", schedule.keep)
                schedule.on_shipped(outputs, picked, asked_at, arrived_at)

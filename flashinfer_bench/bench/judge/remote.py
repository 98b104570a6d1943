"""``RemoteSolution``: the judge's SolutionHandle for a solution that runs in a worker process."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import wait

from flashinfer_bench.bench.judge.clock import ClockFloor, HostWatch
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.judge.slots import SlotKeeper
from flashinfer_bench.bench.judge.solution import (
    CallArgs,
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
from flashinfer_bench.bench.wire.failures import CallFailed
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


@dataclass
class StartedCall:
    """A call the worker was asked for ahead of the ``call`` that takes it up (``RemoteSolution.start_call``)."""

    args: CallArgs
    #: When it was sent, and when its answer could be read (``time.perf_counter()``; None until then).
    sent_at: float
    arrived_at: float | None = None


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
        self.started: StartedCall | None = None

    def host_watch(self) -> HostWatch:
        return HostWatch(self.worker_pid) if self.worker_pid is not None else super().host_watch()

    def clock_floor(self) -> ClockFloor:
        """Measured by the judge in a worker before it loaded any solution (judge.py); None only for the handle
        that takes the measurement."""
        if self.floor is None:
            raise RuntimeError("timing needs the clock floor of the worker's device, which was not measured")
        return self.floor

    def start_call(self, args: CallArgs) -> None:
        """Have the worker make the call ``args`` asks for now, while the judge does work of its own (the reference's
        outputs for the same inputs: judge/main.py); the ``call`` that asks for the same takes up its answer, and any
        other request settles it first (``settle``). Its time on the judge's clock runs until its answer could be
        read, which a thread watches for: the judge reads it only once its own work is done. A call already started
        with the same ``args`` goes on."""
        if self.started is not None and self.started.args == args:
            return
        self.started = started = self._send(args)
        threading.Thread(target=self._watch, args=(started,), name="fib-call-watch", daemon=True).start()

    def _send(self, args: CallArgs) -> StartedCall:
        """Ask the worker for the call ``args`` says, in a buffer large enough for it (a call started before settled
        first)."""
        self.settle()
        self.slots.at_least(call_slot_bytes(self.ctx, args.repeat, args.return_inputs))
        started = StartedCall(args, time.perf_counter())
        self.channel.send(Call(seed=args.seed, repeat=args.repeat, rng_seed=args.rng_seed,
                               return_inputs=list(args.return_inputs)))
        return started

    def _watch(self, started: StartedCall) -> None:
        # Where the judge read the answer first, this returns at the channel's next message, stamping a call that
        # is done with.
        with contextlib.suppress(OSError, ValueError):  # the channel closed under it: nothing to read
            wait([self.channel.conn])
        started.arrived_at = time.perf_counter()

    def answered_within(self, ms: float) -> bool:
        started = self.started
        if started is None or started.arrived_at is not None:
            return True
        return bool(wait([self.channel.conn], max(0.0, started.sent_at + ms / 1e3 - time.perf_counter())))

    def settle(self) -> None:
        """A started call that no ``call`` took up: its answer is read and dropped (a failure of the solution's
        included: the call asked for instead meets it again). WorkerGone where the worker is gone."""
        started, self.started = self.started, None
        if started is not None:
            with contextlib.suppress(CallFailed):
                self.channel.receive(Called)

    def call(self, seed: int, *, repeat: int = 1, rng_seed: int | None = None,
             return_inputs: Sequence[str] = ()) -> CallResult:
        args = CallArgs(seed, repeat, rng_seed, tuple(return_inputs))
        started = self.started
        if started is not None and started.args == args:
            self.started = None
        else:
            started = self._send(args)
        slot = self.slots.at_least(call_slot_bytes(self.ctx, repeat, return_inputs))
        called = self.channel.receive(Called)
        read_at = time.perf_counter()
        # The watcher's stamp where it came first (the judge was busy as the answer arrived), else now.
        arrived = min(read_at, started.arrived_at or read_at)
        self.latest_call_ms = (arrived - started.sent_at) * 1e3 / max(repeat, 1)
        return read_call_result(self.ctx, slot, repeat, return_inputs, list(called.wrote))

    def time(self, iterations: int, warmup: int, schedule: Schedule) -> TimingClaim:
        self.settle()
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

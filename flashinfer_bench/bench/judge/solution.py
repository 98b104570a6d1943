"""The judge's handle on a solution: what evaluators may ask of it, wherever it runs.

An evaluator never holds the solution's function. It asks for calls by input seed and gets back private
tensors read from bytes (``slot``); it asks for a timing loop and steers it through a ``Schedule``. The judge gives evaluators a
``RemoteSolution`` (judge/remote.py), whose calls run in a sandboxed worker; trusted callees (the reference's
timing, tests of the evaluators' logic) use ``LocalSolution`` (judge/local.py), the same harness in-process.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from flashinfer_bench.bench.judge.arena import READ_MOST_BYTES, give_back, lease
from flashinfer_bench.bench.judge.clock import ClockFloor, HostWatch
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.replay import ReplayShape
from flashinfer_bench.bench.slot import Slot, TensorLayout, from_bytes, input_layouts, total_bytes
from flashinfer_bench.bench.wire.claims import TimingClaim
from flashinfer_bench.bench.wire.judge_worker import Sent


@dataclass(frozen=True)
class CallArgs:
    """What a ``SolutionHandle.call`` asks for: calls on the inputs drawn from ``seed``, ``repeat`` times (with
    ``rng_seed`` for a sampler's draws), and the inputs whose values the last call left to be sent back."""

    seed: int
    repeat: int = 1
    rng_seed: int | None = None
    return_inputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class CallResult:
    #: Per repeated call, its outputs in definition order.
    outputs: list[tuple[torch.Tensor, ...]]
    #: The values the last call left in the inputs asked for (in/out buffers).
    returned: dict[str, torch.Tensor]
    #: Inputs the solution's process says the last call wrote into (its own report: a diagnostic only).
    wrote: list[str]


class Schedule(Protocol):
    """The judge's side of a timing loop (judge/schedule.py TimedSchedule): seeds a round at a time, picks after
    each round. ``round_limit``: the most calls a round holds; ``picks_calls``: False where no call is ever picked
    (the worker then keeps no outputs); ``replay``: how the timed calls are to be replayed, None where they are not
    (bench/replay.py)."""

    round_limit: int
    picks_calls: bool
    replay: ReplayShape | None

    @property
    def replayed(self) -> bool:
        """Whether the worker said it replays the calls after its warm-up (the rounds from then on)."""

    def opening_round(self) -> list[int]: ...
    def on_ran(self, count: int, replay: bool = False, sent: Sent | None = None) -> list[int]: ...
    def asking(self) -> float: ...
    def arrived(self, sent: Sent | None = None) -> float: ...
    def keep(self, nbytes: int) -> torch.Tensor: ...
    def on_shipped(self, outputs: Sequence[tuple[torch.Tensor, ...]], indices: Sequence[int], asked_at: float,
                   arrived_at: float) -> None: ...
    def next_round(self) -> list[int]: ...
    def finished(self) -> None: ...


def most_calls_shipped(schedule: Schedule) -> int:
    """The most calls whose outputs one shipment carries: a round's, or a replayed round's picks."""
    return max(schedule.round_limit, schedule.replay.shipped_most_calls if schedule.replay is not None else 0)


def call_slot_bytes(ctx: EvaluationContext, repeat: int, return_inputs: Sequence[str]) -> int:
    return (repeat * total_bytes(ctx.output_layouts)
            + total_bytes(input_layouts(ctx.definition, ctx.workload, return_inputs)))


def read_outputs(slot: Slot, layouts: list[TensorLayout], calls: int, device: str,
                 into: Callable[[int], torch.Tensor] | None = None) -> tuple[list[tuple[torch.Tensor, ...]], int]:
    """The outputs of ``calls`` calls, one after the other from the buffer's start, as tensors on ``device``: views
    of one private copy of their bytes (``into``: Slot.read), a read per call cost the judge 0.12 ms each under
    cProfile on an H100 host; and where they end."""
    size = total_bytes(layouts)
    [raw], end = slot.read(0, [TensorLayout("outputs", torch.uint8, (calls * size,))], device, into)
    return [tuple(from_bytes(raw[k * size:(k + 1) * size], layouts)) for k in range(calls)], end


def read_call_result(ctx: EvaluationContext, slot: Slot, repeat: int, return_inputs: Sequence[str],
                     wrote: list[str]) -> CallResult:
    """A call's outputs and returned inputs, private copies on the evaluation's device. On a GPU, up to
    ``READ_MOST_BYTES``, they go through the judge's page-locked arena (judge/arena.py: its copies to the device
    wait for nothing but the link, which is done with them before this returns); a copy straight from the shared
    buffer, pageable memory, goes through the driver's staging at an eighth of the link's rate (128 MB: 21-25 ms
    against 2.8 ms on an H100, benchmarks/page_lock_costs.py, docs/measurements.md)."""
    through_arena = (torch.device(ctx.device).type == "cuda"
                     and call_slot_bytes(ctx, repeat, return_inputs) <= READ_MOST_BYTES)
    arena = lease() if through_arena else None
    into = arena.take if arena is not None else None
    try:
        outputs, offset = read_outputs(slot, ctx.output_layouts, repeat, ctx.device, into)
        returned_layouts = input_layouts(ctx.definition, ctx.workload, return_inputs)
        returned, _ = slot.read(offset, returned_layouts, ctx.device, into)
    finally:
        if arena is not None:
            give_back(arena)
    return CallResult(outputs, {layout.name: t for layout, t in zip(returned_layouts, returned, strict=True)}, wrote)


@dataclass
class SolutionFacts:
    """What the judge learnt of a solution's code over its items so far (judge/main.py keeps them by
    ``WorkItem.solution_key``, across workers)."""

    #: A timing session asked for its calls to be replayed and got them made one at a time (they could not be
    #: captured, or the worker would not): the next sessions are sized as ones made one at a time
    #: (evaluators/sessions.py).
    replays_refused: bool = False


class SolutionHandle(ABC):
    def __init__(self, ctx: EvaluationContext, facts: SolutionFacts | None = None) -> None:
        self.ctx = ctx
        self.facts = facts or SolutionFacts()
        #: How long the latest ``call`` took per call on the judge's clock, its work and output copies included
        #: (None before the first): what the timing sessions after it are sized on (evaluators/evaluator.py
        #: ``session_calls``).
        self.latest_call_ms: float | None = None

    def host_watch(self) -> HostWatch:
        """What tells the judge how much a busy host holds up this solution's calls (judge/clock.py)."""
        return HostWatch(None)

    @abstractmethod
    def clock_floor(self) -> ClockFloor:
        """What the harness costs per call where this solution runs, measured before its code was there."""

    def start_call(self, args: CallArgs) -> None:
        """Have the call ``args`` asks for made now, ahead of the ``call`` that asks for the same (judge/remote.py);
        where the callee runs in this process it is made when it is asked for."""
        return None

    def answered_within(self, ms: float) -> bool:
        """Whether the started call was answered within ``ms`` of its start, waiting until then at most: at once where
        calls are made when they are asked for."""
        return True

    @abstractmethod
    def call(self, seed: int, *, repeat: int = 1, rng_seed: int | None = None,
             return_inputs: Sequence[str] = ()) -> CallResult:
        """Calls on the inputs drawn from ``seed``; raises CallFailed when they cannot be judged."""

    @abstractmethod
    def time(self, iterations: int, warmup: int, schedule: Schedule) -> TimingClaim:
        """A timing loop steered by ``schedule``; raises CallFailed when the solution breaks it."""

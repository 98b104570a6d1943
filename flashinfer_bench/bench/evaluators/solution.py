"""The judge's handle on a solution: what evaluators may ask of it, wherever it runs.

An evaluator never holds the solution's function. It asks for calls by input seed and gets back private
tensors read from bytes (``slot``); it asks for a timing loop and steers it through a ``Schedule``. The runner
gives evaluators a ``RemoteSolution`` (runner/remote.py), whose calls run in a sandboxed process; tests of the
evaluators' logic use ``LocalSolution``, which runs the same harness in-process.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import torch

from flashinfer_bench.bench.evaluators.calling import Callee
from flashinfer_bench.bench.evaluators.context import EvaluationContext
from flashinfer_bench.bench.evaluators.harness import Harness, TimingClaim, failure_of
from flashinfer_bench.bench.evaluators.slot import Slot, input_layouts, output_layouts, total_bytes

if TYPE_CHECKING:
    from flashinfer_bench.bench.evaluators.timed import ClockFloor


@dataclass(frozen=True)
class CallResult:
    #: Per repeated call, its outputs in definition order.
    outputs: list[tuple[torch.Tensor, ...]]
    #: The values the last call left in the inputs asked for (in/out buffers).
    returned: dict[str, torch.Tensor]
    #: Inputs the solution's process says the last call wrote into (its own report: a diagnostic only).
    wrote: list[str]


class Schedule(Protocol):
    """The judge's side of a timing loop (see timed.TimedSchedule)."""

    def opening_seeds(self) -> tuple[int, int]: ...
    def on_done(self, index: int) -> bool: ...
    def on_shipped(self, index: int, outputs: tuple[torch.Tensor, ...], asked_at: float, arrived_at: float) -> None: ...
    def next_seed(self) -> int: ...


def call_slot_bytes(ctx: EvaluationContext, repeat: int, return_inputs: Sequence[str]) -> int:
    return (repeat * total_bytes(output_layouts(ctx.definition, ctx.workload))
            + total_bytes(input_layouts(ctx.definition, ctx.workload, return_inputs)))


def read_call_result(ctx: EvaluationContext, slot: Slot, repeat: int, return_inputs: Sequence[str],
                     wrote: list[str]) -> CallResult:
    layouts = output_layouts(ctx.definition, ctx.workload)
    outputs, offset = [], 0
    for _ in range(repeat):
        tensors, offset = slot.read(offset, layouts, ctx.device)
        outputs.append(tuple(tensors))
    returned_layouts = input_layouts(ctx.definition, ctx.workload, return_inputs)
    returned, _ = slot.read(offset, returned_layouts, ctx.device)
    return CallResult(outputs, {layout.name: t for layout, t in zip(returned_layouts, returned, strict=True)}, wrote)


class SolutionHandle(ABC):
    def __init__(self, ctx: EvaluationContext) -> None:
        self.ctx = ctx

    @abstractmethod
    def clock_floor(self) -> ClockFloor:
        """What the harness costs per call where this solution runs, measured before its code was there."""

    @abstractmethod
    def call(self, seed: int, *, repeat: int = 1, rng_seed: int | None = None,
             return_inputs: Sequence[str] = ()) -> CallResult:
        """Calls on the inputs drawn from ``seed``; raises CallFailed when they cannot be judged."""

    @abstractmethod
    def time(self, iterations: int, warmup: int, schedule: Schedule) -> TimingClaim:
        """A timing loop steered by ``schedule``; raises CallFailed when the solution breaks it."""


class LocalSolution(SolutionHandle):
    """The harness in this process: the evaluators' logic without a second process (tests, tools)."""

    def __init__(self, ctx: EvaluationContext, callee: Callee) -> None:
        super().__init__(ctx)
        self.harness = Harness(ctx.definition, ctx.workload, ctx.device, ctx.trace_set_root, callee)
        self._floor: ClockFloor | None = None

    def clock_floor(self) -> ClockFloor:
        """Measured once, on the zero-filling callee in this process."""
        if self._floor is None:
            from flashinfer_bench.bench.evaluators.timed import calibrate, zero_filling_callee

            self._floor = calibrate(self.ctx, LocalSolution(self.ctx, zero_filling_callee(self.ctx)))
        return self._floor

    def call(self, seed: int, *, repeat: int = 1, rng_seed: int | None = None,
             return_inputs: Sequence[str] = ()) -> CallResult:
        slot = Slot(bytearray(call_slot_bytes(self.ctx, repeat, return_inputs) or 1))
        try:
            wrote = self.harness.call(seed, slot, repeat=repeat, rng_seed=rng_seed, return_inputs=return_inputs)
        except Exception as exc:  # noqa: BLE001 - solution code may raise anything
            raise failure_of(exc) from None
        return read_call_result(self.ctx, slot, repeat, return_inputs, wrote)

    def time(self, iterations: int, warmup: int, schedule: Schedule) -> TimingClaim:
        slot = Slot(bytearray(call_slot_bytes(self.ctx, 1, ()) or 1))
        ctx = self.ctx

        class Direct:
            asked_at = 0.0
            ship = False

            def done(self, index: int) -> None:
                self.ship = schedule.on_done(index)
                self.asked_at = time.perf_counter()

            def ship_asked(self) -> bool:
                return self.ship

            def shipped(self, index: int) -> None:
                arrived_at = time.perf_counter()
                tensors, _ = slot.read(0, output_layouts(ctx.definition, ctx.workload), "cpu")
                schedule.on_shipped(index, tuple(tensors), self.asked_at, arrived_at)

            def next_seed(self) -> int:
                return schedule.next_seed()

        try:
            return self.harness.time(iterations, warmup, schedule.opening_seeds(), Direct(), slot)
        except Exception as exc:  # noqa: BLE001 - solution code may raise anything
            raise failure_of(exc) from None

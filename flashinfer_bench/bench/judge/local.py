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
from flashinfer_bench.bench.judge.solution import (
    CallResult,
    Schedule,
    SolutionHandle,
    call_slot_bytes,
    read_call_result,
)
from flashinfer_bench.bench.slot import Slot, output_layouts
from flashinfer_bench.bench.wire.claims import TimingClaim
from flashinfer_bench.bench.wire.failures import failure_of


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
            claim = self.harness.time(iterations, warmup, schedule.opening_seeds(), Direct(), slot)
        except Exception as exc:  # noqa: BLE001 - solution code may raise anything
            raise failure_of(exc) from None
        schedule.finished()
        return claim


class UncheckedSchedule:
    """A timing loop's schedule for a trusted callee (the reference): a fresh seed for every call, no call picked,
    no clock kept."""

    def __init__(self, ctx: EvaluationContext, purpose: tuple[object, ...]) -> None:
        self.ctx, self.purpose, self.issued = ctx, purpose, 0

    def _issue(self) -> int:
        self.issued += 1
        return self.ctx.seed_for(*self.purpose, self.issued - 1)

    def opening_seeds(self) -> tuple[int, int]:
        return self._issue(), self._issue()

    def on_done(self, index: int) -> bool:
        return False

    def on_shipped(self, index: int, outputs: tuple[torch.Tensor, ...], asked_at: float, arrived_at: float) -> None:
        raise AssertionError("an unchecked schedule asks for no outputs")

    def next_seed(self) -> int:
        return self._issue()

    def finished(self) -> None:
        pass

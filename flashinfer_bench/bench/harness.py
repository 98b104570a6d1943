"""The solution's side of an evaluation: draw the inputs from a seed, call the solution, put its outputs'
bytes in the judge's buffer, and run the timing loop with the judge deciding every step.

This code runs in the solution's process, so a solution can change any of it: nothing it reports is trusted
for a verdict. It is written for honest solutions (a clear INCORRECT_SHAPE rather than garbage bytes), and so
that a dishonest one gains nothing by changing it: the judge draws the same inputs from the same seed, reads
the outputs as bytes of the types it expects, and checks the timed calls it picks after they were made.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import torch

from flashinfer_bench.bench.calling import (
    Callee,
    OutputCountError,
    TimedCall,
    clone_inputs,
    invoke,
    modified_inputs,
    take_values,
)
from flashinfer_bench.bench.inputs import InputPlan
from flashinfer_bench.bench.slot import Slot, TensorLayout, output_layouts, output_mismatch
from flashinfer_bench.bench.wire.claims import TimingClaim
from flashinfer_bench.bench.wire.failures import CallFailed
from flashinfer_bench.data import Definition, EvaluationStatus, Workload


@contextmanager
def seeded(seed: int, device: str) -> Iterator[None]:
    """torch's default generators (the CPU's and ``device``'s) seeded inside, restored after."""
    devices = [torch.device(device).index or 0] if device.startswith("cuda") else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


class Exchange(Protocol):
    """The judge's side of the timing loop, as the harness sees it. Seeds come one call ahead: the answer to
    call i's ``done`` carries the seed of call i + 2, so that the harness draws call i + 1's inputs while the
    judge answers."""

    def done(self, index: int) -> None:
        """Call ``index`` has finished (the judge's answer is read by ``ship_asked``)."""

    def ship_asked(self) -> bool:
        """The judge's answer to the last ``done``: True asks for that call's outputs in the buffer."""

    def shipped(self, index: int) -> None:
        """The outputs of call ``index`` are in the buffer."""

    def next_seed(self) -> int:
        """The seed the judge's last answer carried: that of the call after the next one."""


@dataclass
class Harness:
    definition: Definition
    workload: Workload
    device: str
    trace_set_root: str | None
    callee: Callee

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
                offset = slot.write(offset, self.outputs(live))
        slot.write(offset, [live[names.index(name)] for name in return_inputs])
        return modified_inputs(names, pristine, live)

    def time(self, iterations: int, warmup: int, seeds: tuple[int, int], exchange: Exchange,
             slot: Slot) -> TimingClaim:
        """The timing loop: every call on fresh inputs (``seeds``: the first two calls'; the judge's answer to
        each call carries the seed of the call after the next), drawn outside the timed span, and after every
        call the judge may ask for its outputs."""
        from flashinfer_bench.testing import bench_gpu_time_detailed

        live = self.inputs(seeds[0])
        upcoming = seeds[1]
        timed = TimedCall(self.callee, self.definition, self.workload, live, self.device)
        setup_ms: list[float] = []
        begun = 0

        def before_each(_: int) -> None:
            nonlocal begun, upcoming
            if begun:
                exchange.done(begun - 1)
                drawn = self.inputs(upcoming)  # while the judge answers
                self._ship_if_asked(begun - 1, timed.latest, exchange, slot)
                upcoming = exchange.next_seed()
                take_values(live, drawn)
                if timed.has_setup:
                    elapsed = self._clocked(timed.set_up)
                    if begun >= warmup:
                        setup_ms.append(elapsed)
            begun += 1

        result = bench_gpu_time_detailed(timed.call, num_iters=iterations, dry_run_iters=warmup, device=self.device,
                                         before_each=before_each)
        exchange.done(begun - 1)
        self._ship_if_asked(begun - 1, timed.latest, exchange, slot)
        return TimingClaim([float(s) for s in result.samples_ms], result.method, setup_ms, result.cache_policy,
                           result.cuda_graph)

    def _clocked(self, step: Callable[[], None]) -> float:
        """Milliseconds ``step`` takes, the device work it queues included."""
        start = time.perf_counter()
        step()
        if self.device.startswith("cuda"):
            torch.cuda.synchronize(self.device)
        return (time.perf_counter() - start) * 1e3

    def _ship_if_asked(self, index: int, latest: Callable[[], tuple[Any, ...]], exchange: Exchange,
                       slot: Slot) -> None:
        """Call ``index`` was reported done (the timing API runs ``before_each`` once the previous call's work
        has finished, and returns once the last one's has); ship its outputs if the judge asks for them."""
        if exchange.ship_asked():
            try:
                outputs = latest()
            except OutputCountError as exc:
                raise CallFailed(EvaluationStatus.INCORRECT_SHAPE, str(exc)) from None
            mismatch = output_mismatch(outputs, self.layouts, self.device)
            if mismatch is not None:
                raise CallFailed(*mismatch)
            slot.write(0, outputs)
            exchange.shipped(index)

"""Timed calls replayed from a CUDA graph: a round's calls, each on fresh inputs drawn on the device, run back to
back with no host work between them, so that the round's wall time is the device's.

A round is one replay of a graph of as many calls as the round holds (one launch: between launches of replay
after replay the device would wait for the host, and on a busy host for a CPU). Each call draws its inputs from one device generator
(``InputPlan.draw_from``), makes the call, and copies its outputs' bytes into the next row of a ring on the
device, for the judge to ask for any. A replay seeded with ``seed`` gives its call at position ``k`` the inputs
``InputPlan.draw(DrawAt(seed, k))``: the generator moves by the same offset per draw, so the judge draws any one
call's inputs alone. The solution's host code runs only while the graph is captured; a replay is the device work
it queued then, which is what the judge's clock can bound (judge/replayed.py).

The timer is CUDA events around each replay, as for any CUDA graph (``bench_gpu_time`` with ``use_cuda_graph``):
a sample is a replay's time per call, the harness's own device work per call (the draws and the copies)
included; the judge takes that out by its own measure, a graph of calls with no call in it
(``harness_device_ms``).

A plan whose draws need the host (``InputPlan.replay_obstacle``), a callee with a setup (it runs per call, for the
values drawn), or a call that cannot be captured is timed one call at a time instead (harness.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from flashinfer_bench.bench.calling import take_values
from flashinfer_bench.bench.inputs import InputPlan
from flashinfer_bench.bench.slot import TensorLayout, from_bytes, raw_bytes, total_bytes
from flashinfer_bench.timing.graph import capture

#: How many replays, back to back, are timed of a graph of the harness's own work (``harness_device_ms``): the
#: cheapest counts (the first ones may run while the device's clocks rise).
HARNESS_REPLAYS = 8


@dataclass(frozen=True)
class ReplayShape:
    """How a session's timed calls are replayed (judge/replayed.py ``replay_shape`` decides): ``rounds`` rounds
    after the warm-up, each one replay of a graph of as many calls as the round holds: ``first_calls`` in the first
    (its graph captured before the warm-up ends), at most ``most_calls`` in any."""

    first_calls: int
    most_calls: int
    rounds: int


class ReplayedCalls:
    """A captured graph of ``calls`` calls of ``call`` (which calls with ``inputs``, a list whose tensors each
    call's fresh draw is swapped into); with ``outputs`` (the latest call's outputs, of ``layouts``), each call's
    outputs are copied into its row of a ring (``kept``)."""

    def __init__(self, plan: InputPlan, inputs: list[Any], call: Callable[[], None],
                 outputs: Callable[[], Sequence[torch.Tensor]] | None, layouts: Sequence[TensorLayout],
                 calls: int) -> None:
        device = torch.device(plan.device)
        self.calls, self.layouts = calls, list(layouts)
        self.generator = torch.Generator(device=device)
        #: One row per call: each output's bytes, one after the other.
        self.ring = torch.empty((calls if outputs is not None else 0, total_bytes(self.layouts)), dtype=torch.uint8,
                                device=device)
        self.row = torch.zeros(1, dtype=torch.int64, device=device)
        #: Events before and after the latest replay; ``done`` is waited on asleep (``wait``).
        self.start, self.end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.done = torch.cuda.Event(blocking=True)

        def step(_: int) -> None:
            # The seed matters only for draws that need the host, which a replayable plan has none of.
            take_values(inputs, plan.draw_from(self.generator, 0))
            call()
            if outputs is not None:
                raw = [raw_bytes(t) for t in outputs()]
                self.ring.index_copy_(0, self.row, torch.cat(raw).unsqueeze(0) if len(raw) > 1 else
                                      raw[0].unsqueeze(0))
                self.row.add_(1)

        self.graph = capture(step, calls, device, [self.generator])
        # The first replay of a graph uploads it to the device, which no timed round should pay for.
        self.run(0)
        self.wait()

    def run(self, seed: int) -> None:
        """Queue one replay (``queue``) with an event before and after it."""
        self.start.record()
        self.queue(seed)
        self.end.record()
        self.done.record()

    def queue(self, seed: int) -> None:
        """Queue one replay, its calls' inputs drawn from ``seed`` (``DrawAt(seed, k)``), their outputs in the
        ring's rows in order."""
        self.row.zero_()
        self.generator.manual_seed(seed)
        self.graph.replay()

    def wait(self) -> None:
        """Until the latest replay has ended, asleep: no CPU taken from a busy host while the device works."""
        self.done.synchronize()

    def replay_ms(self) -> float:
        """The latest replay's time per call (once it has ended)."""
        return self.start.elapsed_time(self.end) / self.calls

    def kept(self, row: int) -> tuple[torch.Tensor, ...]:
        """The outputs the ring holds in ``row`` (the replay's call of that index), as tensors of their layouts."""
        return tuple(from_bytes(self.ring[row], self.layouts))


def harness_device_ms(plan: InputPlan, layouts: list[TensorLayout], calls: int) -> float:
    """The device time per call of the harness's own work in a replayed round (a draw, a copy of outputs of these
    layouts into the ring), from the cheapest of ``HARNESS_REPLAYS`` replays of such a graph with no call in it,
    timed by the judge in its own process."""
    device = torch.device(plan.device)
    outputs = [torch.zeros(layout.shape, dtype=layout.dtype, device=device) for layout in layouts]
    replayed = ReplayedCalls(plan, plan.draw(0), lambda: None, lambda: outputs, layouts, calls)
    # Replays back to back, timed from the end of one to the end of the next: the host launches each while the
    # device runs the one before, so no interval holds a launch (a session's samples and windows hold theirs).
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(HARNESS_REPLAYS + 1)]
    for seed, mark in enumerate(marks):
        replayed.queue(seed)
        mark.record()
    marks[-1].synchronize()
    return min(before.elapsed_time(after) for before, after in itertools.pairwise(marks)) / calls

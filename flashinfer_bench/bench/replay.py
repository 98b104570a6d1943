"""Timed calls replayed from CUDA graphs: a round's calls, each on fresh inputs drawn on the device, run back to
back with no host work between them, so that the round's wall time is the device's.

A round of ``n`` calls replays graphs of at most ``GRAPH_MOST_CALLS`` calls, one after another to make ``n``
(``graph_sizes``), all queued at once: a replay's calls take the device longer than the host takes to queue the
next replay, so the device does not wait for the host between them. Capturing costs the host about a tenth of a
millisecond per call (the solution's Python and the harness's draws and copies, seen on an H100): graphs of whole
1,024-call rounds took the worker about 0.1 s an evaluation, more than a small kernel's timed calls took, and a
replay costs the device only 5-11 us beyond its calls (docs/measurements.md). Each call draws its inputs from one
device generator (``InputPlan.draw_from``), makes the call, and copies its outputs' bytes into a row of a ring on
the device (through a stage where a round replays its graph several times: ``ReplayedCalls``), for the judge to ask
for any. A round seeded with ``seed`` gives its call at position ``k`` the inputs
``InputPlan.draw(DrawAt(seed, k))``: the generator moves by the same offset per draw, replay after replay, so the
judge draws any one call's inputs alone. The solution's host code runs only while a graph is captured; a replay is
the device work it queued then, which is what the judge's clock can bound (judge/replayed.py).

The timer is CUDA events around each round, as for any CUDA graph (``bench_gpu_time`` with ``use_cuda_graph``): a
sample is a round's time per call, the harness's own device work per call (the draws and the copies) included;
the judge takes that out by its own measure, a graph of calls with no call in it (``harness_device_ms``).

A plan whose draws need the host (``InputPlan.replay_obstacle``), a callee with a setup (it runs per call, for the
values drawn), or a call that cannot be captured is timed one call at a time instead (harness.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from flashinfer_bench.bench.calling import take_values
from flashinfer_bench.bench.inputs import InputPlan
from flashinfer_bench.bench.slot import TensorLayout, output_layouts, raw_bytes, total_bytes
from flashinfer_bench.bench.waiting import poll_until
from flashinfer_bench.timing.graph import capture

#: A graph holds at most this many calls (``graph_sizes``). Capturing costs a worker about 1.7 ms a graph and
#: 0.1 ms a call: on an H100 a session's capture of 64 calls took 8.6 ms, of 32 calls 5.3-6.3 ms, while 1,024-call
#: rounds of 4 Ki-element calls took 3.52 us a call from 64-call graphs and 3.72 from 32-call ones
#: (benchmarks/capture_costs.py). With 32-call graphs the README's example had its honest torch sampler's claim not
#: believed in 2 of 4 runs, never in the runs recorded with 64 (docs/measurements.md, sixteenth session; the cause
#: was not found), so graphs stay at 64 calls.
GRAPH_MOST_CALLS = 64
#: A shipment of a replayed round's picked calls carries at most this many calls' outputs (the judge picks about 16
#: a round, judge/replayed.py: more than 64 has a chance of about 1e-18), so the buffer they go through holds this
#: many, not a whole ring's.
SHIPPED_MOST_CALLS = 64
#: A worker page-locks its buffer ahead for a shipment of this many calls' outputs (harness.py
#: ``Harness._time_replayed``), further only where a shipment needs it (slot.py ``Slot.write``): a round's picks are
#: about 16 (33 or more about once in 2,700 rounds), and locking for ``SHIPPED_MOST_CALLS`` calls of 2 MB
#: outputs took a worker 67.5 ms on an H100 host, for 32 calls 30.1 ms (benchmarks/worker_phases.py,
#: docs/measurements.md).
SHIPPED_RESERVED_CALLS = 32
#: A ring's rows are padded to a multiple of this many bytes (an int64), copied as words from the stage.
ROW_WORD = 8
#: A shipment's rows are gathered on the device into pieces of at most this many bytes (a row larger than that is
#: a piece of its own), each copied to the host at once (``ReplayedCalls.shipped``). Copied call by call and output
#: by output, a shipment of 4 Ki-512 Ki-element calls' outputs took 0.56-0.71 ms for 4-7 calls and 1.12-1.38 ms for
#: 16-19 (about 16 are picked a round) on an H100 host; gathered, 0.52-0.77 ms whatever the picks (medians,
#: benchmarks/replayed_rounds.py --shipments, docs/measurements.md, seventeenth session). The pieces bound the device
#: memory a shipment adds.
SHIPPED_PIECE_BYTES = 8 << 20
#: How many replays are timed of a graph of the harness's own work (``harness_device_ms``): the cheapest counts
#: (the first ones may run while the device's clocks rise).
HARNESS_REPLAYS = 8
#: While a round is not due yet (``ReplayedCalls.wait``) its end is looked for this often: a round may end sooner
#: than the least time per call so far makes it due (a first round's calls read up to twice the later ones').
ROUND_LOOK_S = 2e-4


def graph_sizes(calls: int) -> list[int]:
    """The calls of each graph a round of ``calls`` calls replays, in order: ``GRAPH_MOST_CALLS`` each (fewer where
    the round holds fewer), then one of what is left."""
    size = min(calls, GRAPH_MOST_CALLS)
    return [size] * (calls // size) + ([calls % size] if calls % size else [])


def in_place(row: torch.Tensor, layouts: Sequence[TensorLayout]) -> list[torch.Tensor | None]:
    """Each output's place in a ring's or stage's ``row`` (uint8), as a tensor of its layout a destination-passing
    call can write into; None where its bytes do not start at a multiple of its element size (after an output of
    an odd number of bytes), whose outputs are then copied there."""
    places: list[torch.Tensor | None] = []
    offset = 0
    for layout in layouts:
        piece = row[offset:offset + layout.nbytes]
        aligned = piece.data_ptr() % layout.element_size == 0
        places.append(piece.view(layout.dtype).view(layout.shape) if aligned else None)
        offset += layout.nbytes
    return places


def staged_ring(ring_rows: int) -> bool:
    """Whether a ring of ``ring_rows`` rows is filled through a stage (``ReplayedCalls``): where a round may be
    several replays of a graph, whose calls' rows are then worked out on the device for each replay."""
    return ring_rows > GRAPH_MOST_CALLS


@dataclass(frozen=True)
class ReplayShape:
    """How a session's timed calls are replayed (judge/replayed.py ``replay_shape`` decides): ``rounds`` rounds
    after the warm-up: ``first_calls`` calls in the first (its graph captured before the warm-up ends), at most
    ``most_calls`` in any."""

    first_calls: int
    most_calls: int
    rounds: int

    @property
    def captured_ahead(self) -> list[int]:
        """The calls of each graph captured before the warm-up ends (harness.py ``Harness._replays``): the first
        round's and the longest round's (one graph where they are the same)."""
        return sorted(set(graph_sizes(self.first_calls)) | {graph_sizes(self.most_calls)[0]})

    @property
    def shipped_most_calls(self) -> int:
        """The most calls whose outputs one shipment of a replayed round's picks carries."""
        return min(self.most_calls, SHIPPED_MOST_CALLS)

    @property
    def shipped_reserved_calls(self) -> int:
        """The calls whose outputs a worker's buffer is page-locked for ahead (``SHIPPED_RESERVED_CALLS``)."""
        return min(self.most_calls, SHIPPED_RESERVED_CALLS)


class ReplayedCalls:
    """Captured graphs of calls of ``call`` (which calls with ``inputs``, a list whose tensors each call's fresh
    draw is swapped into), one per graph size a round needs (``graph_sizes``); with ``outputs`` (the latest call's
    outputs, of ``layouts``), each call's outputs go into its row of a ring of ``ring_rows`` rows
    (``shipped``), shared by the graphs: a round of at most ``ring_rows`` calls keeps them all. A ring of more rows
    than a graph's calls is filled through a stage (``staged_ring``; ``staged`` says otherwise, for the judge's
    own measure of a worker's harness, ``harness_device_ms``). ``destinations``: the buffers a destination-passing
    call writes its outputs into, pointed at the call's row before each call (``in_place``), so that those outputs
    need no copy."""

    def __init__(self, plan: InputPlan, inputs: list[Any], call: Callable[[], None],
                 outputs: Callable[[], Sequence[torch.Tensor]] | None, layouts: Sequence[TensorLayout],
                 ring_rows: int, staged: bool | None = None, destinations: Sequence[torch.Tensor] = ()) -> None:
        self.device, self.layouts = torch.device(plan.device), list(layouts)
        self.generator = torch.Generator(device=self.device)
        self.row_bytes = total_bytes(self.layouts)
        rows = ring_rows if outputs is not None else 0
        #: One row per call: each output's bytes, one after the other, then up to ``ROW_WORD`` bytes of padding,
        #: so that whole rows are copied as words (``_step``).
        self.ring = torch.empty((rows, -(-max(self.row_bytes, 1) // ROW_WORD) * ROW_WORD), dtype=torch.uint8,
                                device=self.device)
        self.staged = staged_ring(rows) if staged is None else staged
        #: Where a graph's calls put their outputs (a row each, at a fixed place, a plain copy): the ring itself
        #: where every round is one replay, else a stage of a graph's rows, copied into the ring's next rows as
        #: the graph's last call ends. A copy into a row the device works out (the ring's, in every call) cost an
        #: H200 2.3 us a call at 16 KB outputs and 6.1 us at 2 MB, a plain one 1.1 and 1.9 us
        #: (benchmarks/replay_step_device.py, docs/measurements.md).
        self.stage = (torch.empty((min(rows, GRAPH_MOST_CALLS), self.ring.shape[1]), dtype=torch.uint8,
                                  device=self.device) if self.staged else self.ring)
        #: The ring's row of each call of the graph being replayed: its place in the graph plus the calls of the
        #: round's replays before it. A graph's last call moves them on, once per replay, not once per call (a
        #: kernel each); ``rewind`` sets them back for a round.
        self.first_rows = torch.arange(GRAPH_MOST_CALLS, dtype=torch.int64, device=self.device)
        self.rows = self.first_rows.clone()
        #: Events before and after the latest round; ``done`` is waited on (``wait``).
        self.start, self.end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.done = torch.cuda.Event(blocking=True)
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.round_calls = 0
        #: When the latest round was queued (``time.perf_counter``), and the least time per call of the rounds so
        #: far (ms; None before the first has ended): when the latest round is due (``wait``).
        self.queued_at, self.least_ms_per_call = 0.0, None
        #: What each call is made of (``_step``), kept as attributes, not in a closure over this object: a closure
        #: would make it a reference cycle, freed only by a garbage collection, whose finalizers (its graphs, ring
        #: and events) could then run in the middle of another harness's capture (timing/graph.py).
        self.plan, self.inputs, self.call, self.outputs = plan, inputs, call, outputs
        self.destinations = list(destinations) if outputs is not None else []

    def _step(self, k: int, size: int) -> None:
        """Call ``k`` of a graph of ``size`` calls: fresh inputs from the generator, the call, its outputs into
        its row of the stage (the last call's, the stage's rows into the ring's next ones)."""
        # The seed matters only for draws that need the host, which a replayable plan has none of.
        take_values(self.inputs, self.plan.draw_from(self.generator, 0))
        row = self.stage[k] if self.outputs is not None else None
        if row is not None and self.destinations:
            for destination, place in zip(self.destinations, in_place(row, self.layouts), strict=True):
                if place is not None:
                    destination.set_(place)
        self.call()
        if row is None:
            return
        offset = 0
        for layout, output in zip(self.layouts, self.outputs(), strict=True):
            raw, place = raw_bytes(output), row[offset:offset + layout.nbytes]
            if raw.numel() != layout.nbytes:  # copy_ would broadcast a smaller one
                raise ValueError(f"output '{layout.name}' has {raw.numel()} bytes, its layout {layout.nbytes}")
            if raw.data_ptr() != place.data_ptr():  # not written in place
                place.copy_(raw)
            offset += layout.nbytes
        if self.staged and k == size - 1:
            self.ring.view(torch.int64).index_copy_(0, self.rows[:size], self.stage[:size].view(torch.int64))
            self.rows.add_(size)

    def graph(self, size: int) -> torch.cuda.CUDAGraph:
        """The graph of ``size`` calls, captured when first needed (GraphCaptureFailed where it cannot be) and
        replayed once: a graph's first replay uploads it to the device, which no timed round should pay for."""
        if size not in self.graphs:
            self.rewind()  # the capture's warm-up call writes a row too
            graph = capture(lambda k: self._step(k, size), size, self.device, [self.generator])
            self.rewind()
            graph.replay()
            self.done.record()
            self.done.synchronize()
            self.graphs[size] = graph
        return self.graphs[size]

    def run(self, seed: int, calls: int) -> None:
        """Queue a round of ``calls`` calls, their inputs drawn from ``seed`` (``DrawAt(seed, k)``), their
        outputs in the ring's rows in order, with an event before and after it."""
        if len(self.ring) and calls > len(self.ring):
            raise ValueError(f"a round of {calls} calls, more than the {len(self.ring)} rows of its ring")
        graphs = [self.graph(size) for size in graph_sizes(calls)]
        self.queued_at = time.perf_counter()
        self.start.record()
        self.rewind()
        self.generator.manual_seed(seed)
        for graph in graphs:
            graph.replay()
        self.end.record()
        self.done.record()
        self.round_calls = calls

    def rewind(self) -> None:
        """The next call writes the ring's first row."""
        self.rows.copy_(self.first_rows)

    def wait(self) -> None:
        """Until the latest round has ended: asleep (no CPU taken from a busy host while the device works), and
        polling the device from shortly before the round is due at the least time per call so far (bench/waiting.py;
        asleep throughout in the first round, whose length is not known)."""
        least = self.least_ms_per_call
        if least is None or not poll_until(self._ended, self.queued_at + self.round_calls * least / 1e3):
            self.done.synchronize()
        per_call = self.replay_ms()
        self.least_ms_per_call = per_call if least is None else min(per_call, least)

    def _ended(self, timeout: float) -> bool:
        """Whether the latest round has ended, after sleeping up to ``timeout`` (``ROUND_LOOK_S`` at most) where
        it has not."""
        if self.done.query():
            return True
        if timeout > 0:
            time.sleep(min(timeout, ROUND_LOOK_S))
            return self.done.query()
        return False

    def replay_ms(self) -> float:
        """The latest round's time per call (once it has ended)."""
        return self.start.elapsed_time(self.end) / self.round_calls

    def shipped(self, rows: Sequence[int]) -> list[torch.Tensor]:
        """The outputs the ring holds in ``rows``, one row's bytes after another (as a shipment lays them out), in
        pieces of at most ``SHIPPED_PIECE_BYTES`` gathered on the device (one row where a row is larger)."""
        outputs = self.ring[:, :self.row_bytes]
        per_piece = max(1, SHIPPED_PIECE_BYTES // max(self.row_bytes, 1))
        pieces = []
        for first in range(0, len(rows), per_piece):
            group = list(rows[first:first + per_piece])
            pieces.append(outputs[group[0]] if len(group) == 1 else
                          outputs.index_select(0, torch.tensor(group, dtype=torch.int64).to(self.device)))
        return pieces


def harness_device_ms(plan: InputPlan, layouts: list[TensorLayout], calls: int, ring_rows: int,
                      destination_passing: bool) -> float:
    """The device time per call of the harness's own work in a replayed round of ``calls`` calls (a draw, a copy
    of outputs of these layouts into a ring of ``ring_rows`` rows, as the worker's: none without rows, nor for
    outputs a ``destination_passing`` call writes in place), from the cheapest of ``HARNESS_REPLAYS`` replays of
    the graph such a round replays with no call in it, timed by the judge in its own process."""
    device = torch.device(plan.device)
    outputs = [torch.zeros(layout.shape, dtype=layout.dtype, device=device) for layout in layouts]
    size = graph_sizes(calls)[0]
    replayed = ReplayedCalls(plan, plan.draw(0), lambda: None, (lambda: outputs) if ring_rows else None, layouts,
                             size, staged=staged_ring(ring_rows), destinations=outputs if destination_passing else ())
    graph = replayed.graph(size)
    # Queued back to back, each after its ring's row is reset: the host queues the next while the device runs the
    # one before, so no pair of events holds a launch (a round's replays follow each other the same way).
    marks = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
             for _ in range(HARNESS_REPLAYS)]
    for seed, (before, after) in enumerate(marks):
        replayed.rewind()
        replayed.generator.manual_seed(seed)
        before.record()
        graph.replay()
        after.record()
    marks[-1][1].synchronize()
    return min(before.elapsed_time(after) for before, after in marks) / size


#: What ``warm_up`` replays: two float32 inputs and one output of a few elements.
_WARM_DEFINITION = {"name": "warm_up", "op_type": "elementwise", "axes": {"n": {"type": "const", "value": 64}},
                    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "y": {"shape": ["n"], "dtype": "float32"}},
                    "outputs": {"out": {"shape": ["n"], "dtype": "float32"}}, "reference": "def run(x, y):\n    ..."}


def warm_up(device: str) -> None:
    """Capture and replay a tiny round of each kind (outputs copied through a stage into the ring; outputs written
    in place), so that the kernels every replayed round launches and CUDA's graph machinery are loaded in a judge
    before its first item, not in that item's sessions (CUDA loads a kernel's module on its first launch)."""
    from flashinfer_bench.data import Definition, Workload

    definition = Definition.model_validate(_WARM_DEFINITION)
    workload = Workload(uuid="warm_up", axes={}, inputs={})
    plan, layouts = InputPlan(definition, workload, device, None), output_layouts(definition, workload)
    for destination_passing in (False, True):
        _warm_round(plan, layouts, destination_passing)


def _warm_round(plan: InputPlan, layouts: list[TensorLayout], destination_passing: bool) -> None:
    """One tiny replayed round of a call that copies its first input into its output (``warm_up``)."""
    inputs = plan.draw(0)
    out = torch.zeros(layouts[0].shape, dtype=layouts[0].dtype, device=plan.device)
    replayed = ReplayedCalls(plan, inputs, lambda: out.copy_(inputs[0]), lambda: (out,), layouts,
                             2 * GRAPH_MOST_CALLS, destinations=(out,) if destination_passing else ())
    replayed.run(0, 4)
    replayed.wait()
    replayed.replay_ms()

"""What one evaluation is about, in one frozen object: the definition, the workload, the resolved config, the
device, where blobs live, and the run's secret.

The secret is drawn by the parent at the start of a run and reaches only judge processes. Every input seed is
derived from it (``seed_for``), so a solution sees the seed of a call only when that call is made and cannot
work out the inputs of the next one: a cache keyed on input values never sees the same inputs twice, and a
solution cannot tell a checked call from an unchecked one in advance.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.inputs import InputKey, InputPlan
from flashinfer_bench.bench.judge.phases import DRAWS, phase
from flashinfer_bench.bench.seeds import SeedStream, stable_seed
from flashinfer_bench.bench.slot import TensorLayout, output_layouts
from flashinfer_bench.data import Definition, Workload

#: ``EvaluationContext.replay_harness_ms`` by (definition, workload, trace set, device, copies, staged, outputs
#: written in place, calls per graph).
_HARNESS_MS: dict[tuple[str, str, str | None, str, bool, bool, bool, int], float] = {}


@dataclass(frozen=True)
class EvaluationContext:
    definition: Definition
    workload: Workload
    config: ResolvedEvalConfig
    device: str
    trace_set_root: str | None
    secret: int
    #: The solution is called with its outputs' buffers (its spec's ``destination_passing_style``), which a
    #: replayed round points at its ring's rows (bench/replay.py ``ReplayedCalls``), so no copy of them is made.
    destination_passing: bool = False

    def seed_for(self, *purpose: object) -> int:
        """The input seed for ``purpose`` (e.g. ``("trial", 0)``), unpredictable without the secret."""
        return stable_seed(*self._seed_prefix, *purpose)

    def seed_stream(self, *purpose: object) -> SeedStream:
        """``seed_for(*purpose, *rest)`` for many ``rest``s (a timing session's calls), computed faster."""
        return SeedStream(*self._seed_prefix, *purpose)

    @property
    def _seed_prefix(self) -> tuple[object, ...]:
        """What every seed of this evaluation derives from: the run's secret and the (definition, workload)."""
        return self.secret, self.definition.name, self.workload.uuid

    def trial_seed(self, trial: int) -> int:
        return self.seed_for("trial", trial)

    @cached_property
    def input_plan(self) -> InputPlan:
        return InputPlan(self.definition, self.workload, self.device, self.trace_set_root)

    @cached_property
    def output_layouts(self) -> list[TensorLayout]:
        """The outputs' layouts (``slot.output_layouts``), bound once: the judge reads and sizes them often."""
        return output_layouts(self.definition, self.workload)

    def inputs(self, key: InputKey) -> list[Any]:
        """The inputs drawn from ``key``: the same tensors the solution's process draws from it."""
        with phase(DRAWS):
            return self.input_plan.draw(key)

    def replay_harness_ms(self, calls: int, ring_rows: int) -> float:
        """The harness's own device time per call in a replayed round of ``calls`` calls whose outputs go into a
        ring of ``ring_rows`` rows, as a solution's do (none for a reference's: ``replay.harness_device_ms``; in
        place for a ``destination_passing`` solution's), timed by the judge once per workload, graph size and kind
        of ring (the same for every solution of the workload of that calling convention, so this judge process keeps
        it): each replay of a graph costs the device 5-11 us beyond its calls (an H100,
        benchmarks/harness_graph_sizes.py), whose share per call depends on the graph's size."""
        from flashinfer_bench.bench.replay import graph_sizes, harness_device_ms, staged_ring

        size, in_place = graph_sizes(calls)[0], ring_rows > 0 and self.destination_passing
        key = (self.definition.name, self.workload.uuid, self.trace_set_root, self.device, ring_rows > 0,
               staged_ring(ring_rows), in_place, size)
        if key not in _HARNESS_MS:
            _HARNESS_MS[key] = harness_device_ms(self.input_plan, self.output_layouts, size, ring_rows, in_place)
        return _HARNESS_MS[key]

    @property
    def input_names(self) -> list[str]:
        return list(self.definition.inputs)

    @property
    def output_names(self) -> list[str]:
        return list(self.definition.outputs)

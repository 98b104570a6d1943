"""How a run's evaluations are grouped for the devices.

A group is one definition's selected solutions over a block of its workloads, in solution-major order
(every workload of the block for the first solution, then for the next); each item names the block
(``WorkItem.group``). A group goes to one device, whose judge draws each workload's inputs and runs and times its
reference once, all of the block's before the first solution is loaded, and keeps those baselines for the group,
while each solution runs in a worker of its own: a worker never runs code of two solutions
(docs/security.md), and solution-major order needs one worker per solution per group, not one per item.
A block holds at most ``MAX_WORKLOADS_PER_GROUP`` workloads whose baselines together fit what a judge keeps
(``BASELINE_BYTES_KEPT``); a workload whose baseline alone is larger is a block of its own. When there are
fewer groups than devices, the largest blocks are halved until every device can have one (each half costs
every solution one more worker start and the judge of each half its own baselines, so no further).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace

from flashinfer_bench.bench.slot import input_layouts, output_layouts, total_bytes
from flashinfer_bench.bench.wire.parent_judge import BASELINE_BYTES_KEPT, MAX_WORKLOADS_PER_GROUP, WorkItem
from flashinfer_bench.data import Definition, Workload

#: Bytes per element assumed for a tensor whose element type is chosen at run time (FlashInfer's "unknown"): the
#: widest there is, so that the estimate stays an upper bound.
OPEN_DTYPE_ITEMSIZE = 8


def baseline_bytes(definition: Definition, workload: Workload, num_trials: int) -> int:
    """What the judge holds for one workload: every trial's inputs and the reference's outputs."""
    fixed = [name for name, spec in definition.inputs.items() if not spec.is_open]
    layouts = input_layouts(definition, workload, fixed) + output_layouts(definition, workload)
    axes = definition.bind_axes(workload.axes)
    open_bytes = sum(math.prod(definition.shape_of(spec, axes) or ()) * OPEN_DTYPE_ITEMSIZE
                     for spec in definition.inputs.values() if spec.is_open)
    return num_trials * (total_bytes(layouts) + open_bytes)


def workload_blocks(definition: Definition, workloads: Sequence[Workload], num_trials: int,
                    budget: int = BASELINE_BYTES_KEPT, limit: int = MAX_WORKLOADS_PER_GROUP) -> list[list[Workload]]:
    """``workloads`` in order, cut into blocks of at most ``limit`` whose baselines fit ``budget`` together."""
    blocks: list[list[Workload]] = []
    block: list[Workload] = []
    held = 0
    for workload in workloads:
        size = baseline_bytes(definition, workload, num_trials)
        if block and (len(block) >= limit or held + size > budget):
            blocks.append(block)
            block, held = [], 0
        block.append(workload)
        held += size
    if block:
        blocks.append(block)
    return blocks


def spread(blocks: list[tuple[Definition, list[Workload]]], devices: int) -> list[tuple[Definition, list[Workload]]]:
    """Halve the largest blocks until there are ``devices`` of them or none has two workloads."""
    blocks = list(blocks)
    while len(blocks) < devices:
        largest = max(range(len(blocks)), key=lambda i: len(blocks[i][1]), default=None)
        if largest is None or len(blocks[largest][1]) < 2:
            break
        definition, workloads = blocks.pop(largest)
        half = (len(workloads) + 1) // 2
        blocks[largest:largest] = [(definition, workloads[:half]), (definition, workloads[half:])]
    return blocks


def group_items(items: Iterable[WorkItem], devices: int = 1) -> list[list[WorkItem]]:
    """The items, in groups as the module docstring says, for ``devices`` devices; definitions, solutions and
    workloads keep the order they first appear in."""
    by_definition: dict[str, dict[tuple[str, str], WorkItem]] = {}
    for item in items:
        by_definition.setdefault(item.definition.name, {})[(item.solution.name, item.workload.uuid)] = item
    blocks: list[tuple[Definition, list[Workload]]] = []
    for definition_items in by_definition.values():
        first = next(iter(definition_items.values()))
        workloads = list({item.workload.uuid: item.workload for item in definition_items.values()}.values())
        blocks += [(first.definition, block)
                   for block in workload_blocks(first.definition, workloads, first.config.num_trials)]
    groups: list[list[WorkItem]] = []
    for definition, block in spread(blocks, devices):
        definition_items = by_definition[definition.name]
        solutions = dict.fromkeys(solution for solution, _ in definition_items)
        group = tuple(block)
        groups.append([replace(definition_items[key], group=group) for solution in solutions for workload in block
                       if (key := (solution, workload.uuid)) in definition_items])
    return groups

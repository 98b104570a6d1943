"""Materialise a workload's inputs on a device: safetensors blobs, scalars, and fresh random draws per trial.

Random inputs come from a generator seeded with one integer: the judge and the worker that calls the solution draw
exactly the same tensors from the same seed, so the judge can hand the worker a seed instead of the tensors and
still know what the solution was given. The judge derives seeds from a secret of the run (see
``judge/context.py``), so no solution can predict the inputs of a later call.

Inputs read from safetensors blobs vary with the seed too, where they may: each axis of a floating-point blob
tensor is reordered by a seeded permutation (see ``blob_order_axes``), so that no two calls see the same values;
integer and bool blobs (page tables, offsets, indices) and any input a constraint names stay exactly what the blob
holds. docs/security.md says why this way and what remains.

A definition with an ``init`` (FlashInfer's input generator, see ``definition_code``) draws from it every input
its workload does not give as a scalar or a blob, seeded with the same seed, so judge and worker agree there too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import torch

from flashinfer_bench.bench.definition_code import InitInputs, run_init
from flashinfer_bench.bench.seeds import stable_seed
from flashinfer_bench.data import Definition, DType, SafetensorsInput, ScalarInput, TensorSpec, Workload
from flashinfer_bench.data.workload_check import read_blob_tensor

#: Random integer inputs are uniform in this half-open range; index-like inputs should be given explicitly.
RANDOM_INT_RANGE = (0, 64)
_DRAWN_DIRECTLY = frozenset({DType.FLOAT32, DType.FLOAT16, DType.BFLOAT16})


def holds_floats(spec: TensorSpec, value: Any) -> bool:
    """Whether an input or output holds floating-point values: as its dtype says, or for a dtype FlashInfer left
    open (``unknown``), as the tensor itself is (and never for a value that is not a tensor)."""
    if spec.is_open:
        return isinstance(value, torch.Tensor) and value.is_floating_point()
    return DType(spec.dtype).is_floating


def _random_tensor(spec: TensorSpec, shape: tuple[int, ...], name: str, definition: Definition,
                   device: torch.device, generator: torch.Generator) -> torch.Tensor:
    dtype = DType(spec.dtype)
    if dtype.is_floating and dtype is not DType.FLOAT4_E2M1:
        if definition.op_type == "sampling" and name == "probs":
            values = torch.randn(shape, dtype=torch.float32, device=device, generator=generator)
            return torch.softmax(values, dim=-1).to(dtype.to_torch())
        # Drawn in the input's own type (float8 through bfloat16), not in float32 and then cast: for the
        # gigabyte-sized weights of some definitions that halves the time and the transient memory.
        drawn = dtype.to_torch() if dtype in _DRAWN_DIRECTLY else torch.bfloat16
        return torch.randn(shape, dtype=drawn, device=device, generator=generator).to(dtype.to_torch())
    if dtype is DType.FLOAT4_E2M1:
        packed = torch.randint(0, 256, shape, dtype=torch.uint8, device=device, generator=generator)
        return packed.view(dtype.to_torch())
    if dtype is DType.BOOL:
        return torch.randint(0, 2, shape, device=device, generator=generator).bool()
    low, high = RANDOM_INT_RANGE
    return torch.randint(low, high, shape, dtype=dtype.to_torch(), device=device, generator=generator)


@dataclass(frozen=True)
class DrawAt:
    """The inputs of the call at ``position`` of a round replayed from a CUDA graph (bench/replay.py): the
    ``position``-th draw, one after the other, of a device generator seeded with ``seed``. A replayed round draws
    all its calls' inputs on the device from one seed, with no host work between them; the judge draws any one of
    them alone by moving the generator to where that draw began (``InputPlan.offset_per_draw``)."""

    seed: int
    position: int


#: What a call's inputs are drawn from: a seed of their own, or their place in a replayed round.
InputKey = int | DrawAt


#: Blob tensors read from disk, by (file, key, device): a worker drawing fresh inputs for every timed call reads
#: each blob once.
BlobCache = dict[tuple[str, str, str], torch.Tensor]


def blob_order_axes(spec: TensorSpec, shape: tuple[int, ...] | None, name: str,
                    definition: Definition) -> tuple[int, ...]:
    """The axes along which a blob input is reordered for each draw: every axis longer than one of a
    floating-point tensor; none for an integer or bool tensor (its values are structure) or an input a
    constraint names (the definition says its values matter). An input of an open dtype (FlashInfer's
    ``unknown``: index arrays chosen at plan time) is taken as structure too."""
    if spec.is_open or not DType(spec.dtype).is_floating or shape is None:
        return ()
    if any(name in constraint.names for constraint in definition.parsed_constraints):
        return ()
    return tuple(axis for axis, length in enumerate(shape) if length > 1)


def reorder(tensor: torch.Tensor, axes: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """A new tensor: ``tensor`` with each of ``axes`` (at least one) reordered by its own permutation drawn from
    ``generator``. Values move together along the other axes: every row keeps its values, in another place and
    order (a row of probabilities still sums to one), and no value is made or lost."""
    moved = tensor.view(torch.uint8) if tensor.element_size() == 1 else tensor  # float8, packed float4: bytes
    for axis in axes:
        moved = moved.index_select(axis, torch.randperm(tensor.shape[axis], generator=generator,
                                                        device=tensor.device))
    return moved.view(tensor.dtype)


#: Each tensor drawn in a shared buffer starts at a multiple of this many bytes (what vectorised kernels assume).
DRAWN_ALIGNMENT_BYTES = 256


def _shared_draw_dtype(spec: TensorSpec, name: str, definition: Definition) -> torch.dtype | None:
    """The dtype in which this input is drawn together with the others of that dtype (one kernel per dtype and
    call), or None for an input drawn on its own (sampling probabilities, float4, bool)."""
    dtype = DType(spec.dtype)
    if dtype is DType.FLOAT4_E2M1 or dtype is DType.BOOL or (definition.op_type == "sampling" and name == "probs"):
        return None
    if dtype.is_floating:
        return dtype.to_torch() if dtype in _DRAWN_DIRECTLY else torch.bfloat16
    return dtype.to_torch()


class InputPlan:
    """How to draw one workload's inputs on a device, worked out once: axes bound, shapes known, blobs read once,
    and only the constraints that read drawn values checked per draw (the others hold for every draw, and
    ``data.workload_check`` checked them before the workload was handed out).

    A draw launches as few kernels as it can, since the worker draws fresh inputs for every timed call (each
    launch costs the host time and CUPTI records): the tensors drawn in one dtype are slices of one buffer drawn
    at once, and scalars are drawn on the host. The judge and the worker each hold one per workload and draw
    every call's inputs through it, so both get the same values from the same seed."""

    def __init__(self, definition: Definition, workload: Workload, device: str, root: str | Path | None) -> None:
        self.definition = definition
        self.device = device
        self.root = root
        self.axes = definition.bind_axes(workload.axes)
        self.sources = [(name, spec, workload.inputs.get(name), definition.shape_of(spec, self.axes))
                        for name, spec in definition.inputs.items()]
        #: Inputs the definition's ``init`` makes (those the workload does not give), and which of them init
        #: gave at plan time in the latest draw (layout inputs).
        self.from_init = _made_by_init(definition, workload)
        self.layout: frozenset[str] = frozenset()
        drawn = {name for name, _, source, _ in self.sources if source is None}
        self.value_constraints = [c for c in definition.parsed_constraints if c.names & drawn]
        #: input index -> the axes along which that blob input is reordered for each draw
        self.blob_orders = {index: axes for index, (name, spec, source, shape) in enumerate(self.sources)
                            if isinstance(source, SafetensorsInput)
                            and (axes := blob_order_axes(spec, shape, name, definition))}
        #: dtype -> [(input index, first element, shape)], and the elements of each shared buffer.
        self.shared: dict[torch.dtype, list[tuple[int, int, tuple[int, ...]]]] = {}
        self.shared_sizes: dict[torch.dtype, int] = {}
        for index, (name, spec, source, shape) in enumerate(self.sources):
            random = source is None and shape is not None and name not in self.from_init
            dtype = _shared_draw_dtype(spec, name, definition) if random else None
            if dtype is not None:
                per_alignment = max(1, DRAWN_ALIGNMENT_BYTES // torch.empty((), dtype=dtype).element_size())
                start = -(-self.shared_sizes.get(dtype, 0) // per_alignment) * per_alignment
                self.shared.setdefault(dtype, []).append((index, start, shape))
                self.shared_sizes[dtype] = start + math.prod(shape)
        #: The shared draws as ``draw`` makes them, worked out here so that a draw is seeding, one kernel per
        #: dtype and a view per input (the worker draws for every timed call): per dtype, its size, whether it
        #: is drawn as floats, and per input its index, shape, strides, first element and the dtype it is cast
        #: to (None: drawn in its own).
        self._shared_draws = [
            (dtype, self.shared_sizes[dtype], dtype.is_floating_point,
             [(index, shape, _contiguous_strides(shape), start, _cast_to(self.sources[index][1], dtype))
              for index, start, shape in members])
            for dtype, members in self.shared.items()]
        #: The inputs not drawn in a shared buffer, by index.
        in_shared = {index for members in self.shared.values() for index, _, _ in members}
        self._rest = [index for index in range(len(self.sources)) if index not in in_shared]
        self._torch_device = torch.device(device)
        self.blobs: BlobCache = {}
        self._generators: dict[str, torch.Generator] = {}
        #: Blob orders come from a generator of their own, so that they leave every other input's draw as it was.
        self._orders: torch.Generator | None = None

    def generator(self, device: str, seed: int) -> torch.Generator:
        if device not in self._generators:
            self._generators[device] = torch.Generator(device=torch.device(device))
        return self._generators[device].manual_seed(seed)

    def _order_generator(self, seed: int, name: str) -> torch.Generator:
        """The generator of one blob input's orders: its own stream, so that no two inputs share a permutation."""
        if self._orders is None:
            self._orders = torch.Generator(device=torch.device(self.device))
        return self._orders.manual_seed(stable_seed(seed, "blob order", name))

    def _init_inputs(self, seed: int) -> InitInputs:
        """The definition's ``init`` run for this workload's axes; its tensors must show the workload's axes."""
        made = run_init(self.definition, self.axes, seed, self.device)
        differ = {axis: (made.axes[axis], length) for axis, length in self.axes.items()
                  if axis in made.axes and made.axes[axis] != length}
        if differ:
            raise ValueError("the definition's init made inputs whose shapes disagree with the workload's axes: "
                             + ", ".join(f"{axis} is {ours} in them, {theirs} in the workload"
                                         for axis, (ours, theirs) in differ.items()))
        self.layout = made.layout
        return made

    @cached_property
    def replay_obstacle(self) -> str | None:
        """Why this plan's draws cannot be replayed from a CUDA graph (bench/replay.py), or None where they can:
        every value a graph replays must come from the device generator, with nothing worked out on the host per
        draw and nothing read back from the device."""
        if not self.device.startswith("cuda"):
            return "inputs are not drawn on a CUDA device"
        if self.from_init:
            return "the definition's init draws the inputs"
        if self.blob_orders:
            return "blob inputs are reordered for each draw"
        if self.value_constraints:
            return "constraints on drawn values are checked for each draw"
        if any(source is None and shape is None for _, _, source, shape in self.sources):
            return "scalar inputs are drawn on the host"
        return None

    @cached_property
    def offset_per_draw(self) -> int:
        """How far one draw moves a device generator (the same for every draw of the plan: shapes are fixed), so
        that the draw at a round's position ``k`` starts at ``k`` times this (``DrawAt``)."""
        generator = torch.Generator(device=self._torch_device)
        generator.manual_seed(0)
        self.draw_from(generator, 0)
        return generator.get_offset()

    def draw(self, key: InputKey) -> list[Any]:
        """The definition's inputs, in order, drawn from ``key``: a seed, or a replayed round's seed and the
        call's place in it (``DrawAt``; blob tensors are private copies)."""
        if isinstance(key, DrawAt):
            generator = self.generator(self.device, key.seed)
            generator.set_offset(key.position * self.offset_per_draw)
            return self.draw_from(generator, key.seed)
        return self.draw_from(self.generator(self.device, key), key)

    def draw_from(self, generator: torch.Generator, seed: int) -> list[Any]:
        """The definition's inputs, in order, drawn on the device from ``generator`` where it stands (from
        ``seed`` where ``init``, blob orders or host scalars need a seed of their own)."""
        definition, torch_device = self.definition, self._torch_device
        values: list[Any] = [None] * len(self.sources)
        for dtype, size, floating, members in self._shared_draws:
            if floating:
                buffer = torch.randn(size, dtype=dtype, device=torch_device, generator=generator)
            else:
                buffer = torch.randint(*RANDOM_INT_RANGE, (size,), dtype=dtype, device=torch_device,
                                       generator=generator)
            for index, shape, strides, start, cast in members:
                value = buffer.as_strided(shape, strides, start)
                values[index] = value if cast is None else value.to(cast)
        made = self._init_inputs(seed) if self.from_init else None
        scalars: torch.Generator | None = None
        for index in self._rest:
            name, spec, source, shape = self.sources[index]
            if made is not None and name in self.from_init:
                values[index] = made.values.get(name)
            elif isinstance(source, ScalarInput):
                values[index] = source.value
            elif isinstance(source, SafetensorsInput):
                stored = _blob_tensor(source, name, spec, shape, self.root, self.device, self.blobs)
                axes = self.blob_orders.get(index)
                values[index] = reorder(stored, axes, self._order_generator(seed, name)) if axes else stored.clone()
            elif shape is None:
                scalars = scalars or self.generator("cpu", stable_seed(seed, "scalars"))
                values[index] = _random_tensor(spec, (), name, definition, torch.device("cpu"), scalars).item()
            else:
                values[index] = _random_tensor(spec, shape, name, definition, torch_device, generator)
        if self.value_constraints:
            named = dict(zip(definition.inputs, values, strict=True))
            violations = definition.constraint_violations(self.axes, named, self.value_constraints)
            if violations:
                raise ValueError("the drawn inputs break the definition's constraints (give these inputs in a "
                                 "blob): " + "; ".join(violations))
        return values


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def _cast_to(spec: TensorSpec, drawn: torch.dtype) -> torch.dtype | None:
    """The dtype an input drawn in ``drawn`` is cast to, or None where it is drawn in its own."""
    wanted = DType(spec.dtype).to_torch()
    return None if wanted == drawn else wanted


def _made_by_init(definition: Definition, workload: Workload) -> frozenset[str]:
    """The inputs ``init`` makes for this workload: those it does not give as a scalar or a blob, when the
    definition has an ``init``. Without one, an input whose dtype names no element type cannot be drawn."""
    left = [name for name in definition.inputs if not isinstance(workload.inputs.get(name), ScalarInput |
                                                                   SafetensorsInput)]
    if definition.init is not None:
        return frozenset(left)
    open_types = [f"'{name}' ({definition.inputs[name].dtype.value})" for name in left
                  if definition.inputs[name].is_open]
    if open_types:
        raise ValueError(f"inputs {', '.join(open_types)} name no element type and the definition has no init: "
                         "the workload must give them (as scalars or blobs)")
    return frozenset()


def generate_inputs(definition: Definition, workload: Workload, seed: int, device: str,
                    root: str | Path | None) -> list[Any]:
    """The definition's inputs, in order, drawn from ``seed`` (one draw of a fresh ``InputPlan``)."""
    return InputPlan(definition, workload, device, root).draw(seed)


def _blob_tensor(source: SafetensorsInput, name: str, spec: TensorSpec, shape: tuple[int, ...] | None,
                 root: str | Path | None, device: str, blobs: BlobCache) -> torch.Tensor:
    """The blob's tensor on ``device``, after the same checks the parent made (``data.workload_check``), read
    once into ``blobs``: the tensor kept there, which a caller copies before handing it out."""
    key = (str(source.path), source.tensor_key, device)
    if key not in blobs:
        tensor, problem = read_blob_tensor(source, spec.dtype, shape, root)
        if problem is not None:
            raise ValueError(f"input '{name}': {problem}")
        blobs[key] = tensor.to(device)
    return blobs[key]


def allocate_outputs(definition: Definition, workload: Workload, device: str) -> list[torch.Tensor]:
    """Output buffers for a destination-passing call, poisoned so that an unwritten element is caught."""
    axes = definition.bind_axes(workload.axes)
    outputs = []
    for spec in definition.outputs.values():
        dtype = DType(spec.dtype).to_torch()
        tensor = torch.empty(definition.shape_of(spec, axes) or (), dtype=dtype, device=device)
        if DType(spec.dtype).is_floating and DType(spec.dtype) is not DType.FLOAT4_E2M1:
            tensor.fill_(float("nan"))
        elif DType(spec.dtype) is DType.BOOL:
            tensor.fill_(True)
        elif DType(spec.dtype) is not DType.FLOAT4_E2M1:
            tensor.fill_(torch.iinfo(dtype).min)
        outputs.append(tensor)
    return outputs

"""Materialise a workload's inputs on a device: safetensors blobs, scalars, and fresh random draws per trial.

Random inputs come from a generator seeded with one integer: the judge and the worker that calls the solution draw
exactly the same tensors from the same seed, so the judge can hand the worker a seed instead of the tensors and
still know what the solution was given. The judge derives seeds from a secret of the run (see
``evaluators.context``), so no solution can predict the inputs of a later call.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import torch

from flashinfer_bench.data import Definition, DType, SafetensorsInput, ScalarInput, TensorSpec, Workload
from flashinfer_bench.data.workload_check import read_blob_tensor

#: Random integer inputs are uniform in this half-open range; index-like inputs should be given explicitly.
RANDOM_INT_RANGE = (0, 64)
_DRAWN_DIRECTLY = frozenset({DType.FLOAT32, DType.FLOAT16, DType.BFLOAT16})


def stable_seed(*parts: object) -> int:
    """A 63-bit seed from ``parts``, the same in every process (Python's ``hash`` of a str is not)."""
    digest = hashlib.sha256("/".join(str(part) for part in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


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


#: Blob tensors read from disk, by (file, key, device): a worker drawing fresh inputs for every timed call reads
#: each blob once.
BlobCache = dict[tuple[str, str, str], torch.Tensor]


def generate_inputs(definition: Definition, workload: Workload, seed: int, device: str,
                    root: str | Path | None, blobs: BlobCache | None = None) -> list[Any]:
    """The definition's inputs, in order, drawn from ``seed`` (blob tensors are copies, never ``blobs``' own)."""
    axes = definition.bind_axes(workload.axes)
    torch_device = torch.device(device)
    generator = torch.Generator(device=torch_device)
    generator.manual_seed(seed)
    values: list[Any] = []
    for name, spec in definition.inputs.items():
        source = workload.inputs.get(name)
        shape = definition.shape_of(spec, axes)
        if isinstance(source, ScalarInput):
            values.append(source.value)
        elif isinstance(source, SafetensorsInput):
            values.append(_blob_tensor(source, name, spec, shape, root, device, blobs))
        elif shape is None:
            scalar = _random_tensor(spec, (), name, definition, torch_device, generator)
            values.append(scalar.item())
        else:
            values.append(_random_tensor(spec, shape, name, definition, torch_device, generator))
    # Constraints on the values of random inputs could not be decided before they were drawn (the others were,
    # by data.workload_check, before the workload was handed out).
    violations = definition.constraint_violations(axes, dict(zip(definition.inputs, values, strict=True)))
    if violations:
        raise ValueError("the drawn inputs break the definition's constraints (give these inputs in a blob): "
                         + "; ".join(violations))
    return values


def _blob_tensor(source: SafetensorsInput, name: str, spec: TensorSpec, shape: tuple[int, ...] | None,
                 root: str | Path | None, device: str, blobs: BlobCache | None) -> torch.Tensor:
    """The blob's tensor on ``device``, after the same checks the parent made (``data.workload_check``)."""
    key = (str(source.path), source.tensor_key, device)
    if blobs is not None and key in blobs:
        return blobs[key].clone()
    tensor, problem = read_blob_tensor(source, DType(spec.dtype), shape, root)
    if problem is not None:
        raise ValueError(f"input '{name}': {problem}")
    tensor = tensor.to(device)
    if blobs is None:
        return tensor
    blobs[key] = tensor
    return tensor.clone()


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

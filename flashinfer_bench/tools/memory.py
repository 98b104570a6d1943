"""How much memory a definition's inputs take at given axes, and a rough bound on a CPU run's peak: what tests and
``benchmarks/dataset_check.py`` use to choose workloads that fit a machine."""

from __future__ import annotations

import math

from flashinfer_bench.data import Definition, DType


def input_bytes(definition: Definition, axes: dict[str, int]) -> int:
    """Bytes of the definition's tensor inputs at these var axes."""
    bound = definition.bind_axes(axes)
    total = 0
    for spec in definition.inputs.values():
        shape = definition.shape_of(spec, bound)
        if shape is not None:
            total += math.prod(shape) * _itemsize(DType(spec.dtype))
    return total


def estimated_peak_bytes(definition: Definition, axes: dict[str, int]) -> int:
    """A rough upper estimate of a CPU run's peak memory: per input element, the harness's pristine copy and
    the copy a solution gets, a float32 working copy where the reference must upcast, and one float32
    temporary (the references dequantise or upcast whole weight tensors)."""
    bound = definition.bind_axes(axes)
    total = 0
    for spec in definition.inputs.values():
        shape = definition.shape_of(spec, bound)
        if shape is None:
            continue
        dtype = DType(spec.dtype)
        per_element = 2 * _itemsize(dtype) + 4 + (4 if dtype.is_floating and dtype is not DType.FLOAT32 else 0)
        total += math.prod(shape) * per_element
    return total


def _itemsize(dtype: DType) -> int:
    return 1 if dtype is DType.FLOAT4_E2M1 else dtype.to_torch().itemsize

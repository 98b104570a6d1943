"""Whether a workload can run: its axes bind, its inputs match the definition, its blobs are there and hold
what the definition says, and its constraints hold.

A workload that fails here is still loaded (upstream loads it too); ``Benchmark`` gives each of its solutions a
RUNTIME_ERROR trace that says why instead of running anything, and ``flashinfer-bench validate`` lists it.
Constraints that need the values of random inputs cannot be decided here; they are checked again once the
inputs are drawn (``bench.inputs.generate_inputs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flashinfer_bench.data import layout
from flashinfer_bench.data.constraints import ShapeOnly
from flashinfer_bench.data.definition import Definition
from flashinfer_bench.data.dtypes import DType, OpenDType
from flashinfer_bench.data.workload import SafetensorsInput, ScalarInput, Workload

#: safetensors' names for the element types a definition may name.
SAFETENSORS_DTYPES = {
    DType.FLOAT64: "F64", DType.UINT32: "U32", DType.UINT8: "U8", DType.FLOAT32: "F32", DType.FLOAT16: "F16", DType.BFLOAT16: "BF16", DType.FLOAT8_E4M3FN: "F8_E4M3",
    DType.FLOAT8_E5M2: "F8_E5M2", DType.FLOAT4_E2M1: "F4", DType.INT64: "I64", DType.INT32: "I32",
    DType.INT16: "I16", DType.INT8: "I8", DType.BOOL: "BOOL",
}


@dataclass(frozen=True)
class WorkloadProblem:
    """One reason a workload cannot run: the workload field concerned and what is wrong."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def check_workload(definition: Definition, workload: Workload, root: str | Path | None) -> list[WorkloadProblem]:
    """Every problem that keeps ``workload`` from running; empty when it can run."""
    try:
        axes = definition.bind_axes(workload.axes)
    except ValueError as exc:
        return [WorkloadProblem("workload.axes", str(exc))]
    problems: list[WorkloadProblem] = []
    values: dict[str, Any] = {}
    missing_files: dict[str, list[str]] = {}
    constrained = set().union(*(constraint.names for constraint in definition.parsed_constraints))
    for name in workload.inputs:
        if name not in definition.inputs:
            problems.append(WorkloadProblem(f"workload.inputs.{name}", f"definition '{definition.name}' has no input '{name}'"))
    for name, spec in definition.outputs.items():
        if spec.is_open:  # the judge reads every output's bytes as the type the definition declares
            problems.append(WorkloadProblem(f"definition.outputs.{name}.dtype",
                                            f"output '{name}' has dtype '{spec.dtype.value}': its bytes cannot be "
                                            "read as a declared type, so it cannot be judged"))
    for name, spec in definition.inputs.items():
        source = workload.inputs.get(name)
        shape = definition.shape_of(spec, axes)
        field = f"workload.inputs.{name}"
        if isinstance(source, ScalarInput):
            if shape is not None:
                problems.append(WorkloadProblem(field, f"a scalar value was given for a tensor input of shape {list(shape)}"))
            values[name] = source.value
        elif isinstance(source, SafetensorsInput):
            path, missing = blob_path(source, root)
            if path is None:
                # Inputs usually share one blob file: a missing file is one problem, naming every input.
                missing_files.setdefault(missing, []).append(name)
                continue
            # Only tensors a constraint reads are loaded; the others are checked from the file's header.
            tensor, problem = _read_blob(path, source.tensor_key, spec.dtype, shape, load=name in constrained)
            if problem is not None:
                problems.append(WorkloadProblem(f"{field}.path", problem))
            else:
                values[name] = tensor if tensor is not None else ShapeOnly(shape or ())
        elif shape is not None:
            values[name] = ShapeOnly(shape)
    for message, names in missing_files.items():
        field = "workload.inputs." + (names[0] if len(names) == 1 else "{" + ",".join(names) + "}") + ".path"
        problems.append(WorkloadProblem(field, message))
    if not problems:
        # Scalars the definition's init makes are not known before it runs: their constraints are checked on
        # each draw (bench.inputs), as those on tensor values are.
        known = [c for c in definition.parsed_constraints
                 if definition.init is None or not (c.names & set(definition.inputs)) - set(values)]
        problems.extend(WorkloadProblem("constraints", message)
                        for message in definition.constraint_violations(axes, values, known))
    return problems


def blob_path(source: SafetensorsInput, root: str | Path | None) -> tuple[Path | None, str | None]:
    """The blob's file, or why it cannot be used: its path must be relative and stay inside the trace set."""
    path = layout.file_inside(root, source.path)
    if path is None:
        return None, f"blob path {source.path!r} must be relative to the trace set and stay inside it"
    if not path.is_file():
        return None, f"blob file {path} does not exist"
    return path, None


def read_blob_tensor(source: SafetensorsInput, dtype: DType | OpenDType, shape: tuple[int, ...] | None,
                     root: str | Path | None) -> tuple[Any, str | None]:
    """(tensor on the CPU, None), or (None, what is wrong with the blob) for a missing file, a file that is
    not safetensors, a missing key, or a tensor of another dtype or shape than the definition says."""
    path, problem = blob_path(source, root)
    if path is None:
        return None, problem
    return _read_blob(path, source.tensor_key, dtype, shape, load=True)


def _read_blob(path: Path, key: str, dtype: DType | OpenDType, shape: tuple[int, ...] | None, *,
               load: bool) -> tuple[Any, str | None]:
    """As read_blob_tensor, for a file that exists; with ``load`` false only its header is read, and a blob
    without problems gives (None, None)."""
    try:
        from safetensors import SafetensorError, safe_open
    except ImportError:  # pragma: no cover - safetensors is a dependency
        return None, "reading blobs needs the safetensors package"
    try:
        with safe_open(str(path), framework="pt", device="cpu") as blob:
            keys = list(blob.keys())
            if key not in keys:
                return None, f"{path} has no tensor '{key}' (it has {sorted(keys)})"
            stored = blob.get_slice(key)
            stored_dtype, stored_shape = stored.get_dtype(), tuple(stored.get_shape())
            # An input whose dtype FlashInfer left open (``unknown``) may be stored in any type.
            expected_dtype = SAFETENSORS_DTYPES.get(dtype) if isinstance(dtype, DType) else stored_dtype
            if stored_dtype != expected_dtype:
                return None, (f"{path}: tensor '{key}' is {stored_dtype}, the definition says "
                              f"{DType(dtype).value} ({expected_dtype})")
            if shape is not None and stored_shape != shape:
                return None, (f"{path}: tensor '{key}' has shape {list(stored_shape)}, the workload's "
                              f"axes give {list(shape)}")
            return (blob.get_tensor(key) if load else None), None
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        return None, f"{path} is not a readable safetensors file: {' '.join(str(exc).split())}"

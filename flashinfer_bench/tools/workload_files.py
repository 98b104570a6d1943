"""Writing synthetic workloads into a trace set: their blobs where ``data.layout`` puts them, their JSONL lines, and
the blobs an existing workload names but the trace set lacks (the public dataset ships its workloads without
them), built by ``tools.synthetic`` consistently with the workload's axes."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import torch

from flashinfer_bench.bench.seeds import stable_seed
from flashinfer_bench.data import Definition, SafetensorsInput, ScalarInput, Workload, layout
from flashinfer_bench.tools.synthetic import SyntheticInputs, build_inputs, constraint_violations

UUID_NAMESPACE = uuid.UUID("3b0c7c1e-4f5a-4d8e-9a51-6c0f2b7d9e14")


def workload_uuid(definition: str, name: str) -> str:
    return str(uuid.uuid5(UUID_NAMESPACE, f"{definition}/{name}"))


def save_blob(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({key: tensor.contiguous() for key, tensor in sorted(tensors.items())}, str(path))


def write_synthetic_workload(root: Path, definition: Definition, synthetic: SyntheticInputs,
                             name: str = "synthetic") -> dict[str, Any]:
    """Write the blob where ``data.layout`` puts a workload's own blob and return the workload trace (public
    JSONL format) that refers to it."""
    inputs: dict[str, Any] = {}
    if synthetic.tensors:
        relative = layout.workload_blob(definition.op_type, definition.name, name)
        save_blob(layout.inside(root, root / relative), synthetic.tensors)
        inputs.update({key: {"type": "safetensors", "path": relative, "tensor_key": key}
                       for key in sorted(synthetic.tensors)})
    inputs.update({key: {"type": "scalar", "value": value} for key, value in sorted(synthetic.scalars.items())})
    workload = {"axes": synthetic.axes, "inputs": inputs, "uuid": workload_uuid(definition.name, name)}
    return {"definition": definition.name, "workload": workload, "solution": None, "evaluation": None}


def append_workloads(root: Path, definition: Definition, traces: list[dict[str, Any]]) -> Path:
    path = layout.workload_file(root, definition.op_type, definition.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(trace) + "\n" for trace in traces)
    return path


def workload_seed(workload: Workload) -> int:
    return stable_seed(workload.uuid) & 0xFFFFFFFF


def write_missing_blobs(root: Path, definition: Definition, workload: Workload) -> list[Path]:
    """Write every safetensors file that ``workload`` names and ``root`` lacks, with tensors consistent with its
    axes (and its scalar inputs). Returns the files written; raises UnsatisfiableWorkload when no valid tensors
    exist, and ValueError when what was built breaks one of the definition's constraints or a blob's path is
    not inside ``root``."""
    missing: dict[Path, dict[str, str]] = {}
    for name, source in workload.inputs.items():
        if not isinstance(source, SafetensorsInput):
            continue
        path = layout.file_inside(root, source.path)
        if path is None:
            raise ValueError(f"{definition.name}: workload {workload.uuid}, input '{name}': blob path "
                             f"{source.path!r} must be relative to the trace set and stay inside it")
        if not path.is_file():
            missing.setdefault(layout.inside(root, path), {})[source.tensor_key] = name
    if not missing:
        return []
    scalars = {name: source.value for name, source in workload.inputs.items() if isinstance(source, ScalarInput)}
    built = build_inputs(definition, dict(workload.axes), seed=workload_seed(workload), scalars=scalars)
    for path, keys in missing.items():
        absent = sorted(name for name in keys.values() if name not in built.tensors)
        if absent:
            raise ValueError(f"{definition.name}: no builder makes the input(s) {absent} that {path.name} must hold")
    tensors = {name: built.tensors[name] for keys in missing.values() for name in keys.values()}
    check = SyntheticInputs(built.axes, tensors, scalars)
    violations = constraint_violations(definition, check)
    if violations:
        raise ValueError(f"blobs built for workload {workload.uuid} of {definition.name} break: {violations}")
    for path, keys in missing.items():
        save_blob(path, {key: built.tensors[name] for key, name in keys.items()})
    return list(missing)

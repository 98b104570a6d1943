"""TraceSet: every definition, solution, workload and result trace of a trace-set folder, checked on load."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from flashinfer_bench.data.definition import Definition
from flashinfer_bench.data.errors import TraceSetError, describe_validation_error
from flashinfer_bench.data.solution import Solution
from flashinfer_bench.data.trace import Trace
from flashinfer_bench.data.workload import SafetensorsInput, ScalarInput

logger = logging.getLogger(__name__)
ModelT = TypeVar("ModelT", bound=BaseModel)


def _validate(model: type[ModelT], data: object, where: str) -> ModelT:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        field, message = describe_validation_error(exc)
        raise TraceSetError(where, field, message) from None


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TraceSetError(path, None, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceSetError(path, None, f"cannot be read: {exc}") from None


def _read_jsonl(path: Path, *, skip_torn_lines: bool) -> Iterable[tuple[str, object]]:
    """(location, parsed object) per non-blank line. Result files may hold a line torn by a crash mid-append,
    with later appends after it: with ``skip_torn_lines`` such lines are skipped with a warning."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        where = f"{path}:{index + 1}"
        try:
            yield where, json.loads(line)
        except json.JSONDecodeError as exc:
            if skip_torn_lines:
                logger.warning("%s: skipping an incomplete line (%s)", where, exc.msg)
                continue
            raise TraceSetError(where, None, f"invalid JSON at column {exc.colno}: {exc.msg}") from None


class TraceSet:
    """In-memory view of a trace set. ``solutions``, ``workloads`` and ``traces`` are keyed by definition name."""

    def __init__(
        self,
        root: str | Path | None = None,
        definitions: dict[str, Definition] | None = None,
        solutions: dict[str, list[Solution]] | None = None,
        workloads: dict[str, list[Trace]] | None = None,
        traces: dict[str, list[Trace]] | None = None,
    ):
        self.root = Path(root) if root is not None else None
        self.definitions: dict[str, Definition] = dict(definitions or {})
        self.solutions: dict[str, list[Solution]] = {k: list(v) for k, v in (solutions or {}).items()}
        self.workloads: dict[str, list[Trace]] = {k: list(v) for k, v in (workloads or {}).items()}
        self.traces: dict[str, list[Trace]] = {k: list(v) for k, v in (traces or {}).items()}

    # ----------------------------------------------------------------------------------------------- loading
    @classmethod
    def from_path(cls, path: str | Path) -> TraceSet:
        """Load and cross-check a trace-set folder; raises TraceSetError naming the file, field and expectation."""
        root = Path(path)
        if not root.is_dir():
            raise TraceSetError(root, None, "expected a trace-set folder (with definitions/, solutions/, workloads/)")
        if not (root / "definitions").is_dir():
            raise TraceSetError(root, None, "expected a 'definitions' folder inside the trace set")
        trace_set = cls(root)
        definition_files: dict[str, Path] = {}
        for file in sorted((root / "definitions").rglob("*.json")):
            definition = _validate(Definition, _read_json(file), str(file))
            if definition.name in definition_files:
                raise TraceSetError(
                    file, "name", f"definition name '{definition.name}' is already used by {definition_files[definition.name]}"
                )
            definition_files[definition.name] = file
            trace_set.definitions[definition.name] = definition

        solution_files: dict[str, Path] = {}
        for file in sorted((root / "solutions").rglob("*.json")) if (root / "solutions").is_dir() else ():
            solution = _validate(Solution, _read_json(file), str(file))
            if solution.name in solution_files:
                raise TraceSetError(
                    file, "name", f"solution name '{solution.name}' is already used by {solution_files[solution.name]}"
                )
            if solution.definition not in trace_set.definitions:
                raise TraceSetError(file, "definition", f"names unknown definition '{solution.definition}'")
            solution_files[solution.name] = file
            trace_set.solutions.setdefault(solution.definition, []).append(solution)

        for file in sorted((root / "workloads").rglob("*.jsonl")) if (root / "workloads").is_dir() else ():
            seen: dict[str, str] = {}
            for where, data in _read_jsonl(file, skip_torn_lines=False):
                trace = _validate(Trace, data, where)
                trace_set._check_workload(trace, where)
                if trace.workload.uuid in seen:
                    raise TraceSetError(where, "workload.uuid", f"uuid '{trace.workload.uuid}' repeats {seen[trace.workload.uuid]}")
                seen[trace.workload.uuid] = where
                trace_set.workloads.setdefault(trace.definition, []).append(trace)

        for file in sorted((root / "traces").rglob("*.jsonl")) if (root / "traces").is_dir() else ():
            for where, data in _read_jsonl(file, skip_torn_lines=True):
                trace = _validate(Trace, data, where)
                trace_set.traces.setdefault(trace.definition, []).append(trace)
        return trace_set

    def _check_workload(self, trace: Trace, where: str) -> None:
        definition = self.definitions.get(trace.definition)
        if definition is None:
            raise TraceSetError(where, "definition", f"names unknown definition '{trace.definition}'")
        if not trace.is_workload_trace:
            raise TraceSetError(where, "solution", "a workload trace must have null solution and evaluation")
        try:
            axes = definition.bind_axes(trace.workload.axes)
        except ValueError as exc:
            raise TraceSetError(where, "workload.axes", str(exc)) from None
        for name, spec in trace.workload.inputs.items():
            field = f"workload.inputs.{name}"
            if name not in definition.inputs:
                raise TraceSetError(where, field, f"definition '{definition.name}' has no input '{name}'")
            tensor = definition.inputs[name]
            if isinstance(spec, ScalarInput) and tensor.shape is not None:
                shape = definition.shape_of(tensor, axes)
                raise TraceSetError(where, field, f"a scalar value was given for a tensor input of shape {list(shape)}")
            if isinstance(spec, SafetensorsInput) and self.root is not None and not (self.root / spec.path).is_file():
                raise TraceSetError(where, f"{field}.path", f"safetensors file {self.root / spec.path} does not exist")

    # ---------------------------------------------------------------------------------------------- queries
    def trace_file(self, definition: str) -> Path:
        """Where result traces of a definition live: ``traces/<op_type>/<definition>.jsonl``."""
        if self.root is None:
            raise ValueError("this trace set has no folder on disk")
        return self.root / "traces" / self.definitions[definition].op_type / f"{definition}.jsonl"

    def copy(self) -> TraceSet:
        return TraceSet(self.root, self.definitions, self.solutions, self.workloads, self.traces)

    # ---------------------------------------------------------------------------------------------- writing
    def add_trace(self, trace: Trace, *, persist: bool) -> None:
        """Keep a result trace; with ``persist``, append it to its JSONL file at once (flushed and synced)."""
        self.traces.setdefault(trace.definition, []).append(trace)
        if persist:
            append_jsonl_line(self.trace_file(trace.definition), trace.to_json_line())


def append_jsonl_line(path: Path, line: str) -> None:
    """Append one line durably; a torn last line left by an earlier crash is closed off first, never rewritten."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab+") as handle:
        handle.seek(0, os.SEEK_END)
        prefix = b""
        if handle.tell() > 0:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                prefix = b"\n"
        handle.write(prefix + line.encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())

"""TraceSet: every definition, solution, workload and result trace of a trace-set folder.

Loading never stops at a bad file: each problem (a file that is not JSON, a field that fails validation, a
name used twice, a solution or trace for an unknown definition) is kept in ``TraceSet.problems`` as a
TraceSetError naming the file (and line), the field and what was expected, and the rest is loaded. Whether a
workload can run (its blobs, its constraints) is not a loading question: see ``data.workload_check``.

JSONL is split on ``\\n`` alone (a U+2028 inside a logged string is not a line break) and each line is parsed
and validated in one step by pydantic's JSON parser, which keeps loading linear and fast for large trace files.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from flashinfer_bench.data import layout
from flashinfer_bench.data.definition import Definition
from flashinfer_bench.data.errors import TraceSetError, describe_validation_error
from flashinfer_bench.data.jsonl import append_jsonl_line, jsonl_lines
from flashinfer_bench.data.layout import DEFINITIONS, SOLUTIONS, TRACES, WORKLOADS
from flashinfer_bench.data.solution import Solution
from flashinfer_bench.data.trace import Correctness, Environment, Evaluation, Performance, Trace
from flashinfer_bench.data.workload import Workload

logger = logging.getLogger(__name__)
ModelT = TypeVar("ModelT", bound=BaseModel)


def _parse(model: type[ModelT], text: bytes | str, where: str) -> ModelT:
    """Validate JSON text into ``model``; raises TraceSetError naming ``where``, the field and the problem."""
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        field, message = describe_validation_error(exc)
        raise TraceSetError(where, field, message) from None


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Loading makes millions of small objects and no reference cycles. With the cyclic garbage collector
    running, each of its passes walks every object made so far, which made loading worse than linear, and the
    first full pass after loading cost as much again. So it is paused while loading, and what was loaded is
    moved out of its sight (``gc.freeze``); reference counting still frees it all when it is dropped. Garbage
    that was waiting for the collector is collected first, so that none of it is frozen with the rest."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


class TraceSet:
    """In-memory view of a trace set. ``solutions``, ``workloads`` and ``traces`` are keyed by definition name;
    ``problems`` lists what could not be loaded."""

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
        #: Definition, solution and workload files (or lines) that could not be used.
        self.problems: list[TraceSetError] = []
        #: Result-trace lines that were skipped: invalid, or for a definition the set does not hold.
        self.trace_problems: list[TraceSetError] = []
        # Definitions whose file is reported as a problem: what names them is skipped without a second report.
        self._unloaded_definitions: set[str] = set()

    # ----------------------------------------------------------------------------------------------- loading
    @classmethod
    def from_path(cls, path: str | Path, *, load_traces: bool = True) -> TraceSet:
        """Load a trace-set folder. Raises TraceSetError only when ``path`` is not a trace set at all; every
        problem inside it is recorded in ``problems`` and the rest is loaded. ``load_traces=False`` leaves the
        result traces on disk (for a caller that reads them itself, file by file)."""
        root = Path(path)
        if not root.is_dir():
            raise TraceSetError(root, None, "expected a trace-set folder (with definitions/, solutions/, workloads/)")
        if not any((root / folder).is_dir() for folder in layout.FOLDERS):
            raise TraceSetError(root, None, f"expected a trace set: none of {DEFINITIONS}/, {SOLUTIONS}/, "
                                f"{WORKLOADS}/ or {TRACES}/ is inside")
        trace_set = cls(root)
        with _collector_paused():
            trace_set._load_definitions(layout.files(root, DEFINITIONS))
            trace_set._load_solutions(layout.files(root, SOLUTIONS))
            for file in layout.files(root, WORKLOADS):
                trace_set._load_workloads(file)
            for file in layout.files(root, TRACES) if load_traces else ():
                trace_set._load_traces(file)
        return trace_set

    def _problem(self, where: str | Path, field: str | None, expected: str) -> None:
        self.problems.append(TraceSetError(where, field, expected))

    def _documents(self, files: Iterable[Path], model: type[ModelT]) -> Iterator[tuple[Path, ModelT]]:
        """(file, model) for each JSON file that reads and validates; the others are recorded as problems."""
        for file in files:
            try:
                text = file.read_bytes()
            except OSError as exc:
                self._problem(file, None, f"cannot be read: {exc.strerror or exc}")
                continue
            try:
                yield file, _parse(model, text, str(file))
            except TraceSetError as exc:
                self.problems.append(exc)
                if model is Definition:
                    self._unloaded_definitions.add(_declared_name(text) or file.stem)

    def _load_definitions(self, files: Iterable[Path]) -> None:
        seen: dict[str, Path] = {}
        for file, definition in self._documents(files, Definition):
            if definition.name in seen:
                self._problem(file, "name", f"definition name '{definition.name}' is already used by {seen[definition.name]}")
                continue
            seen[definition.name] = file
            self.definitions[definition.name] = definition

    def _load_solutions(self, files: Iterable[Path]) -> None:
        seen: dict[str, Path] = {}
        for file, solution in self._documents(files, Solution):
            if solution.name in seen:
                self._problem(file, "name", f"solution name '{solution.name}' is already used by {seen[solution.name]}")
            elif solution.definition in self._unloaded_definitions:
                continue
            elif solution.definition not in self.definitions:
                self._problem(file, "definition", f"names unknown definition '{solution.definition}'")
            else:
                seen[solution.name] = file
                self.solutions.setdefault(solution.definition, []).append(solution)

    def _lines(self, file: Path) -> Iterator[tuple[int, bytes]]:
        """(line number, line) for each non-blank line, read as a stream so a large file is never held whole."""
        try:
            with open(file, "rb") as handle:
                yield from jsonl_lines(handle)
        except OSError as exc:
            self._problem(file, None, f"cannot be read: {exc.strerror or exc}")

    def _load_workloads(self, file: Path) -> None:
        seen: dict[str, str] = {}
        for number, line in self._lines(file):
            where = f"{file}:{number}"
            try:
                trace = _parse(Trace, line, where)
            except TraceSetError as exc:
                self.problems.append(exc)
                continue
            if trace.definition in self._unloaded_definitions:
                continue
            if trace.definition not in self.definitions:
                self._problem(where, "definition", f"names unknown definition '{trace.definition}'")
            elif not trace.is_workload_trace:
                self._problem(where, "solution", "a workload trace must have null solution and evaluation")
            elif trace.workload.uuid in seen:
                self._problem(where, "workload.uuid", f"uuid '{trace.workload.uuid}' repeats {seen[trace.workload.uuid]}")
            else:
                seen[trace.workload.uuid] = where
                self.workloads.setdefault(trace.definition, []).append(trace)

    def _load_traces(self, file: Path) -> None:
        known = self.definitions
        append = self.traces.setdefault
        problems = self.trace_problems
        shared = _SharedParts()
        validate = Trace.model_validate_json
        for number, line in self._lines(file):
            try:
                trace = validate(line)
            except ValidationError as exc:
                if _is_torn(exc):
                    # A crash mid-append leaves a partial line; the next append closed it off (or will).
                    logger.warning("%s:%d: skipping an incomplete line", file, number)
                    continue
                field, message = describe_validation_error(exc)
                problems.append(TraceSetError(f"{file}:{number}", field, message))
                continue
            if trace.definition in known:
                if trace.solution is not None and trace.evaluation is not None:
                    append(trace.definition, []).append(shared.share(trace))
                else:
                    problems.append(TraceSetError(f"{file}:{number}", "evaluation",
                                                  "a result trace must name a solution and hold an evaluation"))
            elif trace.definition not in self._unloaded_definitions:
                problems.append(TraceSetError(f"{file}:{number}", "definition",
                                              f"names unknown definition '{trace.definition}'"))

    # ---------------------------------------------------------------------------------------------- queries
    def solution(self, name: str) -> Solution | None:
        """The solution of that name, if the set has one."""
        for solutions in self.solutions.values():
            for solution in solutions:
                if solution.name == name:
                    return solution
        return None

    def trace_file(self, trace: Trace) -> Path:
        """Where a result trace is appended (``data.layout``: the author is the solution's, ``unknown`` for a
        solution this set does not hold). Raises TraceSetError for a name that is not one or a path outside
        the trace set."""
        if self.root is None:
            raise ValueError("this trace set has no folder on disk")
        solution = self.solution(trace.solution) if trace.solution is not None else None
        author = solution.author if solution is not None else layout.UNKNOWN_AUTHOR
        return layout.trace_file(self.root, author, self.definitions[trace.definition].op_type, trace.definition)

    def copy(self) -> TraceSet:
        duplicate = TraceSet(self.root, self.definitions, self.solutions, self.workloads, self.traces)
        duplicate.problems = list(self.problems)
        duplicate.trace_problems = list(self.trace_problems)
        duplicate._unloaded_definitions = set(self._unloaded_definitions)
        return duplicate

    # ---------------------------------------------------------------------------------------------- writing
    def add_trace(self, trace: Trace, *, persist: bool) -> None:
        """Keep a result trace; with ``persist``, append it to its JSONL file at once (flushed and synced).
        A trace whose file would not be inside the trace set raises TraceSetError and is neither kept nor
        written."""
        path = self.trace_file(trace) if persist else None
        self.traces.setdefault(trace.definition, []).append(trace)
        if path is not None:
            append_jsonl_line(path, trace.to_json_line())

    def add_traces(self, traces: Iterable[Trace]) -> None:
        """Keep result traces and append each to its file (upstream's ``add_traces``)."""
        for trace in traces:
            self.add_trace(trace, persist=self.root is not None)


_FIELD_COUNTS = {model: len(model.model_fields) for model in (Trace, Evaluation, Correctness, Performance)}


class _SharedParts:
    """Makes equal parts of the traces of one file one object each. A leaderboard's trace file repeats a few
    workloads, environments and solution names across many thousands of lines, and every model pydantic makes
    carries its own set of the field names it was given (216 to 728 bytes, more than the rest of a small
    model). Holding each of these once keeps a loaded trace set within about twice its file's size.

    Field-name sets are shared between models of one class that were given every field, as every line upstream
    writes gives them; a later assignment through pydantic adds a name that is already there, so the shared
    set never changes.
    """

    def __init__(self) -> None:
        self.workloads: dict[tuple[str, bytes], Workload] = {}
        self.environments: dict[tuple[str, tuple[tuple[str, str], ...]], Environment] = {}
        self.names: dict[str, str] = {}
        self.complete_sets: dict[type, set[str]] = {}

    def share(self, trace: Trace) -> Trace:
        # Assigned through __dict__ and object.__setattr__: the models are validated already, and pydantic's
        # __setattr__ costs more than the whole lookup.
        complete = self.complete_sets
        evaluation = trace.evaluation
        assert evaluation is not None and trace.solution is not None
        for model in (trace, evaluation, evaluation.correctness, evaluation.performance):
            if model is not None:
                names = model.__pydantic_fields_set__
                if len(names) == _FIELD_COUNTS[type(model)]:  # every field given: one set per class serves
                    object.__setattr__(model, "__pydantic_fields_set__", complete.setdefault(type(model), names))
        workload = trace.workload
        key = (trace.definition, workload.__pydantic_serializer__.to_json(workload))
        trace.__dict__["workload"] = self.workloads.setdefault(key, workload)
        environment = evaluation.environment
        environment_key = (environment.hardware, tuple(environment.libs.items()))
        evaluation.__dict__["environment"] = self.environments.setdefault(environment_key, environment)
        trace.__dict__["solution"] = self.names.setdefault(trace.solution, trace.solution)
        return trace


def _declared_name(text: bytes) -> str | None:
    """The ``name`` a definition file declares, if it is JSON enough to say."""
    try:
        name = json.loads(text).get("name")
    except (ValueError, AttributeError):
        return None
    return name if isinstance(name, str) else None


def _is_torn(exc: ValidationError) -> bool:
    """A line cut off mid-write fails as JSON, not as a field."""
    return any(error.get("type") == "json_invalid" for error in exc.errors())

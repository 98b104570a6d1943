"""Reading what a report is about: trace-set folders or single trace files (JSONL), as one run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from flashinfer_bench.data import Definition, Trace, TraceSet, TraceSetError
from flashinfer_bench.data.errors import describe_validation_error
from flashinfer_bench.data.jsonl import jsonl_lines


@dataclass
class Run:
    """Result traces from one or more places, with what is known about them."""

    label: str
    traces: list[Trace] = field(default_factory=list)
    #: solution name -> author, from the trace sets' solutions (empty for trace files).
    authors: dict[str, str] = field(default_factory=dict)
    definitions: dict[str, Definition] = field(default_factory=dict)
    #: Input files (or lines) that could not be used: the command goes on without them and exits with 2.
    problems: list[TraceSetError] = field(default_factory=list)
    #: Result lines that were skipped (a torn last line, a line naming an unknown definition, ...).
    warnings: list[TraceSetError] = field(default_factory=list)


def load_run(paths: Sequence[str | Path]) -> Run:
    """Every result trace under ``paths``: each a trace-set folder or a ``.jsonl`` trace file. Raises
    TraceSetError (one line) for a path that is neither."""
    run = Run(label=", ".join(str(p) for p in paths))
    for path in map(Path, paths):
        if path.is_dir():
            _add_trace_set(run, TraceSet.from_path(path))
        elif path.is_file():
            _add_trace_file(run, path)
        else:
            raise TraceSetError(path, None, "expected a trace-set folder or a .jsonl trace file; nothing is there")
    return run


def _add_trace_set(run: Run, trace_set: TraceSet) -> None:
    run.problems += trace_set.problems
    run.warnings += trace_set.trace_problems
    run.definitions.update(trace_set.definitions)
    for solutions in trace_set.solutions.values():
        run.authors.update((solution.name, solution.author) for solution in solutions)
    for traces in trace_set.traces.values():
        run.traces += traces


def _add_trace_file(run: Run, path: Path) -> None:
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise TraceSetError(path, None, f"cannot be read: {exc.strerror or exc}") from exc
    with handle:
        for index, (number, line) in enumerate(jsonl_lines(handle)):
            try:
                trace = Trace.model_validate_json(line)
            except ValidationError as exc:
                field_name, message = describe_validation_error(exc)
                if index == 0 and field_name is None:  # not JSON from its first record: not a trace file
                    raise TraceSetError(f"{path}:{number}", None,
                                        f"expected a JSONL trace file, one trace per line ({message})") from exc
                run.warnings.append(TraceSetError(f"{path}:{number}", field_name, message))
                continue
            if trace.solution is not None and trace.evaluation is not None:
                run.traces.append(trace)

"""Merging trace sets into a new folder (``flashinfer-bench report merge``).

Definitions, solutions and workloads are unioned by name (uuid for workloads): the same name with the same
content is written once; the same name with other content is a conflict, reported, and the first one is kept.
Result traces keep the path their file had inside its trace set, so data in upstream's layout comes out in
upstream's layout, and each line is written as upstream's writer writes it (byte-identical to a line that
upstream wrote). Identical lines that several trace sets hold are written once.

The output folder must not hold anything yet: nothing already written is overwritten. Every path is made by
``data.layout`` from checked names and lies inside the output folder; each file is created, never replaced.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from flashinfer_bench.data import layout
from flashinfer_bench.data.definition import Definition
from flashinfer_bench.data.definition_file import definition_text
from flashinfer_bench.data.errors import TraceSetError, describe_validation_error
from flashinfer_bench.data.jsonl import jsonl_lines
from flashinfer_bench.data.solution import Solution
from flashinfer_bench.data.trace import Trace
from flashinfer_bench.data.trace_set import TraceSet


@dataclass
class MergeReport:
    """What a merge wrote, and what it left out (conflicts, unreadable files and lines)."""

    definitions: int = 0
    solutions: int = 0
    workloads: int = 0
    traces: int = 0
    duplicate_traces: int = 0
    problems: list[TraceSetError] = field(default_factory=list)


def _write_json(path: Path, model: BaseModel) -> None:
    """One JSON document as upstream's ``save_json_file`` writes it: two-space indent, no final newline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x", encoding="utf-8") as handle:
        handle.write(model.model_dump_json(indent=2))


def merge_trace_sets(sources: Sequence[str | Path], output: str | Path) -> MergeReport:
    """Merge ``sources`` (in order) into the new folder ``output``; raises TraceSetError if it is not empty."""
    out = Path(output)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise TraceSetError(out, None, "the merge output must be a new or empty folder; nothing was written")
    # Result lines are read below, file by file, so that each keeps its file's place in the layout.
    loaded = [TraceSet.from_path(source, load_traces=False) for source in sources]
    report = MergeReport()
    for trace_set in loaded:
        report.problems.extend(trace_set.problems)

    definitions: dict[str, tuple[Definition, Path]] = {}
    solutions: dict[str, tuple[Solution, Path]] = {}
    workloads: dict[tuple[str, str], tuple[Trace, Path]] = {}
    for trace_set in loaded:
        assert trace_set.root is not None
        for name, definition in trace_set.definitions.items():
            _keep_first(definitions, name, definition, trace_set.root, "definition", report)
        for group in trace_set.solutions.values():
            for solution in group:
                _keep_first(solutions, solution.name, solution, trace_set.root, "solution", report)
        for group in trace_set.workloads.values():
            for workload in group:
                _keep_first(workloads, (workload.definition, workload.workload.uuid), workload, trace_set.root,
                            "workload", report)

    known = {name: definition for name, (definition, _) in definitions.items()}
    for name, definition in known.items():
        path = layout.definition_file(out, definition.op_type, name)
        if definition.fi_api is not None:  # FlashInfer's file, written back as it was read (definition_file)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "x", encoding="utf-8") as handle:
                handle.write(definition_text(definition))
        else:
            _write_json(path, definition)
    for name, (solution, _) in solutions.items():
        op_type = known[solution.definition].op_type
        _write_json(layout.solution_file(out, solution.author, op_type, solution.definition, name), solution)
    report.definitions, report.solutions, report.workloads = len(definitions), len(solutions), len(workloads)
    #: output file -> its lines, in order and each once (a dict is an ordered set)
    by_file: dict[Path, dict[str, None]] = {}
    for (definition_name, _), (workload, _) in workloads.items():
        path = layout.workload_file(out, known[definition_name].op_type, definition_name)
        by_file.setdefault(path, {})[workload.to_json_line()] = None
    for trace_set in loaded:
        assert trace_set.root is not None
        _collect_traces(trace_set.root, out, known, by_file, report)
    for path, lines in by_file.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "x", encoding="utf-8", newline="\n") as handle:
            handle.writelines(lines)
            handle.flush()
            os.fsync(handle.fileno())
    return report


def _keep_first(kept: dict, key: object, value: BaseModel, root: Path, kind: str, report: MergeReport) -> None:
    if key not in kept:
        kept[key] = (value, root)
    elif kept[key][0] != value:
        report.problems.append(TraceSetError(root, kind, f"{kind} {key!r} differs from the one in {kept[key][1]}; "
                                             "the first was kept"))


def _collect_traces(root: Path, out: Path, known: dict[str, Definition], by_file: dict[Path, dict[str, None]],
                    report: MergeReport) -> None:
    """Every valid result line of ``root``'s trace files, re-serialised, filed under its relative path."""
    base = root / layout.TRACES
    for file in layout.files(root, layout.TRACES):
        try:
            target = layout.moved(out, layout.TRACES, file.relative_to(base).parts)
        except TraceSetError as exc:
            report.problems.append(TraceSetError(file, exc.field, f"{exc.expected}; the file was left out"))
            continue
        lines = by_file.setdefault(target, {})
        for number, raw in jsonl_lines(file.read_bytes()):
            where = f"{file}:{number}"
            try:
                trace = Trace.model_validate_json(raw)
            except ValidationError as exc:
                field_name, message = describe_validation_error(exc)
                report.problems.append(TraceSetError(where, field_name, message))
                continue
            if trace.definition not in known or trace.is_workload_trace:
                report.problems.append(TraceSetError(where, "definition", f"not a result trace of a known definition "
                                                     f"('{trace.definition}')"))
                continue
            line = trace.to_json_line()
            if line in lines:
                report.duplicate_traces += 1
                continue
            lines[line] = None
            report.traces += 1

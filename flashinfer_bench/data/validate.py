"""``flashinfer-bench validate``: every problem of a trace set, per definition, without running anything.

Checks (upstream's names): ``layout`` (files where upstream's layout puts them, names matching paths),
``definition`` (each definition file loads), ``workload`` (each workload line loads and can run: axes, inputs,
blobs present and holding what the definition says, constraints), ``solution`` (each solution file loads),
``trace`` (each result line loads and names a known solution). Errors make the command exit 1; warnings
(a file outside upstream's layout) do not.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from flashinfer_bench.data import layout
from flashinfer_bench.data.errors import TraceSetError
from flashinfer_bench.data.layout import DEFINITIONS, SOLUTIONS, TRACES, WORKLOADS
from flashinfer_bench.data.trace_set import TraceSet
from flashinfer_bench.data.workload_check import check_workload

CHECKS = ("layout", "definition", "workload", "solution", "trace")
Level = Literal["warning", "error"]
DATASET = "(trace set)"


@dataclass(frozen=True)
class Finding:
    level: Level
    check: str
    message: str


@dataclass
class ValidationReport:
    root: Path
    checks: tuple[str, ...]
    #: definition name (or DATASET) -> findings, in the order found
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    workloads_checked: int = 0

    def add(self, definition: str, level: Level, check: str, message: str) -> None:
        self.findings.setdefault(definition, []).append(Finding(level, check, message))

    @property
    def errors(self) -> int:
        return sum(f.level == "error" for findings in self.findings.values() for f in findings)

    @property
    def warnings(self) -> int:
        return sum(f.level == "warning" for findings in self.findings.values() for f in findings)


def validate_trace_set(root: str | Path, *, checks: Sequence[str] = CHECKS, op_types: Sequence[str] = (),
                       definitions: Sequence[str] = ()) -> ValidationReport:
    """Run ``checks`` over the definitions selected by ``op_types`` or ``definitions`` (their union; all when
    both are empty). Raises TraceSetError when ``root`` is not a trace set or a check is unknown."""
    unknown = [c for c in checks if c not in CHECKS]
    if unknown:
        raise TraceSetError(None, "checks", f"unknown checks {unknown}; the checks are {', '.join(CHECKS)}")
    trace_set = TraceSet.from_path(root)
    report = ValidationReport(Path(root), tuple(checks))
    selected = {name for name, d in trace_set.definitions.items()
                if (not op_types and not definitions) or d.op_type in op_types or name in definitions}

    def wanted(definition: str) -> bool:
        return definition == DATASET or definition in selected or (not op_types and not definitions)

    for check, problems in (("definition", _kind(trace_set.problems, DEFINITIONS, root)),
                            ("solution", _kind(trace_set.problems, SOLUTIONS, root)),
                            ("workload", _kind(trace_set.problems, WORKLOADS, root)),
                            ("trace", _kind(trace_set.trace_problems, TRACES, root))):
        if check in checks:
            for definition, problem in problems:
                if wanted(definition):
                    report.add(definition, "error", check, str(problem))
    if "layout" in checks:
        for definition, level, message in _layout(trace_set):
            if wanted(definition):
                report.add(definition, level, "layout", message)
    if "workload" in checks:
        for name in sorted(selected):
            for workload_trace in trace_set.workloads.get(name, []):
                report.workloads_checked += 1
                uuid = workload_trace.workload.uuid
                for problem in check_workload(trace_set.definitions[name], workload_trace.workload, trace_set.root):
                    report.add(name, "error", "workload", f"{uuid}: {problem}")
    if "trace" in checks:
        solutions = {s.name for group in trace_set.solutions.values() for s in group}
        for name in sorted(selected):
            unknown_solutions = sorted({t.solution for t in trace_set.traces.get(name, [])
                                        if t.solution not in solutions})
            for solution in unknown_solutions:
                report.add(name, "error", "trace", f"traces name solution '{solution}', which the trace set does not hold")
    for name in selected:
        report.findings.setdefault(name, [])
    return report


def _owner(path: Path, folder: str, root: str | Path) -> str:
    """The definition a file belongs to, from its place in the layout."""
    try:
        parts = path.relative_to(Path(root) / folder).parts
    except ValueError:
        return DATASET
    return layout.place(folder, parts).definition or DATASET


def _kind(problems: Iterable[TraceSetError], folder: str, root: str | Path) -> list[tuple[str, TraceSetError]]:
    prefix = str(Path(root) / folder) + "/"
    found = []
    for problem in problems:
        if problem.path is not None and problem.path.startswith(prefix):
            file = Path(problem.path.rsplit(":", 1)[0] if folder in (WORKLOADS, TRACES) else problem.path)
            found.append((_owner(file, folder, root), problem))
    return found


def _layout(trace_set: TraceSet) -> Iterable[tuple[str, Level, str]]:
    root = trace_set.root
    assert root is not None
    for folder, pattern in layout.PATTERN.items():
        base = root / folder
        for file in layout.files(root, folder):
            place = layout.place(folder, file.relative_to(base).parts)
            owner = place.definition or DATASET
            if not place.exact:
                yield owner, "warning", f"{file} is not where upstream's layout puts it ({pattern})"
                continue
            definition = trace_set.definitions.get(owner)
            if definition is None:
                continue
            if place.op_type != definition.op_type:
                yield owner, "error", f"{file}: the path says op_type '{place.op_type}', the definition says '{definition.op_type}'"
            if folder == SOLUTIONS:
                solution = next((s for s in trace_set.solutions.get(owner, []) if s.name == place.solution), None)
                if solution is None:
                    yield owner, "error", f"{file}: the path says solution '{place.solution}', the file names another"
                elif solution.author != place.author:
                    yield owner, "error", f"{file}: the path says author '{place.author}', the solution says '{solution.author}'"


def render_text(report: ValidationReport) -> str:
    """The report as upstream's text report lays it out: a header, then one block per definition."""
    names = sorted(n for n in report.findings if n != DATASET)
    status = {name: _status(report.findings[name]) for name in names}
    counts = {level: sum(1 for s in status.values() if s == level) for level in ("ok", "warning", "error")}
    lines = [
        "=== Dataset Validation Report ===",
        f"dataset:       {report.root}",
        f"checks:        {', '.join(report.checks)}",
        "",
        f"{len(names)} definitions: {counts['ok']} ok, {counts['warning']} warning, {counts['error']} error",
        f"{report.workloads_checked} workloads checked; {report.errors} errors, {report.warnings} warnings",
        "",
    ]
    for name in ([DATASET] if DATASET in report.findings else []) + names:
        findings = report.findings[name]
        lines.append(f"--- {name} [{_status(findings).upper()}] ---")
        for check in report.checks:
            mine = [f for f in findings if f.check == check]
            lines.append(f"  {check + ':':12s} {_status(mine)}")
            lines.extend(f"    - {f.level}: {f.message}" for f in mine)
        lines.append("")
    return "\n".join(lines)


def _status(findings: Sequence[Finding]) -> str:
    if any(f.level == "error" for f in findings):
        return "error"
    return "warning" if findings else "ok"

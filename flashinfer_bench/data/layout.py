"""Where each file of a trace set lives, as upstream lays a trace set out; every reader and writer asks here.

    definitions/<op_type>/<definition>.json
    solutions/<author>/<op_type>/<definition>/<solution>.json
    workloads/<op_type>/<definition>.jsonl
    traces/<author>/<op_type>/<definition>.jsonl
    blob/workloads/<op_type>/<definition>/<name>.safetensors   (what synthetic workloads write)

A path is built only from names that pass ``data.names`` (each becomes exactly one component), and is checked
once more before it is handed to a writer: it must lie inside the folder it is written under. The check is on
the path as written, with ``..`` resolved but symlinks not followed: a trace set's own symlinks (a hub snapshot
is made of them) are its owner's choice, and no name can make one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from flashinfer_bench.data.errors import TraceSetError
from flashinfer_bench.data.names import NAME_RULE, name_problem

DEFINITIONS, SOLUTIONS, WORKLOADS, TRACES = "definitions", "solutions", "workloads", "traces"
#: The folders a trace set is made of (blobs are found through the workloads that name them).
FOLDERS = (DEFINITIONS, SOLUTIONS, WORKLOADS, TRACES)
#: The file name suffix of each folder's files.
SUFFIX = {DEFINITIONS: ".json", SOLUTIONS: ".json", WORKLOADS: ".jsonl", TRACES: ".jsonl"}
#: Where each kind of file goes, as messages show it.
PATTERN = {
    DEFINITIONS: "definitions/<op_type>/<definition>.json",
    WORKLOADS: "workloads/<op_type>/<definition>.jsonl",
    SOLUTIONS: "solutions/<author>/<op_type>/<definition>/<solution>.json",
    TRACES: "traces/<author>/<op_type>/<definition>.jsonl",
}
#: Path components below each folder.
DEPTH = {folder: pattern.count("/") for folder, pattern in PATTERN.items()}
#: The author of result traces whose solution the trace set does not hold.
UNKNOWN_AUTHOR = "unknown"


# ------------------------------------------------------------------------------------------------ writing
def definition_file(root: str | Path, op_type: str, definition: str) -> Path:
    return _path(root, DEFINITIONS, (("op_type", op_type), ("definition", definition)), SUFFIX[DEFINITIONS])


def solution_file(root: str | Path, author: str, op_type: str, definition: str, solution: str) -> Path:
    names = (("author", author), ("op_type", op_type), ("definition", definition), ("solution", solution))
    return _path(root, SOLUTIONS, names, SUFFIX[SOLUTIONS])


def workload_file(root: str | Path, op_type: str, definition: str) -> Path:
    return _path(root, WORKLOADS, (("op_type", op_type), ("definition", definition)), SUFFIX[WORKLOADS])


def trace_file(root: str | Path, author: str, op_type: str, definition: str) -> Path:
    names = (("author", author), ("op_type", op_type), ("definition", definition))
    return _path(root, TRACES, names, SUFFIX[TRACES])


def workload_blob(op_type: str, definition: str, name: str) -> str:
    """Where a workload's own blob goes, relative to the root, as the workload's inputs name it."""
    names = (("op_type", op_type), ("definition", definition), ("name", name))
    _check_names(None, names)
    return f"blob/workloads/{op_type}/{definition}/{name}.safetensors"


def moved(root: str | Path, folder: str, relative: Sequence[str]) -> Path:
    """``root/folder/<relative>``: a file that keeps its place below ``folder`` in another trace set (a merge)."""
    _check_names(root, [(f"{folder}/ path", part) for part in relative])
    return inside(root, Path(root, folder, *relative))


def inside(root: str | Path, path: Path) -> Path:
    """``path``, unchanged, if it lies inside ``root``; TraceSetError otherwise (nothing is written there)."""
    base, target = os.path.abspath(root), os.path.abspath(path)
    if target == base or os.path.commonpath((base, target)) != base:
        raise TraceSetError(path, None, f"is outside {root}, where this writer may write; nothing was written")
    return path


def _check_names(root: str | Path | None, names: Sequence[tuple[str, str]]) -> None:
    for field, value in names:
        problem = name_problem(value)
        if problem is not None:
            raise TraceSetError(root, field, f"{problem}; {NAME_RULE}; no path is made from it")


def _path(root: str | Path, folder: str, names: Sequence[tuple[str, str]], suffix: str) -> Path:
    _check_names(root, names)
    *folders, (_, last) = names
    return inside(root, Path(root, folder, *(value for _, value in folders), last + suffix))


# ------------------------------------------------------------------------------------------------ reading
def files(root: str | Path, folder: str) -> list[Path]:
    """Every file of ``folder`` (at any depth), in path order."""
    base = Path(root) / folder
    return sorted(base.rglob("*" + SUFFIX[folder])) if base.is_dir() else []


def file_inside(root: str | Path | None, relative: str) -> Path | None:
    """The file a workload names by a path relative to the trace set (a blob), or None when that path is
    absolute or climbs out with ``..`` (a ``\\`` counts as a separator, as on the system that wrote it).
    A writer still passes the result through ``inside``."""
    pure = PurePosixPath(relative.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts:
        return None
    return Path(root or ".") / pure


@dataclass(frozen=True)
class Place:
    """What a file's path below its folder says. ``definition`` is the definition it belongs to (a file's stem,
    a solution's folder; None where the path is too short to say); the other names are read only from a path
    at the layout's depth (``exact``); ``author`` and ``solution`` only from a solution's."""

    definition: str | None
    exact: bool
    op_type: str | None = None
    author: str | None = None
    solution: str | None = None


def place(folder: str, relative: Sequence[str]) -> Place:
    """Read ``relative``, the path components below ``folder``, as the layout lays them out."""
    parts = tuple(relative)
    if folder == SOLUTIONS:
        definition = parts[-2] if len(parts) >= 2 else None
    else:
        definition = Path(parts[-1]).stem if parts else None
    if len(parts) != DEPTH[folder]:
        return Place(definition, exact=False)
    if folder == SOLUTIONS:
        return Place(definition, True, op_type=parts[1], author=parts[0], solution=Path(parts[-1]).stem)
    return Place(definition, True, op_type=parts[-2])

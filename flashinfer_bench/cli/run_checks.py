"""What `run` checks before it evaluates anything: that each --local path is a folder (before any worker starts),
that the names in the flags and the config are ones the trace sets hold, and, when there is nothing to
evaluate, why."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flashinfer_bench.bench.config import BenchmarkConfig
    from flashinfer_bench.data import TraceSet

#: Config fields that `run` also takes as flags (the flag wins): a problem there names the flag when it was given.
FLAG_FIELDS = {"definitions": "--definitions", "solutions": "--solutions"}


def missing_folders(paths: Sequence[str]) -> list[str]:
    """An error line for each path that is not a folder: cheap, so that a mistyped --local is reported before
    any worker starts (TraceSet.from_path says the rest once the folder is read)."""
    from flashinfer_bench.data import TraceSet, TraceSetError

    errors = []
    for path in paths:
        if not Path(path).is_dir():
            try:
                TraceSet.from_path(path)  # raises, with the message every command gives for such a path
            except TraceSetError as exc:
                errors.append(str(exc))
    return errors


def name_errors(config: BenchmarkConfig, trace_sets: Sequence[TraceSet], args: argparse.Namespace) -> list[str]:
    """One line per name in the flags or the config that the trace sets do not hold (bench/config.py)."""
    from flashinfer_bench.bench.config_check import name_problems, trace_set_names

    definitions, solutions = trace_set_names(trace_sets)
    roots = ", ".join(str(ts.root) for ts in trace_sets)
    config_file = args.config or "the bundled eval_config.yaml"
    errors = []
    for problem in name_problems(config, definitions, solutions):
        flag = FLAG_FIELDS.get(problem.field)
        where = flag if flag and getattr(args, problem.field) is not None else f"{config_file}: field '{problem.field}'"

        errors.append(f"{where}: {problem.message} ({roots})")
    return errors


def why_nothing_to_run(trace_set: TraceSet, config: BenchmarkConfig, resume: bool) -> str:
    """Why a trace set gives no (solution, workload) pair to evaluate, in one line."""
    root = trace_set.root
    chosen = [name for name in trace_set.definitions if config.definitions is None or name in config.definitions]
    if not trace_set.definitions:
        return f"{root}/definitions holds no definition"
    with_solutions = [name for name in chosen if any(config.solutions is None or s.name in config.solutions
                                                     for s in trace_set.solutions.get(name, []))]
    if not with_solutions:
        if not any(trace_set.solutions.values()):
            return (f"{root}/solutions holds no solution (the public dataset ships without them): add yours under "
                    "solutions/<author>/<op_type>/<definition>/<name>.json (docs/solutions.md)")
        return "no solution of the chosen definitions matches --solutions / the config's solutions"
    if not any(trace_set.workloads.get(name) for name in with_solutions):
        return f"{root}/workloads holds no workload for the definitions that have solutions"
    if resume:
        return "every (solution, workload) pair already has a trace (--resume skips them)"
    return "no (solution, workload) pair was chosen"

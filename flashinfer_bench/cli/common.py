"""What the commands share: exit statuses, the run flags that override the config, loading the config, and reporting
what could not be loaded."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flashinfer_bench.bench.config import BenchmarkConfig

#: When the command started, so that `run`'s last line counts the start-up too.
STARTED = time.monotonic()
EXIT_PROBLEMS_FOUND = 1
EXIT_BAD_INPUT = 2
#: As a shell reports a process ended by SIGINT.
EXIT_INTERRUPTED = 130

#: CLI flag -> BenchmarkConfig field
RUN_OVERRIDES = {
    "definitions": "definitions",
    "solutions": "solutions",
    "rtol": "rtol",
    "atol": "atol",
    "iterations": "iterations",
    "warmup_runs": "warmup_runs",
    "num_trials": "num_trials",
    "timeout": "timeout_seconds",
    "use_isolated_runner": "use_isolated_runner",
    "ray_address": "ray_address",
}


def report_problems(problems: Sequence[Exception | str], skipped_lines: Sequence[Exception] = ()) -> int:
    """Print what could not be loaded, one line each; returns how many input files (or lines) had problems.
    Skipped result lines are printed as warnings and not counted: result files are the tool's own output."""
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    for problem in skipped_lines:
        print(f"warning: skipped a result line: {problem}", file=sys.stderr)
    return len(problems)


def load_config(args: argparse.Namespace) -> BenchmarkConfig:
    from flashinfer_bench.bench import BenchmarkConfig

    overrides = {field: getattr(args, flag) for flag, field in RUN_OVERRIDES.items()}
    if args.config:
        return BenchmarkConfig.from_yaml(args.config, **overrides)
    return BenchmarkConfig.default(**overrides)

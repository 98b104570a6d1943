"""`flashinfer-bench run`: the names checked, each trace set benchmarked with progress, a table per definition.

Exit status: 2 for input that cannot be used (a file of a trace set, reported in one line each while the rest
runs; a name in the flags or the config that the trace sets do not hold, before anything runs); with
--fail-on-failure, 1 when an evaluation of this run did not pass; else 0.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING

from flashinfer_bench.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_PROBLEMS_FOUND,
    load_config,
    report_problems,
)

if TYPE_CHECKING:
    from rich.console import Console

    from flashinfer_bench.bench.config import BenchmarkConfig
    from flashinfer_bench.bench.runner.base import Runner


def stop_at_once_on_a_second_interrupt() -> None:
    """The first Ctrl-C stops the run cleanly (a KeyboardInterrupt: no verdict is recorded after it, and the judges
    and workers are stopped, which can take seconds); a second one ends this process at once. Nothing is half
    written either way: every trace line is one append, and none is made after the first."""

    def second(signum: int, frame: object) -> None:
        os.write(2, b"interrupted again: stopped at once; traces already written are kept\n")
        os._exit(EXIT_INTERRUPTED)

    def first(signum: int, frame: object) -> None:
        signal.signal(signal.SIGINT, second)
        os.write(2, b"interrupted: stopping the run (Ctrl-C again to stop at once)\n")
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, first)


def command_run(args: argparse.Namespace, console: Console, *, started: float) -> int:
    logging.basicConfig(level=args.log_level, format="%(levelname)s %(name)s: %(message)s")
    stop_at_once_on_a_second_interrupt()
    config = load_config(args)
    if config.cluster_address() is None:
        from flashinfer_bench.bench.runner.server import start_worker_server

        start_worker_server()  # before torch is imported here, so that the two imports overlap
    cluster_runner = start_cluster_runner(config)
    try:
        return run_trace_sets(args, console, config, cluster_runner, started)
    finally:
        if cluster_runner is not None:
            cluster_runner.close()


def start_cluster_runner(config: BenchmarkConfig) -> Runner | None:
    """On a Ray cluster, the runner of the first trace set, started before anything heavy is imported or read: its
    device hosts (a Ray worker, a device process, a judge on each device) start while this process imports torch and
    reads the trace sets, as a local run's worker server does. None for a local run (each trace set's Benchmark
    starts its runner: ``default_runner``, which asks the same ``config.cluster_address()``)."""
    if config.cluster_address() is None:
        return None
    from flashinfer_bench.bench.benchmark import default_runner

    return default_runner(config)


def run_trace_sets(args: argparse.Namespace, console: Console, config: BenchmarkConfig,
                   cluster_runner: Runner | None, started: float) -> int:
    from flashinfer_bench.bench import Benchmark
    from flashinfer_bench.cli.progress import TerminalProgress
    from flashinfer_bench.cli.report import print_tables, summary_tables
    from flashinfer_bench.cli.run_checks import name_errors, why_nothing_to_run
    from flashinfer_bench.data import TraceSet
    from flashinfer_bench.report.summary import PASSED, summarize

    trace_sets = [TraceSet.from_path(path) for path in args.local]
    bad_names = name_errors(config, trace_sets, args)
    if bad_names:
        report_problems(bad_names)
        return EXIT_BAD_INPUT
    problems = failed = 0
    for index, trace_set in enumerate(trace_sets):
        console.print(f"trace set {trace_set.root}", highlight=False)
        problems += report_problems(trace_set.problems, trace_set.trace_problems)
        # The runner started ahead serves the first trace set; the next ones start their own (on a cluster, once
        # its device hosts have gone: closing is idempotent).
        ahead = cluster_runner if index == 0 else None
        factory = (lambda _, runner=ahead: runner) if ahead is not None else None
        # The names were checked above, over all the trace sets: one need not be in each.
        benchmark = Benchmark(trace_set, config, runner_factory=factory, check_names=False)
        expected = benchmark.work_items(resume=args.resume)
        if not expected:
            console.print(f"nothing to evaluate: {why_nothing_to_run(trace_set, config, args.resume)}",
                          highlight=False)
            continue
        benchmark.progress = TerminalProgress(expected=[(item.definition.name, item.solution.name) for item in expected],
                                              started=started if index == 0 else None)
        result = benchmark.run_all(save_results=args.save_results, resume=args.resume)
        if ahead is not None:
            ahead.close()
        new_traces = list(benchmark.iter_new_traces(result))
        failed += sum(t.evaluation is not None and t.evaluation.status.value != PASSED for t in new_traces)
        authors = {s.name: s.author for solutions in trace_set.solutions.values() for s in solutions}
        print_tables(console, summary_tables(summarize(new_traces, authors)))
    if problems:
        print(f"error: {problems} file(s) or line(s) could not be loaded (listed above); the rest was run",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    if failed and args.fail_on_failure:
        print(f"failure: {failed} evaluation(s) of this run did not pass (listed above)", file=sys.stderr)
        return EXIT_PROBLEMS_FOUND
    return 0

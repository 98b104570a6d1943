"""`flashinfer-bench`: run trace-set benchmarks, summarise results, and the routine benchmark.

Flags of `run` mirror BenchmarkConfig's fields; they are applied on top of the YAML (bundled or --config).
Bad input is reported in one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

EXIT_BAD_INPUT = 2

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
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flashinfer-bench", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="benchmark every (definition, solution, workload) of trace sets")
    run.add_argument("--local", nargs="+", required=True, metavar="PATH", help="trace-set folder(s)")
    run.add_argument("--config", metavar="YAML", help="config file replacing the bundled eval_config.yaml")
    run.add_argument("--definitions", nargs="+", metavar="NAME", help="only these definitions")
    run.add_argument("--solutions", nargs="+", metavar="NAME", help="only these solutions")
    run.add_argument("--rtol", type=float, help="relative tolerance")
    run.add_argument("--atol", type=float, help="absolute tolerance")
    run.add_argument("--iterations", type=int, help="timed calls per trial")
    run.add_argument("--warmup-runs", type=int, help="warm-up calls before timing")
    run.add_argument("--num-trials", type=int, help="independent input draws per workload")
    run.add_argument("--timeout", type=int, help="per-workload timeout in seconds")
    run.add_argument("--use-isolated-runner", action="store_true", default=None,
                     help="a fresh process per (solution, workload)")
    run.add_argument("--resume", action="store_true", help="skip (solution, workload) pairs already traced")
    run.add_argument("--save-results", action=argparse.BooleanOptionalAction, default=True,
                     help="append traces to traces/<op_type>/<definition>.jsonl as they are produced")
    run.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])

    for name, text in (("summary", "per-definition table of results"), ("best", "best solution per definition")):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("--local", nargs="+", required=True, metavar="PATH", help="trace-set folder(s)")

    routine = commands.add_parser("routine", help="the routine benchmark (same flags as benchmarks/flashinfer_benchmark.py)",
                                  add_help=False)
    routine.add_argument("routine_args", nargs=argparse.REMAINDER)
    return parser


def load_config(args: argparse.Namespace):
    from flashinfer_bench.bench import BenchmarkConfig

    overrides = {field: getattr(args, flag) for flag, field in RUN_OVERRIDES.items()}
    if args.config:
        return BenchmarkConfig.from_yaml(args.config, **overrides)
    return BenchmarkConfig.default(**overrides)


def command_run(args: argparse.Namespace, console: Console) -> int:
    from flashinfer_bench.bench import Benchmark
    from flashinfer_bench.bench.summary import summarize
    from flashinfer_bench.cli.report import TerminalProgress, summary_tables

    logging.basicConfig(level=args.log_level, format="%(levelname)s %(name)s: %(message)s")
    from flashinfer_bench.data import TraceSet

    config = load_config(args)
    trace_sets = [TraceSet.from_path(path) for path in args.local]
    for trace_set in trace_sets:
        console.print(f"trace set {trace_set.root}", highlight=False)
        benchmark = Benchmark(trace_set, config, progress=TerminalProgress())
        result = benchmark.run_all(save_results=args.save_results, resume=args.resume)
        new_traces = list(benchmark.iter_new_traces(result))
        for table in summary_tables(summarize(new_traces)):
            console.print(table)
    return 0


def command_summary(args: argparse.Namespace, console: Console, *, best: bool) -> int:
    from flashinfer_bench.bench.summary import summarize
    from flashinfer_bench.cli.report import best_table, summary_tables
    from flashinfer_bench.data import TraceSet

    for path in args.local:
        trace_set = TraceSet.from_path(path)
        summaries = summarize(t for traces in trace_set.traces.values() for t in traces)
        if not summaries:
            console.print(f"{path}: no result traces yet (run `flashinfer-bench run --local {path}`)", highlight=False)
            continue
        for table in [best_table(summaries)] if best else summary_tables(summaries):
            console.print(table)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["routine"]:
        from flashinfer_bench.routines.cli import main as routine_main

        return routine_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "run":
        from flashinfer_bench.bench.runner.server import start_worker_server

        start_worker_server()  # first, so its imports (torch, ...) overlap with this process's own
    from rich.console import Console

    from flashinfer_bench.data import TraceSetError

    # Off a terminal rich would wrap at 80 columns; long definition and solution names stay whole in logs.
    console = Console() if sys.stdout.isatty() else Console(width=200)
    try:
        if args.command == "run":
            return command_run(args, console)
        return command_summary(args, console, best=args.command == "best")
    except TraceSetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted: traces already written are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""`flashinfer-bench`: run trace-set benchmarks, report and validate trace sets, and the routine benchmark.

Flags of `run` mirror BenchmarkConfig's fields; they are applied on top of the YAML (bundled or --config).
Bad input is reported in one line and exits with status 2; a file that cannot be loaded is reported in one
line each, the rest is used, and the command then exits with status 2. `validate` exits 1 when it finds
problems, `report compare --fail-on-regression` when a result regressed, `run --fail-on-failure` when an
evaluation did not pass.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from flashinfer_bench.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_PROBLEMS_FOUND,
    STARTED,
    load_config,
    report_problems,
)

if TYPE_CHECKING:
    from rich.console import Console

    from flashinfer_bench.report.sources import Run

__all__ = ["build_parser", "load_config", "main"]

def _add_local(parser: argparse.ArgumentParser, what: str = "trace-set folder(s)") -> None:
    # `--local A B` and upstream's repeated `--local A --local B` both work.
    parser.add_argument("--local", nargs="+", action="extend", required=True, metavar="PATH", help=what)


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage (a number), got '{text}'") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a percentage of 0 or more, got '{text}'")
    return value


def _add_noise_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--min-change", type=_percent, metavar="PCT",
                        help="smallest change in latency called FASTER or SLOWER, however quiet both runs were "
                             "(default: 1)")
    parser.add_argument("--default-noise", type=_percent, metavar="PCT",
                        help="noise assumed for a latency recorded without its spread (default: 5)")


def _noise_options(args: argparse.Namespace) -> dict[str, float]:
    """compare_runs' keyword arguments from --min-change and --default-noise (percentages; unset: its defaults)."""
    chosen = {"min_change": args.min_change, "default_noise": args.default_noise}
    return {name: value / 100 for name, value in chosen.items() if value is not None}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flashinfer-bench", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="benchmark every (definition, solution, workload) of trace sets")
    _add_local(run)
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
    run.add_argument("--ray-address", nargs="?", const="auto", metavar="ADDRESS",
                     help="run on this running Ray cluster: HOST:PORT, or 'auto' (the default when the flag is "
                          "given alone: $RAY_ADDRESS, else the cluster started here with `ray start`); without the "
                          "flag, $RAY_ADDRESS if set, else this machine's devices (docs/scaling.md)")
    run.add_argument("--save-results", action=argparse.BooleanOptionalAction, default=True,
                     help="append traces to traces/<author>/<op_type>/<definition>.jsonl as they are produced")
    run.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    run.add_argument("--fail-on-failure", action="store_true",
                     help="exit 1 when an evaluation of this run did not pass (for CI)")

    report = commands.add_parser("report", help="summarise, rank or merge stored results")
    reports = report.add_subparsers(dest="report_command", required=True)
    for name, text in (("summary", "per-definition table of results"), ("best", "best solution per definition")):
        for sub in (reports.add_parser(name, help=text), commands.add_parser(name, help=f"{text} (= report {name})")):
            _add_local(sub, "trace-set folder(s) or .jsonl trace file(s)")
    visualize = reports.add_parser("visualize", help="write one self-contained HTML file: latency and speed-up per "
                                   "workload, every status, fast_p and win@p, the environment")
    _add_local(visualize, "trace-set folder(s) or .jsonl trace file(s)")
    visualize.add_argument("-o", "--output", default="report.html", metavar="HTML",
                           help="the file to write (default: report.html)")
    visualize.add_argument("--baseline", metavar="PATH",
                           help="another run (trace-set folder or .jsonl trace file) to compare these results with")
    _add_noise_options(visualize)
    compare = reports.add_parser("compare", help="compare two runs evaluation by evaluation, within their noise")
    compare.add_argument("base", metavar="BASE", help="the earlier run: a trace-set folder or a .jsonl trace file")
    compare.add_argument("candidate", metavar="CANDIDATE", help="the later run, likewise")
    compare.add_argument("--fail-on-regression", type=_percent, metavar="PCT",
                         help="exit 1 when an evaluation got SLOWER by more than PCT percent, or stopped passing")
    compare.add_argument("--changes-only", action="store_true",
                         help="list only the evaluations that got faster, slower or changed status")
    _add_noise_options(compare)
    merge = reports.add_parser("merge", help="merge trace sets into a new folder")
    _add_local(merge)
    merge.add_argument("--output", required=True, metavar="PATH", help="the new folder to write (must not hold anything)")

    validate = commands.add_parser("validate", help="check a trace set's layout, definitions, workloads, blobs, "
                                   "solutions and traces; exit 1 if anything is wrong")
    validate.add_argument("--dataset", required=True, metavar="PATH", help="the trace-set folder")
    validate.add_argument("--checks", metavar="LIST", help="comma-separated subset of: layout, definition, "
                          "workload, solution, trace (default: all)")
    validate.add_argument("--op-types", nargs="+", default=[], metavar="OP_TYPE", help="only these op types")
    validate.add_argument("--definitions", nargs="+", default=[], metavar="NAME", help="only these definitions")
    validate.add_argument("--disable-gpu", action="store_true",
                          help="accepted for upstream's command line; no check here needs a GPU")

    from flashinfer_bench.cli.serve import add_commands

    add_commands(commands, run)
    routine = commands.add_parser("routine", help="the routine benchmark (same flags as benchmarks/flashinfer_benchmark.py)",
                                  add_help=False)
    routine.add_argument("routine_args", nargs=argparse.REMAINDER)
    return parser


def load_reported(paths: Sequence[str]) -> tuple[Run, int]:
    """The result traces under ``paths`` (a spinner meanwhile on a terminal), with their problems printed."""
    from flashinfer_bench.cli.report import working
    from flashinfer_bench.report.sources import load_run

    with working(f"loading {', '.join(paths)}"):
        run = load_run(paths)
    return run, report_problems(run.problems, run.warnings)


def command_summary(args: argparse.Namespace, console: Console, *, best: bool) -> int:
    from flashinfer_bench.cli.report import author_table, best_table, print_tables, summary_tables
    from flashinfer_bench.report.summary import summarize, summarize_authors

    problems = 0
    for path in args.local:
        run, found = load_reported([path])
        problems += found
        summaries = summarize(run.traces, run.authors)
        if not summaries:
            console.print(f"{path}: no result traces yet (run `flashinfer-bench run --local {path}`)", highlight=False)
            continue
        if best:
            print_tables(console, [best_table(summaries)])
            continue
        print_tables(console, [*summary_tables(summaries), author_table(summarize_authors(run.traces, run.authors))])
    return EXIT_BAD_INPUT if problems else 0


def command_visualize(args: argparse.Namespace, console: Console) -> int:
    from flashinfer_bench.cli.report import working
    from flashinfer_bench.report.compare import compare_runs
    from flashinfer_bench.report.html import write_page
    from flashinfer_bench.report.payload import build_payload
    from flashinfer_bench.report.results import results

    run, problems = load_reported(args.local)
    baseline = None
    if args.baseline:
        baseline, found = load_reported([args.baseline])
        problems += found
    with working(f"analysing {len(run.traces)} result traces"):
        records = results(run.traces, run.authors)
        comparison = None
        if baseline is not None:
            comparison = compare_runs(results(baseline.traces, baseline.authors), records, **_noise_options(args))
        payload = build_payload(run, records, comparison=comparison, baseline_label=args.baseline)
    try:
        path = write_page(payload, args.output)
    except OSError as exc:
        print(f"error: {args.output}: cannot be written: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    counts = payload["counts"]
    console.print(f"wrote {path}: {counts['evaluations']} evaluations of {counts['definitions']} definitions"
                  + (f", compared with {args.baseline}" if baseline is not None else ""), highlight=False)
    return EXIT_BAD_INPUT if problems else 0


def command_compare(args: argparse.Namespace, console: Console) -> int:
    from flashinfer_bench.cli.report import comparison_notes, comparison_tables, print_tables, working
    from flashinfer_bench.report.compare import compare_runs
    from flashinfer_bench.report.results import results

    base, problems = load_reported([args.base])
    candidate, found = load_reported([args.candidate])
    problems += found
    with working("comparing"):
        comparison = compare_runs(results(base.traces, base.authors), results(candidate.traces, candidate.authors),
                                  **_noise_options(args))
    print_tables(console, comparison_tables(comparison, changes_only=args.changes_only))
    for note in comparison_notes(comparison):
        console.print(note, highlight=False)
    if problems:
        return EXIT_BAD_INPUT
    if args.fail_on_regression is not None:
        regressions = comparison.regressions(args.fail_on_regression)
        if regressions:
            print(f"regression: {len(regressions)} evaluation(s) got SLOWER by more than {args.fail_on_regression:g}% "
                  "beyond the noise, or stopped passing (listed above)", file=sys.stderr)
            return EXIT_PROBLEMS_FOUND
    return 0


def command_merge(args: argparse.Namespace, console: Console) -> int:
    from flashinfer_bench.data.merge import merge_trace_sets

    report = merge_trace_sets(args.local, args.output)
    for problem in report.problems:
        print(f"error: {problem}", file=sys.stderr)
    console.print(f"merged {len(args.local)} trace set(s) into {args.output}: {report.definitions} definitions, "
                  f"{report.solutions} solutions, {report.workloads} workloads, {report.traces} traces "
                  f"({report.duplicate_traces} duplicate lines written once)", highlight=False)
    return EXIT_BAD_INPUT if report.problems else 0


def command_validate(args: argparse.Namespace, console: Console) -> int:
    from flashinfer_bench.cli.report import working
    from flashinfer_bench.data.validate import CHECKS, render_text, validate_trace_set

    checks = [c.strip() for c in args.checks.split(",") if c.strip()] if args.checks else list(CHECKS)
    with working(f"validating {args.dataset}"):
        report = validate_trace_set(args.dataset, checks=checks, op_types=args.op_types, definitions=args.definitions)
    print(render_text(report))
    return EXIT_PROBLEMS_FOUND if report.errors else 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["routine"]:
        from flashinfer_bench.routines.cli import main as routine_main

        return routine_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.command in ("serve", "submit"):
        from flashinfer_bench.cli.serve import main as serve_main

        return serve_main(args)
    if args.command == "run":
        from flashinfer_bench.cli.run_checks import missing_folders

        if report_problems(missing_folders(args.local)):  # before any worker starts
            return EXIT_BAD_INPUT
    from rich.console import Console

    from flashinfer_bench.bench.runner.ray.cluster import RayClusterError
    from flashinfer_bench.data import TraceSetError

    # Off a terminal rich would wrap at 80 columns; long definition and solution names stay whole in logs, unless
    # $COLUMNS says how wide the output may be. Names are printed as text, never as markup (cli/report.py).
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else 200
    console = Console(width=width, markup=False)
    try:
        if args.command == "run":
            from flashinfer_bench.cli.run import command_run

            return command_run(args, console, started=STARTED)
        if args.command == "validate":
            return command_validate(args, console)
        if args.command == "report" and args.report_command == "merge":
            return command_merge(args, console)
        if args.command == "report" and args.report_command == "visualize":
            return command_visualize(args, console)
        if args.command == "report" and args.report_command == "compare":
            return command_compare(args, console)
        report_command = args.report_command if args.command == "report" else args.command
        return command_summary(args, console, best=report_command == "best")
    except (TraceSetError, RayClusterError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted: traces already written are kept; `--resume` runs what has no verdict", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())

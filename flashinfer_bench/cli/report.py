"""Rendering summaries and progress for the terminal (rich tables; plain lines when not on a terminal)."""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from flashinfer_bench.bench.summary import SolutionSummary, best_solutions
from flashinfer_bench.data import Trace


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def summary_tables(summaries: dict[str, dict[str, SolutionSummary]]) -> list[Table]:
    tables = []
    for definition, by_solution in sorted(summaries.items()):
        table = Table(title=definition, title_justify="left")
        for column in ("solution", "passed", "statuses", "mean latency (ms)", "mean speedup"):
            table.add_column(column, justify="right" if column != "solution" and column != "statuses" else "left")
        for name, summary in sorted(by_solution.items()):
            statuses = ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items()))
            table.add_row(name, f"{summary.passed}/{summary.evaluated}", statuses,
                          _fmt(summary.mean_latency_ms, 4), _fmt(summary.mean_speedup, 2) + ("x" if summary.mean_speedup else ""))
        tables.append(table)
    return tables


def best_table(summaries: dict[str, dict[str, SolutionSummary]]) -> Table:
    table = Table(title="best solution per definition", title_justify="left")
    for column in ("definition", "solution", "workloads passed", "mean speedup"):
        table.add_column(column)
    for definition, best in sorted(best_solutions(summaries).items()):
        if best is None:
            table.add_row(definition, "(none passed every workload)", "-", "-")
        else:
            table.add_row(definition, best.solution, f"{best.passed}/{best.evaluated}", f"{best.mean_speedup:.2f}x")
    return table


class TerminalProgress:
    """A progress bar with an ETA on a terminal; one plain line per verdict otherwise."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.interactive = self.console.is_terminal and sys.stderr.isatty()
        self.progress: Progress | None = None
        self.task = None
        self.total = 0
        self.done = 0
        self.started = 0.0

    def start(self, total: int) -> None:
        self.total, self.done, self.started = total, 0, time.monotonic()
        if self.interactive:
            self.progress = Progress(TextColumn("[bold]evaluating"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                                     console=self.console, transient=True)
            self.progress.start()
            self.task = self.progress.add_task("evaluating", total=total)
        else:
            self.console.print(f"evaluating {total} (solution, workload) pairs", highlight=False)

    def advance(self, trace: Trace) -> None:
        self.done += 1
        evaluation = trace.evaluation
        assert evaluation is not None
        speed = ""
        if evaluation.performance is not None:
            speed = f" {evaluation.performance.latency_ms:.4f} ms ({evaluation.performance.speedup_factor:.2f}x)"
        line = (f"[{self.done}/{self.total}] {trace.definition} / {trace.solution} / "
                f"{trace.workload.uuid[:8]}: {evaluation.status.value}{speed}")
        if self.progress is not None:
            self.progress.console.print(line, highlight=False, soft_wrap=True)
            self.progress.advance(self.task)
        else:
            self.console.print(line, highlight=False, soft_wrap=True)

    def finish(self) -> None:
        if self.progress is not None:
            self.progress.stop()
        elapsed = time.monotonic() - self.started
        self.console.print(f"done: {self.done} evaluations in {elapsed:.1f} s", highlight=False)

"""Rendering summaries, comparisons and progress for the terminal (rich tables; plain lines when not on a
terminal)."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from flashinfer_bench.data import Trace
from flashinfer_bench.report.compare import (
    FALSE_CALL_RATE,
    FASTER,
    SAME,
    SLOWER,
    Comparison,
    Match,
    reading_order,
)
from flashinfer_bench.report.summary import AuthorSummary, SolutionSummary, Tally, best_solutions


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


STAT_COLUMNS = ("success", "mean speedup", "geomean speedup", "fast_1", "fast_2", "win rate")


def _stat_cells(tally: Tally) -> list[str]:
    return [_pct(tally.success_rate), _times(tally.mean_speedup), _times(tally.geomean_speedup),
            _pct(tally.fast_p(1.0)), _pct(tally.fast_p(2.0)), _pct(tally.win_rate)]


def summary_tables(summaries: dict[str, dict[str, SolutionSummary]]) -> list[Table]:
    tables = []
    for definition, by_solution in sorted(summaries.items()):
        table = Table(title=definition, title_justify="left")
        for column in ("solution", "author", "passed", "statuses", "mean latency (ms)", *STAT_COLUMNS):
            table.add_column(column, justify="left" if column in ("solution", "author", "statuses") else "right")
        for name, summary in sorted(by_solution.items()):
            statuses = ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items()))
            table.add_row(name, summary.author, f"{summary.passed}/{summary.evaluated}", statuses,
                          _fmt(summary.mean_latency_ms, 4), *_stat_cells(summary))
        tables.append(table)
    return tables


def author_table(summaries: dict[str, AuthorSummary]) -> Table:
    table = Table(title="per author", title_justify="left")
    for column in ("author", "definitions", "passed", *STAT_COLUMNS):
        table.add_column(column, justify="left" if column == "author" else "right")
    for author, summary in sorted(summaries.items()):
        table.add_row(author, str(len(summary.definitions)), f"{summary.passed}/{summary.evaluated}",
                      *_stat_cells(summary))
    return table


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


_VERDICT_STYLE = {FASTER: "green", SLOWER: "bold red"}


def _verdict_cell(match: Match) -> str:
    if match.verdict is not None:
        style = _VERDICT_STYLE.get(match.verdict)
        return f"[{style}]{match.verdict}[/]" if style else match.verdict
    if not match.status_changed:
        return match.candidate.status
    style = "bold red" if match.broke else "green" if match.candidate.status == "PASSED" else "yellow"
    return f"[{style}]{match.base.status} -> {match.candidate.status}[/]"


def comparison_tables(comparison: Comparison, *, changes_only: bool = False) -> list[Table]:
    """Per definition, each matched evaluation (or only those that changed): both latencies, the ratio, the noise
    it had to exceed and the verdict; then the geometric means per definition."""
    tables = []
    for definition, compared in sorted(comparison.definitions.items()):
        shown = [m for m in reading_order(compared.matches)
                 if not changes_only or m.status_changed or m.verdict in (FASTER, SLOWER)]
        if not shown:
            continue
        table = Table(title=definition, title_justify="left")
        for column in ("solution", "workload", "base (ms)", "candidate (ms)", "ratio", "same within", "verdict"):
            table.add_column(column, justify="left" if column in ("solution", "workload", "verdict") else "right")
        for match in shown:
            axes = ", ".join(f"{k}={v}" for k, v in sorted(match.base.axes.items())) or match.base.workload[:8]
            noise = "-" if match.band is None else _band(match.band) + ("*" if match.assumed_noise else "") + (
                "†" if match.judge_bounded else "")
            table.add_row(match.base.solution, axes, _fmt(match.base.latency_ms, 4),
                          _fmt(match.candidate.latency_ms, 4), _times(match.ratio), noise, _verdict_cell(match))
        tables.append(table)
    summary = Table(title="geometric mean of candidate / base latency per definition", title_justify="left")
    for column in ("definition", "geomean ratio", "timed", "faster", "same", "slower", "status changes"):
        summary.add_column(column, justify="left" if column == "definition" else "right")
    for definition, compared in sorted(comparison.definitions.items()):
        verdicts = compared.verdicts
        summary.add_row(definition, _times(compared.geomean_ratio), str(len(compared.timed)), str(verdicts[FASTER]),
                        str(verdicts[SAME]), str(verdicts[SLOWER]), str(len(compared.status_changes)))
    tables.append(summary)
    return tables


def _band(band: tuple[float, float]) -> str:
    """The ratios between which a match is SAME: "0.91-1.10x", ">= 0.91x" when nothing bounds it above, "any" when
    nothing bounds it either way."""
    low, high = band
    if math.isinf(high):
        return "any" if low <= 0 else f">= {low:.2f}x"
    return f"{low:.2f}-{high:.2f}x"


def comparison_notes(comparison: Comparison) -> list[str]:
    """What a reader of the tables must know: unmatched evaluations, noise that was assumed, latencies that the
    judge's clock set."""
    timed = sum(m.ratio is not None for m in comparison.matches)
    notes = [f"matched {len(comparison.matches)} evaluations by (definition, solution, workload); "
             f"{len(comparison.only_base)} only in the base run, {len(comparison.only_candidate)} only in the "
             f"candidate; a change is called beyond both runs' noise and their drift (±"
             f"{100 * comparison.drift:.1f}% for one evaluation, measured over the evaluations timed in both) "
             f"combined, at {comparison.z:.2f} standard deviations so that the {timed} timed evaluations together "
             f"are called wrongly with a chance of at most {100 * FALSE_CALL_RATE:g}%, and at least "
             f"{100 * comparison.min_change:g}%"]
    if comparison.assumed_noise:
        notes.append(f"* {comparison.assumed_noise} timed evaluation(s) had a side that recorded no spread: its "
                     f"noise is assumed to be ±{100 * comparison.default_noise:g}% (--default-noise)")
    if comparison.judge_bounded:
        notes.append(f"† {comparison.judge_bounded} timed evaluation(s) had a side whose latency the judge's clock set "
                     "(its timing claim was not believed; see its log): a bound that moves with the host's speed, so "
                     "no change is called and it takes no part in the drift")
    return notes


@contextmanager
def working(description: str, console: Console | None = None) -> Iterator[None]:
    """A spinner with the elapsed time while a long step runs, on a terminal; nothing otherwise."""
    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True) as progress:
        progress.add_task(description, total=None)
        yield


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

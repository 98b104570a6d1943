"""Rendering summaries and comparisons for the terminal (rich tables), and a spinner for long steps.

Every name, path and log excerpt from a trace set goes into a table as ``rich.text.Text``, never as markup: a
solution named ``[/]`` or ``[bold red]x`` is printed as it is written. Name columns fold a name too long for the
terminal onto more lines instead of cutting it, and solutions are labelled by what sets them apart
(report/labels.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from flashinfer_bench.report.compare import (
    FALSE_CALL_RATE,
    FASTER,
    SAME,
    SLOWER,
    Comparison,
    Match,
    reading_order,
)
from flashinfer_bench.report.labels import prefix_note, short_labels
from flashinfer_bench.report.results import Result
from flashinfer_bench.report.summary import AuthorSummary, SolutionSummary, Tally, best_solutions

__all__ = ["author_table", "best_table", "comparison_notes", "comparison_tables",
           "print_tables", "summary_tables", "working"]

#: Marks a latency that the judge's clock set: the solution's own timing claim was not believed.
JUDGE_MARK = "\u2020"
JUDGE_NOTE = (f"{JUDGE_MARK} a latency the judge's clock set in at least one trial: the solution's own timing was "
              "not believed (the trace's log says why); a bound that moves with the host's speed, not a measurement")


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _table(title: str, columns: dict[str, str], *, caption: str | None = None) -> Table:
    """A table titled ``title`` (as text) with ``columns`` (name -> "name" for a column of names, which folds a
    long one onto more lines, "left" or "right")."""
    table = Table(title=Text(title), title_justify="left", caption=Text(caption) if caption else None,
                  caption_justify="left")
    for column, kind in columns.items():
        if kind == "name":
            table.add_column(column, justify="left", overflow="fold")
        else:
            table.add_column(column, justify=kind)
    return table


#: The narrowest a column of names gets before the table grows wider than the terminal: a longer name is folded.
NAME_MIN_WIDTH = 16


def print_tables(console: Console, tables: Iterable[Table]) -> None:
    """Print each table so that no number or status is cut: a table wider than the terminal gets its value
    columns at the width of their widest value (headers wrap at spaces) and its name columns fold their names
    (never cut) down to NAME_MIN_WIDTH; one that needs more than the terminal's width even so is printed wider
    (the terminal wraps its lines) rather than cropped."""
    for table in tables:
        natural = needed = len(table.columns) * 3 + 1  # padding either side of each column, and the borders
        for column in table.columns:
            widest = max((_cell_len(cell) for cell in column.cells), default=1)
            natural += max(widest, _cell_len(column.header))
            widest_word = max((len(word) for word in str(column.header).split()), default=1)
            fold = column.overflow == "fold"
            column.min_width = max(widest_word, min(widest, NAME_MIN_WIDTH) if fold else widest)
            needed += column.min_width
        if natural > console.width:
            for column in table.columns:
                if column.overflow != "fold":
                    column.width = column.min_width
        width = console.width
        console.width = max(width, needed)  # Console.print's own width argument cannot exceed the console's
        try:
            console.print(table, crop=False)
        finally:
            console.width = width


def _cell_len(cell: object) -> int:
    return cell.cell_len if isinstance(cell, Text) else Text(str(cell)).cell_len


STAT_COLUMNS = ("success", "mean speedup", "geomean speedup", "fast_1", "fast_2", "win rate")


def _stat_cells(tally: Tally) -> list[str]:
    return [_pct(tally.success_rate), _times(tally.mean_speedup), _times(tally.geomean_speedup),
            _pct(tally.fast_p(1.0)), _pct(tally.fast_p(2.0)), _pct(tally.win_rate)]


def _captions(*notes: str | None) -> str | None:
    return "\n".join(note for note in notes if note) or None


def summary_tables(summaries: dict[str, dict[str, SolutionSummary]]) -> list[Table]:
    """Per definition, a row per solution; a mean latency that includes latencies the judge's clock set is
    marked (JUDGE_MARK) and the caption says how many."""
    tables = []
    for definition, by_solution in sorted(summaries.items()):
        labels, prefix = short_labels(sorted(by_solution), definition)
        judge_set = sum(summary.judge_set for summary in by_solution.values())
        judge_note = (f"{JUDGE_NOTE} ({judge_set} evaluation(s) here)" if judge_set else None)
        table = _table(definition, {"solution": "name", "author": "name", "passed": "right", "statuses": "left",
                                    "mean latency (ms)": "right", **dict.fromkeys(STAT_COLUMNS, "right")},
                       caption=_captions(prefix_note(prefix, definition), judge_note))
        for name, summary in sorted(by_solution.items()):
            statuses = ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items()))
            latency = _fmt(summary.mean_latency_ms, 4) + (JUDGE_MARK if summary.judge_set else "")
            table.add_row(Text(labels[name]), Text(summary.author), f"{summary.passed}/{summary.evaluated}",
                          statuses, latency, *_stat_cells(summary))
        tables.append(table)
    return tables


def author_table(summaries: dict[str, AuthorSummary]) -> Table:
    table = _table("per author", {"author": "name", "definitions": "right", "passed": "right",
                                  **dict.fromkeys(STAT_COLUMNS, "right")})
    for author, summary in sorted(summaries.items()):
        table.add_row(Text(author), str(len(summary.definitions)), f"{summary.passed}/{summary.evaluated}",
                      *_stat_cells(summary))
    return table


def best_table(summaries: dict[str, dict[str, SolutionSummary]]) -> Table:
    best = best_solutions(summaries)
    judge_note = JUDGE_NOTE if any(b is not None and b.judge_set for b in best.values()) else None
    table = _table("best solution per definition", {"definition": "name", "solution": "name",
                                                     "workloads passed": "right", "mean speedup": "right"},
                   caption=judge_note)
    for definition, chosen in sorted(best.items()):
        if chosen is None:
            table.add_row(Text(definition), "(none passed every workload)", "-", "-")
        else:
            table.add_row(Text(definition), Text(chosen.solution), f"{chosen.passed}/{chosen.evaluated}",
                          f"{chosen.mean_speedup:.2f}x" + (JUDGE_MARK if chosen.judge_set else ""))
    return table


_VERDICT_STYLE = {FASTER: "green", SLOWER: "bold red"}


def _verdict_cell(match: Match) -> Text:
    if match.verdict is not None:
        return Text(match.verdict, style=_VERDICT_STYLE.get(match.verdict, ""))
    if not match.status_changed:
        return Text(match.candidate.status)
    style = "bold red" if match.broke else "green" if match.candidate.status == "PASSED" else "yellow"
    return Text(f"{match.base.status} -> {match.candidate.status}", style=style)


def _latency_cell(result: Result) -> str:
    """A side's latency, marked when the judge's clock set it."""
    return _fmt(result.latency_ms, 4) + (JUDGE_MARK if result.spread.judge_estimated_trials else "")


def comparison_tables(comparison: Comparison, *, changes_only: bool = False) -> list[Table]:
    """Per definition, each matched evaluation (or only those that changed): both latencies (each marked when the
    judge's clock set it), the ratio, the noise it had to exceed and the verdict; then the geometric means per
    definition."""
    tables = []
    for definition, compared in sorted(comparison.definitions.items()):
        shown = [m for m in reading_order(compared.matches)
                 if not changes_only or m.status_changed or m.verdict in (FASTER, SLOWER)]
        if not shown:
            continue
        labels, prefix = short_labels(sorted({m.base.solution for m in shown}), definition)
        table = _table(definition, {"solution": "name", "workload": "name", "base (ms)": "right",
                                    "candidate (ms)": "right", "ratio": "right", "same within": "right",
                                    "verdict": "left"}, caption=prefix_note(prefix, definition))
        for match in shown:
            axes = ", ".join(f"{k}={v}" for k, v in sorted(match.base.axes.items())) or match.base.workload[:8]
            noise = "-" if match.band is None else _band(match.band) + ("*" if match.assumed_noise else "") + (
                JUDGE_MARK if match.judge_bounded else "")
            table.add_row(Text(labels[match.base.solution]), Text(axes), _latency_cell(match.base),
                          _latency_cell(match.candidate), _times(match.ratio), noise, _verdict_cell(match))
        tables.append(table)
    summary = _table("geometric mean of candidate / base latency per definition",
                     {"definition": "name", **dict.fromkeys(("geomean ratio", "timed", "faster", "same", "slower",
                                                              "status changes"), "right")})
    for definition, compared in sorted(comparison.definitions.items()):
        verdicts = compared.verdicts
        summary.add_row(Text(definition), _times(compared.geomean_ratio), str(len(compared.timed)),
                        str(verdicts[FASTER]), str(verdicts[SAME]), str(verdicts[SLOWER]),
                        str(len(compared.status_changes)))
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
        notes.append(f"{JUDGE_MARK} {comparison.judge_bounded} timed evaluation(s) had a side whose latency the "
                     "judge's clock set (its timing claim was not believed; see its log): a bound that moves with the "
                     "host's speed, so no change is called and it takes no part in the drift")
    return notes


@contextmanager
def working(description: str, console: Console | None = None) -> Iterator[None]:
    """A spinner with the elapsed time while a long step runs, on a terminal; nothing otherwise."""
    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    with Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn(), console=console,
                  transient=True) as progress:
        progress.add_task(description, total=None)
        yield

"""Progress of a run: a bar with an ETA on a terminal; off a terminal a line per verdict and, now and then, a
line with the ETA. Every verdict line says why an evaluation failed (the first line of its log).

The ETA is estimated per (definition, solution): the time each verdict took to arrive since the one before it,
averaged over the verdicts of its own solution, times the evaluations of that solution still to come. Slow
solutions that come last are counted at their own pace once they have a verdict; until every solution still to
come has one, the ETA is shown as a lower bound ("eta > 0:00:12, 2 solutions not timed yet") rather than a
guess.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import timedelta

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from flashinfer_bench.data import Trace
from flashinfer_bench.report.noise import read_spread

#: Seconds between two plain progress lines off a terminal.
PLAIN_PROGRESS_EVERY = 30.0
#: Characters of a failure's reason kept on its verdict line.
REASON_CHARS = 160

Key = tuple[str, str]


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=round(seconds)))


class Eta:
    """Time left from the pace of each (definition, solution) so far (the module docstring)."""

    def __init__(self, expected: Iterable[Key]):
        self.remaining: Counter[Key] = Counter(expected)
        self.spent: dict[Key, float] = {}
        self.done: Counter[Key] = Counter()

    def record(self, key: Key, seconds: float) -> None:
        """A verdict of ``key`` arrived ``seconds`` after the previous verdict (or the start)."""
        if self.remaining[key] > 0:
            self.remaining[key] -= 1
        self.spent[key] = self.spent.get(key, 0.0) + seconds
        self.done[key] += 1

    def estimate(self) -> tuple[float, int]:
        """(seconds left for the solutions that have a verdict, solutions to come that have none yet)."""
        seconds, untimed = 0.0, 0
        for key, count in self.remaining.items():
            if count <= 0:
                continue
            if self.done[key]:
                seconds += count * self.spent[key] / self.done[key]
            else:
                untimed += 1
        return seconds, untimed

    def text(self) -> str:
        seconds, untimed = self.estimate()
        if untimed:
            return f"eta > {_clock(seconds)}, {untimed} solution(s) not timed yet"
        return f"eta {_clock(seconds)}"


def failure_reason(log: str) -> str:
    """What went wrong, from a failed evaluation's log: its first non-empty line, or for a log that opens with a
    Python traceback the exception it ends in; shortened to REASON_CHARS."""
    lines = [line for line in log.splitlines() if line.strip()]
    reason = lines[0].strip() if lines else ""
    if reason.startswith("Traceback (most recent call last)"):
        # the traceback's frames are indented; the first line after them that is not says what was raised
        reason = next((line.strip() for line in lines[1:] if not line[:1].isspace()), reason)
    return reason if len(reason) <= REASON_CHARS else reason[:REASON_CHARS - 1] + "\u2026"


def verdict_line(trace: Trace, done: int, total: int) -> str:
    """``[3/30] definition / solution / workload: STATUS ...``: a PASSED one's latency and speed-up (marked when
    the judge's clock set the latency), a failed one's reason."""
    evaluation = trace.evaluation
    assert evaluation is not None
    status = evaluation.status.value
    detail = ""
    performance = evaluation.performance
    if performance is not None and status == "PASSED":
        detail = f" {performance.latency_ms:.4f} ms ({performance.speedup_factor:.2f}x)"
        if read_spread(performance).judge_estimated_trials:
            detail += " \u2020 latency set by the judge's clock: the solution's timing was not believed"
    elif status != "PASSED":
        reason = failure_reason(evaluation.log)
        detail = f": {reason}" if reason else ""
    return f"[{done}/{total}] {trace.definition} / {trace.solution} / {trace.workload.uuid[:8]}: {status}{detail}"


class TerminalProgress:
    """A progress bar with an ETA on a terminal; a line per verdict otherwise, with the ETA every
    PLAIN_PROGRESS_EVERY seconds. ``expected`` is the (definition, solution) of each evaluation to come (without
    it there is no ETA); ``started`` the monotonic time the command started, so that the final line counts the
    start-up too."""

    def __init__(self, console: Console | None = None, *, expected: Iterable[Key] | None = None,
                 started: float | None = None, clock: Callable[[], float] = time.monotonic):
        self.console = console or Console(stderr=True)
        self.interactive = self.console.is_terminal and sys.stderr.isatty()
        self.clock = clock
        self.expected = list(expected) if expected is not None else None
        self.command_started = started
        self.eta: Eta | None = None
        self.progress: Progress | None = None
        self.task = None
        self.total = self.done = 0
        self.started = self.last_verdict = self.last_plain = 0.0
        self.first_verdict: float | None = None

    def start(self, total: int) -> None:
        self.total, self.done = total, 0
        self.started = self.last_verdict = self.last_plain = self.clock()
        self.first_verdict = None
        if self.command_started is None:
            self.command_started = self.started
        self.eta = Eta(self.expected) if self.expected is not None and len(self.expected) == total else None
        if self.interactive:
            self.progress = Progress(TextColumn("[bold]evaluating"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), TextColumn("{task.fields[eta]}", markup=False),
                                     console=self.console, transient=True)
            self.progress.start()
            self.task = self.progress.add_task("evaluating", total=total, eta="")
        else:
            self.console.print(f"evaluating {total} (solution, workload) pairs", highlight=False)

    def advance(self, trace: Trace) -> None:
        now = self.clock()
        self.done += 1
        if self.first_verdict is None:
            self.first_verdict = now
        if self.eta is not None and trace.solution is not None:
            self.eta.record((trace.definition, trace.solution), now - self.last_verdict)
        self.last_verdict = now
        line = Text(verdict_line(trace, self.done, self.total))
        if self.progress is not None:
            self.progress.console.print(line, highlight=False, soft_wrap=True)
            self.progress.update(self.task, advance=1, eta=self.eta.text() if self.eta is not None else "")
            return
        self.console.print(line, highlight=False, soft_wrap=True)
        if self.eta is not None and self.done < self.total and now - self.last_plain >= PLAIN_PROGRESS_EVERY:
            self.last_plain = now
            self.console.print(f"progress: {self.done}/{self.total} evaluations, {_clock(now - self.started)} "
                               f"elapsed, {self.eta.text()}", highlight=False, soft_wrap=True)

    def finish(self) -> None:
        if self.progress is not None:
            self.progress.stop()
        now = self.clock()
        assert self.command_started is not None
        line = f"done: {self.done} evaluations in {now - self.command_started:.1f} s"
        if self.first_verdict is not None:
            line += f" (the first verdict came {self.first_verdict - self.command_started:.1f} s after the start)"
        self.console.print(line, highlight=False, soft_wrap=True)

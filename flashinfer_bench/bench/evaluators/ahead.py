"""The check of a slow solution's first timing session, worked out while its last correctness call runs.

A solution's timing sessions are sized on its last correctness call (evaluators/sessions.py). Once that call has run
``SLOW_CALL_MS`` on the judge's clock, a session made one at a time is planned alike however long it goes on, and so
is its planned last call, which the judge always checks (judge/schedule.py): against the reference's outputs for the
same inputs, a reference call, made after the session (the judge puts no work of its own beside a timed call).
Worked out while the solution's untimed correctness call runs, it costs no wall time where the reference is no slower
than the solution, and is kept in the baseline for the workload's next solutions, whose sessions get the same seeds.
Only that call: every worker knows it is checked, so how long the judge works beside the correctness call tells
nothing of the calls picked at random, which are worked out after the session as before. The public dataset's
mla_paged_prefill reference, submitted as a solution, takes 3-6 s a call at its largest workload, and the check of
its session's last call cost as long again after it (docs/measurements.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from flashinfer_bench.bench.evaluators.sessions import (
    SLOW_CALL_MS,
    SOLUTION_SESSION_MS,
    asks_replays,
    session_calls,
    session_purpose,
)
from flashinfer_bench.bench.inputs import InputKey
from flashinfer_bench.bench.judge.clock import synchronize
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.judge.solution import CallArgs, SolutionHandle


class CheckAhead(Protocol):
    """What the work ahead needs of the evaluator's check of picked calls (evaluators/evaluator.py ``TimedCheck``)."""

    def work_out(self, key: InputKey) -> None: ...


def work_ahead(ctx: EvaluationContext, solution: SolutionHandle, last_call: CallArgs,
               timed_check: Callable[[], CheckAhead]) -> None:
    """Start the solution's last correctness call (``last_call``, taken up by the ``call`` that asks for it); where the
    sessions after it are made one at a time and it is still running after ``SLOW_CALL_MS``, work out meanwhile the
    expected values of the first session's planned last call (``timed_check`` makes that session's check), done on
    the device before the session begins. A session whose calls are replayed is left alone: its rounds are sized on
    the worker's windows as they come (judge/replayed.py)."""
    if asks_replays(ctx, solution):
        return
    solution.start_call(last_call)
    if solution.answered_within(SLOW_CALL_MS):
        return
    warmup, iterations = session_calls(ctx.config, SLOW_CALL_MS, SOLUTION_SESSION_MS)
    timed_check().work_out(ctx.seed_stream(*session_purpose(0)).seed(warmup + iterations - 1))
    synchronize(ctx.device)

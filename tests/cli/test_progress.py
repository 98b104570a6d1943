"""The progress display of `run` (cli/progress.py), driven by a clock the test sets: an ETA that counts each
solution at its own pace (a lower bound while a solution to come has no verdict yet), a plain line with the ETA
now and then off a terminal, failure lines with their reason, and a final line that counts the start-up."""

import io

from rich.console import Console

from flashinfer_bench.cli.progress import PLAIN_PROGRESS_EVERY, Eta, TerminalProgress, failure_reason
from flashinfer_bench.data import Trace


def make_trace(definition, solution, workload, status="PASSED", extra=None):
    passed = status == "PASSED"
    return Trace.model_validate({
        "definition": definition, "solution": solution,
        "workload": {"uuid": workload, "axes": {}, "inputs": {}},
        "evaluation": {"status": status, "environment": {"hardware": "cpu", "libs": {}},
                       "timestamp": "2026-11-25T10:00:00", "log": "" if passed else f"{status}: what went wrong",
                       "correctness": {"max_relative_error": 0.0, "max_absolute_error": 0.0} if passed else None,
                       "performance": {"latency_ms": 1.0, "reference_latency_ms": 2.0, "speedup_factor": 2.0,
                                       "extra": extra} if passed else None},
    })


class Clock:
    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_eta_counts_a_slow_solution_at_its_own_pace():
    eta = Eta([("d", "fast")] * 4 + [("d", "slow")] * 4)
    for _ in range(2):
        eta.record(("d", "fast"), 1.0)
    # the slow solution has no verdict yet: only a lower bound, and saying so
    assert eta.estimate() == (2.0, 1) and eta.text() == "eta > 0:00:02, 1 solution(s) not timed yet"
    eta.record(("d", "fast"), 1.0)
    eta.record(("d", "fast"), 1.0)
    eta.record(("d", "slow"), 10.0)
    assert eta.estimate() == (30.0, 0) and eta.text() == "eta 0:00:30"  # three slow ones at 10 s, not at 2.8 s


def test_failure_reason_is_the_first_line_or_the_exception_a_traceback_ends_in():
    assert failure_reason("8 of 8 elements exceed atol=0.01 rtol=0.01\nmore") == "8 of 8 elements exceed atol=0.01 rtol=0.01"
    traceback = ('Traceback (most recent call last):\n  File "main.py", line 2, in run\n    raise ZeroDivisionError("x")\n'
                 'ZeroDivisionError: x\n--- captured output ---\nhello\n')
    assert failure_reason(traceback) == "ZeroDivisionError: x"
    assert failure_reason("") == "" and len(failure_reason("y" * 1000)) == 160


def test_off_a_terminal_verdicts_carry_their_reason_and_the_eta_comes_now_and_then():
    clock = Clock()
    out = io.StringIO()
    progress = TerminalProgress(Console(file=out, width=200), expected=[("d", "s")] * 4, started=clock.now - 11.0,
                                clock=clock)
    progress.start(4)
    clock.now += 2.0
    progress.advance(make_trace("d", "s", "w1", "RUNTIME_ERROR"))
    clock.now += PLAIN_PROGRESS_EVERY
    progress.advance(make_trace("d", "s", "w2"))
    clock.now += 1.0
    progress.advance(make_trace("d", "s", "w3"))
    clock.now += 1.0
    progress.advance(make_trace("d", "s", "w4"))
    progress.finish()
    lines = out.getvalue().splitlines()
    assert lines[0] == "evaluating 4 (solution, workload) pairs"
    assert lines[1] == "[1/4] d / s / w1: RUNTIME_ERROR: RUNTIME_ERROR: what went wrong"
    assert lines[2].startswith("[2/4] d / s / w2: PASSED 1.0000 ms (2.00x)")
    # 32 s for 2 verdicts of s: 2 more to come at 16 s each
    assert lines[3] == "progress: 2/4 evaluations, 0:00:32 elapsed, eta 0:00:32"
    assert [line[:5] for line in lines[4:6]] == ["[3/4]", "[4/4]"]
    assert lines[6] == "done: 4 evaluations in 45.0 s (the first verdict came 13.0 s after the start)"


def test_a_latency_the_judge_set_is_marked_on_its_line():
    out = io.StringIO()
    progress = TerminalProgress(Console(file=out, width=300))
    progress.start(1)
    progress.advance(make_trace("d", "s", "w", extra={"judge_estimated_trials": 2}))
    assert "\u2020 latency set by the judge's clock" in out.getvalue()

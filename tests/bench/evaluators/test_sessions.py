"""How many calls a timing session makes (evaluators/sessions.py)."""

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators.sessions import (
    REFERENCE_SESSION_MS,
    SESSION_LEAST_CALLS,
    SOLUTION_SESSION_MS,
    WARMED_BY_ONE_CALL_MS,
    session_calls,
)


def test_a_slow_reference_is_timed_in_fewer_calls_and_never_fewer_than_the_least():
    cfg = ResolvedEvalConfig(warmup_runs=10, iterations=50, num_trials=3, rtol=1e-2, atol=1e-2)

    def reference_calls(call_ms):
        return session_calls(cfg, call_ms, REFERENCE_SESSION_MS)

    assert reference_calls(None) == (10, 50)  # its time unknown: as configured
    assert reference_calls(REFERENCE_SESSION_MS / 100) == (10, 50)  # fast: as configured
    assert reference_calls(REFERENCE_SESSION_MS / 25) == (5, 25)  # the warm-up shrinks with the calls
    assert reference_calls(REFERENCE_SESSION_MS / 2) == (1, SESSION_LEAST_CALLS)
    # A call of a whole session's time: the baseline's call just before warmed it.
    assert reference_calls(REFERENCE_SESSION_MS * 10) == (0, SESSION_LEAST_CALLS)
    few = ResolvedEvalConfig(warmup_runs=0, iterations=2, num_trials=1, rtol=1e-2, atol=1e-2)
    assert session_calls(few, REFERENCE_SESSION_MS * 10, REFERENCE_SESSION_MS) == (0, 2)  # never more than asked


def test_a_slow_solution_is_timed_in_about_a_second_of_calls_a_session_with_a_warm_up_where_it_is_replayed():
    cfg = ResolvedEvalConfig(warmup_runs=10, iterations=50, num_trials=3, rtol=1e-2, atol=1e-2)
    assert session_calls(cfg, SOLUTION_SESSION_MS / 50, SOLUTION_SESSION_MS) == (10, 50)  # 20 ms: as configured
    assert session_calls(cfg, SOLUTION_SESSION_MS / 25, SOLUTION_SESSION_MS) == (5, 25)
    assert session_calls(cfg, WARMED_BY_ONE_CALL_MS, SOLUTION_SESSION_MS) == (0, 10)  # one at a time
    # Replays begin where the warm-up ends, so a session that may be replayed keeps a warm-up call.
    assert session_calls(cfg, WARMED_BY_ONE_CALL_MS, SOLUTION_SESSION_MS, replayed=True) == (2, 10)
    assert session_calls(cfg, 3000.0, SOLUTION_SESSION_MS) == (0, SESSION_LEAST_CALLS)
    assert session_calls(cfg, 3000.0, SOLUTION_SESSION_MS, replayed=True) == (1, SESSION_LEAST_CALLS)

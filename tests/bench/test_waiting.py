"""Waiting awake for what is due soon (bench/waiting.py), on a clock of the test's own."""

import pytest

from flashinfer_bench.bench import waiting
from flashinfer_bench.bench.waiting import POLL_AFTER_S, WAKE_AHEAD_S, poll_until


@pytest.fixture
def clock(monkeypatch) -> list[float]:
    now = [100.0]
    monkeypatch.setattr(waiting.time, "perf_counter", lambda: now[0])
    return now


def test_the_waiter_sleeps_until_shortly_before_the_moment_then_polls(clock):
    timeouts = []

    def ready(timeout: float) -> bool:  # each look takes 10 us beyond its wait
        timeouts.append(timeout)
        clock[0] += timeout + 1e-5
        return len(timeouts) == 4

    due = clock[0] + 0.02
    assert poll_until(ready, due)
    assert timeouts[0] == pytest.approx(0.02 - WAKE_AHEAD_S) and timeouts[1:] == [0.0, 0.0, 0.0]


def test_what_does_not_come_is_polled_for_until_shortly_after_its_moment_and_then_left_to_the_caller(clock):
    timeouts = []

    def never(timeout: float) -> bool:
        timeouts.append(timeout)
        clock[0] += timeout + 1e-4
        return False

    due = clock[0]
    assert not poll_until(never, due)
    assert clock[0] >= due + POLL_AFTER_S and set(timeouts) == {0.0}
    assert len(timeouts) == pytest.approx(POLL_AFTER_S / 1e-4, abs=1)


def test_a_moment_long_past_is_not_waited_for(clock):
    assert not poll_until(lambda timeout: pytest.fail("polled"), clock[0] - 1.0)

"""The timing loop's exchange with the judge (bench/harness.py Harness.time), on the CPU."""

import torch
from helpers import SCALE_ADD

from flashinfer_bench.bench.calling import ValueReturning
from flashinfer_bench.bench.harness import Harness
from flashinfer_bench.bench.replay import ReplayShape
from flashinfer_bench.bench.slot import Slot
from flashinfer_bench.data import Definition, Workload


class Rounds:
    """The judge's side: rounds of two seeds, no call picked; records each round's end."""

    def __init__(self) -> None:
        self.ends, self.next_seed = [], 100

    def more(self) -> list[int]:
        self.next_seed += 2
        return [self.next_seed - 2, self.next_seed - 1]

    def ran(self, count: int, more: bool, replay: bool = False) -> list[int]:
        assert not replay  # nothing is replayed on the CPU
        self.ends.append((count, more))
        return []

    def shipped(self, indices: list[int]) -> None:
        raise AssertionError("no call was picked")


def test_a_round_says_more_calls_follow_only_where_they_follow_at_once():
    """Within the warm-up and within the timed calls the next round's seeds may come with the judge's answer; not
    at the warm-up's end (the timer works on its records before the timed calls: between rounds) nor at the end.
    Replays asked for on the CPU: the calls are made one at a time, and the judge is told so."""
    harness = Harness(Definition.model_validate(SCALE_ADD), Workload(uuid="w", axes={"n": 8}, inputs={}), "cpu",
                      None, ValueReturning(lambda x, y: torch.add(y, x, alpha=2)))
    rounds = Rounds()
    claim = harness.time(4, 4, [1, 2], rounds, Slot(bytearray(64)), replay=ReplayShape(2, 2, 2))
    assert len(claim.samples_ms) == 4
    assert rounds.ends == [(2, True), (4, False), (6, True), (8, False)]


def test_calls_known_to_be_long_are_timed_with_cuda_events_from_the_start(monkeypatch):
    """Counting a call's GPU activities means tracing its warm-up with CUPTI, which costs a call of many launches
    seconds: once the solution's latest call (the correctness call, then a session's median) took
    EVENTS_FROM_CALL_MS or more, the timer is asked for CUDA events; a quick one keeps CUPTI."""
    import time

    import flashinfer_bench.testing as testing
    from flashinfer_bench.bench import harness as harnesses

    asked = []
    real = testing.bench_gpu_time_detailed

    def spied(*args, **kwargs):
        asked.append(kwargs["enable_cupti"])
        return real(*args, **kwargs)

    monkeypatch.setattr(testing, "bench_gpu_time_detailed", spied)
    # Long calls sleep past the bound; quick ones would need a stall of 100 ms to reach it, however busy the host.
    monkeypatch.setattr(harnesses, "EVENTS_FROM_CALL_MS", 100.0)
    pause = {"s": 0.15}

    def slow(x, y):
        time.sleep(pause["s"])
        return torch.add(y, x, alpha=2)

    harness = Harness(Definition.model_validate(SCALE_ADD), Workload(uuid="w", axes={"n": 8}, inputs={}), "cpu",
                      None, ValueReturning(slow))
    assert harness.latest_call_ms is None
    harness.time(2, 2, [1, 2], Rounds(), Slot(bytearray(64)))  # no call known yet: CUPTI asked for
    assert harness.latest_call_ms >= harnesses.EVENTS_FROM_CALL_MS  # the session's median sample
    harness.call(7, Slot(bytearray(64)))
    assert harness.latest_call_ms >= harnesses.EVENTS_FROM_CALL_MS  # the call, timed
    harness.time(2, 2, [1, 2], Rounds(), Slot(bytearray(64)))
    pause["s"] = 0.0
    harness.time(2, 2, [1, 2], Rounds(), Slot(bytearray(64)))  # still known long from the session before
    harness.time(2, 2, [1, 2], Rounds(), Slot(bytearray(64)))  # now known quick
    assert asked == [True, False, False, True]


def test_calls_found_to_make_many_gpu_activities_are_timed_with_cuda_events_from_the_next_session_on(monkeypatch):
    """A session whose traced warm-up counted more GPU activities per call than CUPTI_MOST_ACTIVITIES took its
    samples with CUDA events; the harness's later sessions ask for events from the start (their warm-up untraced:
    counting again cost cupti-python 13.0 about 50 us a record, session after session), fewer activities keep
    CUPTI."""
    import dataclasses

    import flashinfer_bench.testing as testing
    from flashinfer_bench.bench import harness as harnesses

    asked, counted = [], [harnesses.CUPTI_MOST_ACTIVITIES, harnesses.CUPTI_MOST_ACTIVITIES + 1, None]
    real = testing.bench_gpu_time_detailed

    def spied(*args, **kwargs):
        asked.append(kwargs["enable_cupti"])
        return dataclasses.replace(real(*args, **kwargs), activities_per_call=counted.pop(0))

    monkeypatch.setattr(testing, "bench_gpu_time_detailed", spied)
    harness = Harness(Definition.model_validate(SCALE_ADD), Workload(uuid="w", axes={"n": 8}, inputs={}), "cpu",
                      None, ValueReturning(lambda x, y: torch.add(y, x, alpha=2)))
    for _ in range(3):
        harness.time(2, 2, [1, 2], Rounds(), Slot(bytearray(64)))
    assert asked == [True, True, False] and harness.many_activities


def test_a_failed_capture_says_why_in_the_solutions_log_and_the_calls_are_made_one_at_a_time(monkeypatch, capsys):
    """The judge's note says only that the calls were not replayed; the worker's log (the trace's) says why."""
    from flashinfer_bench.bench import harness as harnesses
    from flashinfer_bench.bench.inputs import InputPlan
    from flashinfer_bench.timing.graph import GraphCaptureFailed

    class Uncapturable:
        def __init__(self, *args, **kwargs) -> None:
            pass

        def graph(self, size: int):
            raise GraphCaptureFailed("operation not permitted when stream is capturing")

    monkeypatch.setattr(InputPlan, "replay_obstacle", None)
    monkeypatch.setattr(harnesses, "ReplayedCalls", Uncapturable)
    harness = Harness(Definition.model_validate(SCALE_ADD), Workload(uuid="w", axes={"n": 8}, inputs={}), "cpu",
                      None, ValueReturning(lambda x, y: torch.add(y, x, alpha=2)))
    claim = harness.time(4, 4, [1, 2], Rounds(), Slot(bytearray(64)), replay=ReplayShape(2, 2, 2))
    assert len(claim.samples_ms) == 4 and not claim.cuda_graph
    log = capsys.readouterr().err
    assert f"{harnesses.CAPTURE_FAILED_NOTE}: operation not permitted when stream is capturing" in log

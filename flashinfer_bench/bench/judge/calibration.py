"""The clock floor: what the harness costs per call on a callee that does nothing, measured by the judge in a worker
before any solution code was in it (so no solution can make the floor look higher than it is); and, where the
workload's calls can be replayed from CUDA graphs, what a replayed round costs beyond its calls' device work."""

from __future__ import annotations

from flashinfer_bench.bench.calling import ZeroFilling
from flashinfer_bench.bench.judge.clock import ClockFloor
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.judge.replayed import replay_shape
from flashinfer_bench.bench.judge.schedule import TimedSchedule
from flashinfer_bench.bench.judge.solution import SolutionHandle
from flashinfer_bench.bench.replay import ReplayShape

#: The calibration session: a no-op callee through the same harness, some of its calls picked for shipping; at
#: most this many warm-up and timed calls, and no more than the evaluation's own (every call draws fresh inputs,
#: which for gigabyte-sized inputs costs more than the rest of the call), in rounds of at most this many calls
#: (the floor is the cheapest round's cost per call: TimedSchedule.floor).
CALIBRATION_WARMUP, CALIBRATION_CALLS, CALIBRATION_PICK_PROBABILITY = 5, 30, 0.25
CALIBRATION_ROUND_CALLS = 10
#: The replayed calibration session (where the workload's calls can be replayed, bench/replay.py): one warm-up
#: call, then this many rounds of this many calls (fewer where a round may hold fewer): the floor is the least
#: round's cost beyond its replay (TimedSchedule.replay_round_floor). That cost grows with a round's calls (16-call
#: calibration rounds read less, seen on H200s and H100s; 1,024-call ones read about 0.9 ms more than a session's
#: 32-call rounds took, docs/measurements.md), so the calibration's rounds sit between a session's shortest and
#: longest.
CALIBRATION_REPLAYED_ROUNDS, CALIBRATION_REPLAYED_CALLS = 10, 256


def calibrate(ctx: EvaluationContext, noop: SolutionHandle) -> ClockFloor:
    """The harness's cost per call, from a timing loop of ``noop`` (a handle on the zero-filling callee, in a
    process no solution code has run in, so none can make the floor look higher than it is)."""
    warmup = min(CALIBRATION_WARMUP, ctx.config.warmup_runs)
    calls = min(CALIBRATION_CALLS, ctx.config.iterations)
    schedule = TimedSchedule(ctx, ("calibration",), warmup, calls, CALIBRATION_PICK_PROBABILITY, noop.host_watch())
    schedule.round_limit = max(1, min(schedule.round_limit, CALIBRATION_ROUND_CALLS, calls // 2))
    schedule.replay = None  # calls one at a time: the floor of sessions that are not replayed
    noop.time(calls, warmup, schedule)
    for _ in schedule.picked_inputs():  # the judge's own draw times, to subtract
        pass
    schedule.release()
    floor = schedule.floor()
    replay = replay_shape(ctx, 1, CALIBRATION_PICK_PROBABILITY)
    if replay is None:
        return floor
    size = min(CALIBRATION_REPLAYED_CALLS, replay.most_calls)
    shape = ReplayShape(size, size, CALIBRATION_REPLAYED_ROUNDS)
    calls = shape.rounds * size
    replayed = TimedSchedule(ctx, ("calibration", "replayed"), 1, calls, CALIBRATION_PICK_PROBABILITY,
                             noop.host_watch())
    replayed.replay = shape
    claim = noop.time(calls, 1, replayed)
    if not replayed.replayed:
        return floor
    return ClockFloor(floor.per_call_ms, floor.ship_ms, replayed.replay_round_floor(claim))


def zero_filling_callee(ctx: EvaluationContext) -> ZeroFilling:
    return ZeroFilling(len(ctx.definition.inputs))

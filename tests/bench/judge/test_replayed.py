"""The judge's arithmetic for replayed sessions (judge/replayed.py), on rounds made up here."""

from dataclasses import dataclass

import pytest

from flashinfer_bench.bench.judge.replayed import (
    LEAST_SAMPLE_MS,
    LENGTHENED_HELD_SHARE,
    RAMP_SIZING_SHARE,
    REPLAYED_ROUND_MS,
    REPLAYED_ROUND_PICKS,
    exchange_floor,
    later_round_calls,
    net_samples,
    next_round_calls,
    replayed_picks,
    round_probability,
    work_per_call,
)
from flashinfer_bench.bench.replay import SHIPPED_MOST_CALLS, ReplayShape
from flashinfer_bench.bench.seeds import SeedStream


@dataclass
class Clocked:
    calls: int
    wall_ms: float
    held_ms: float = 0.0


def test_the_exchange_is_the_least_round_window_beyond_its_trusted_replay():
    rounds = [Clocked(10, 1.5), Clocked(10, 1.2), Clocked(10, 3.0, held_ms=1.5)]
    # Replays of 0.1 ms per call: 1.0 ms a round; the windows hold 0.5, 0.2 and 2.0 ms more.
    assert exchange_floor(rounds, [0.1, 0.1, 0.1]) == pytest.approx(0.2)
    assert exchange_floor([Clocked(10, 0.5)], [0.1]) == 0.0  # never below none


def test_the_work_per_call_leaves_out_the_first_round_and_takes_the_least_of_the_others_as_clocked():
    # 0.2 ms of exchange and 10 calls of 0.01 ms of harness work and 0.05 ms of work: 0.8 ms. The first round (short)
    # and a stalled one do not count.
    rounds = [Clocked(4, 0.3), Clocked(10, 0.8), Clocked(10, 5.0, held_ms=4.0), Clocked(10, 0.9)]
    assert work_per_call(rounds, exchange_ms=0.2, harness_ms=0.01) == pytest.approx(0.05)
    # A held-up round is not corrected: waiting for a CPU can overlap the device's work.
    assert work_per_call([Clocked(4, 0.3), Clocked(10, 5.0, held_ms=4.2)], 0.2, 0.01) == pytest.approx(0.47)
    assert work_per_call([Clocked(4, 0.3)], 0.2, 0.01) == pytest.approx(0.015)  # only one round: that one


def test_samples_are_one_per_round_less_the_harness_and_claim_their_rounds_time():
    rounds = [Clocked(16, 1.0), Clocked(64, 4.0)]
    net, total = net_samples([0.06, 0.055], rounds, harness_ms=0.01)
    assert net == pytest.approx([0.05, 0.045]) and total == pytest.approx(16 * 0.06 + 64 * 0.055)
    assert net_samples([0.005], rounds[:1], harness_ms=0.01)[0] == [LEAST_SAMPLE_MS]
    with pytest.raises(ValueError, match="3 timing samples for 2 replayed rounds"):
        net_samples([0.06, 0.05, 0.05], rounds, harness_ms=0.01)


def test_later_rounds_double_from_the_first_for_the_planned_calls_and_the_round_time_up_to_the_most():
    shape = ReplayShape(first_calls=16, most_calls=256, rounds=5)
    assert later_round_calls(shape, 50, None) == 16  # 34 planned calls left over 4 rounds: 9 each
    assert later_round_calls(shape, 200, None) == 64  # 46 each
    assert later_round_calls(shape, 50, REPLAYED_ROUND_MS / 100) == 128
    assert later_round_calls(shape, 50, REPLAYED_ROUND_MS / 10_000) == 256
    assert next_round_calls(shape, 50, [], exchange_ms=0.3) == 16
    # The first round's window, less what the host held it up and the exchange, gives the time per call.
    first = Clocked(16, 0.3 + 1.0 + 16 * REPLAYED_ROUND_MS / 100, held_ms=1.0)
    assert next_round_calls(shape, 50, [first], exchange_ms=0.3) == 128
    # A later round the host held up for more than LENGTHENED_HELD_SHARE of its window: the next is twice as long,
    # up to the most; the rounds never shrink back.
    window = 0.3 + 0.1 + 128 * REPLAYED_ROUND_MS / 100  # 100 calls make a round, by this one too
    quiet = Clocked(128, window, held_ms=0.1)
    held = Clocked(128, window, held_ms=LENGTHENED_HELD_SHARE * window + 0.1)
    assert next_round_calls(shape, 50, [first, quiet], exchange_ms=0.3) == 128
    assert next_round_calls(shape, 50, [first, held], exchange_ms=0.3) == 256
    assert next_round_calls(shape, 50, [first, held, Clocked(256, 10.0, held_ms=2.0)], exchange_ms=0.3) == 256
    assert next_round_calls(shape, 50, [first, held, Clocked(256, 10.0)], exchange_ms=0.3) == 256


def test_later_rounds_are_sized_at_the_least_time_per_call_of_the_rounds_so_far():
    """The first round's few calls read slow per call (on an H100 up to four times the later rounds'): once a later
    round shows the calls are quicker, the next is sized on that, so the rounds last REPLAYED_ROUND_MS."""
    shape = ReplayShape(first_calls=16, most_calls=1024, rounds=5)
    slow_first = Clocked(16, 0.3 + 16 * REPLAYED_ROUND_MS / 100)  # 100 calls would make a round, by this one
    assert next_round_calls(shape, 50, [slow_first], exchange_ms=0.3) == 128
    quick = Clocked(128, 0.3 + 128 * REPLAYED_ROUND_MS / 400)  # by this one, 400 calls
    assert next_round_calls(shape, 50, [slow_first, quick], exchange_ms=0.3) == 512
    # A round the host held up reads no quicker for it: its waits come out of its window first.
    held = Clocked(128, 0.3 + 128 * REPLAYED_ROUND_MS / 100 + 0.01, held_ms=0.01)
    assert next_round_calls(shape, 50, [slow_first, held], exchange_ms=0.3) == 128


def test_in_a_session_of_several_trials_the_ramp_s_last_round_is_sized_for_a_share_of_a_round():
    """It only sizes the trials' rounds, which are sized for the whole REPLAYED_ROUND_MS after it; a session of one
    trial has no ramp, and every round after the first is sized for the whole."""
    per_call = REPLAYED_ROUND_MS / 1000  # 1,000 calls make a round
    shape = ReplayShape(first_calls=64, most_calls=1024, rounds=5)
    first = Clocked(64, 0.3 + 64 * per_call)
    assert RAMP_SIZING_SHARE == 0.5
    assert next_round_calls(shape, 150, [first], exchange_ms=0.3, trials=3) == 512  # 500 wanted
    assert next_round_calls(shape, 150, [first], exchange_ms=0.3, trials=1) == 1024
    ramp = Clocked(512, 0.3 + 512 * per_call)
    assert next_round_calls(shape, 150, [first, ramp], exchange_ms=0.3, trials=3) == 1024


def test_a_replayed_round_picks_about_the_same_number_of_calls_whatever_its_size():
    assert round_probability(0.125, 16) == 0.125  # 2 of 16: the session's own probability is the smaller
    assert round_probability(0.125, 1024) == REPLAYED_ROUND_PICKS / 1024
    assert round_probability(1.0, 1024) == 1.0  # a check of every call (sampling's) keeps every call


def test_a_replayed_round_ships_at_most_so_many_picks_the_planned_last_among_them():
    stream = SeedStream(b"secret", "timed", 0)
    picks = replayed_picks(stream, 0.125, 100, 1124, planned_last=1123)
    assert picks == replayed_picks(stream, 0.125, 100, 1124, planned_last=1123)  # the run's secret decides
    assert 1123 in picks and all(100 <= i < 1124 for i in picks) and picks == sorted(picks)
    # With every call picked (a check that needs them all), the first ones go, and the planned last.
    everything = replayed_picks(stream, 1.0, 0, 200, planned_last=150)
    assert len(everything) == SHIPPED_MOST_CALLS
    assert everything == [*range(SHIPPED_MOST_CALLS - 1), 150]
    assert replayed_picks(stream, 1.0, 0, 200, planned_last=500) == list(range(SHIPPED_MOST_CALLS))


def test_a_replayed_rounds_ring_holds_more_outputs_than_a_round_of_single_calls_but_ships_only_its_picks():
    """Calls with 2 MB of outputs replay rounds of up to 256 calls (REPLAYED_KEPT_BYTES on the device, not the 64
    of KEPT_BYTES, which held such rounds under 2 ms); the buffer that ships their picks holds SHIPPED_MOST_CALLS."""
    from types import SimpleNamespace

    import torch

    from flashinfer_bench.bench.judge.replayed import KEPT_BYTES, REPLAYED_KEPT_BYTES, replay_shape
    from flashinfer_bench.bench.judge.solution import most_calls_shipped
    from flashinfer_bench.bench.slot import TensorLayout

    two_mb = [TensorLayout("out", torch.float32, (512 * 1024,))]
    ctx = SimpleNamespace(input_plan=SimpleNamespace(replay_obstacle=None), output_layouts=two_mb)
    shape = replay_shape(ctx, warmup=1, probability=0.125)
    assert shape is not None and shape.most_calls == REPLAYED_KEPT_BYTES // (2 << 20) == 256 > KEPT_BYTES // (2 << 20)
    assert replay_shape(ctx, warmup=0, probability=0.125) is None  # no warm-up: nothing tells the replays apart
    assert most_calls_shipped(SimpleNamespace(round_limit=10, replay=shape)) == SHIPPED_MOST_CALLS
    assert most_calls_shipped(SimpleNamespace(round_limit=10, replay=None)) == 10


def test_the_first_round_is_whole_graphs_only_where_the_judge_timed_the_reference_s_calls_as_short():
    """The worker captures one graph (GRAPH_MOST_CALLS calls), not two, where the reference's calls take at most
    SHORT_CALL_MS: the first round is SHORT_FIRST_CALLS calls, replays of that graph; a reference not timed, or
    slower, keeps the 16-call first round; a round limit below a graph (sampling's 16, or large outputs) holds."""
    from types import SimpleNamespace

    import torch

    from flashinfer_bench.bench.judge.replayed import (
        REPLAYED_FIRST_CALLS,
        SHORT_CALL_MS,
        SHORT_FIRST_CALLS,
        replay_shape,
    )
    from flashinfer_bench.bench.replay import GRAPH_MOST_CALLS
    from flashinfer_bench.bench.slot import TensorLayout

    assert SHORT_CALL_MS * SHORT_FIRST_CALLS <= REPLAYED_ROUND_MS / 4 and SHORT_FIRST_CALLS % GRAPH_MOST_CALLS == 0
    small = SimpleNamespace(input_plan=SimpleNamespace(replay_obstacle=None),
                            output_layouts=[TensorLayout("out", torch.float32, (4096,))])
    short = replay_shape(small, warmup=1, probability=0.125, trials=3, reference_call_ms=0.004)
    assert short is not None and short.first_calls == SHORT_FIRST_CALLS
    assert short.captured_ahead == [GRAPH_MOST_CALLS]
    for reference_ms in (None, 0.0, 2 * SHORT_CALL_MS):
        shape = replay_shape(small, warmup=1, probability=0.125, trials=3, reference_call_ms=reference_ms)
        assert shape is not None and shape.first_calls == REPLAYED_FIRST_CALLS
        assert shape.captured_ahead == [REPLAYED_FIRST_CALLS, GRAPH_MOST_CALLS]
    sampled = replay_shape(small, warmup=1, probability=1.0, reference_call_ms=0.004)
    assert sampled is not None and sampled.first_calls == sampled.most_calls == REPLAYED_ROUND_PICKS
    assert sampled.captured_ahead == [REPLAYED_ROUND_PICKS]
    # 32 MB outputs: the ring holds 16 calls, so no round holds a whole graph.
    large = SimpleNamespace(input_plan=SimpleNamespace(replay_obstacle=None),
                            output_layouts=[TensorLayout("out", torch.float32, (8 << 20,))])
    limited = replay_shape(large, warmup=1, probability=0.125, reference_call_ms=0.004)
    assert limited is not None and limited.first_calls == limited.most_calls == 16

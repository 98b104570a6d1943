"""Evaluators judged in-process on CPU tensors (the judge calls exactly these methods; the harness that a worker
runs is run here in-process by LocalSolution)."""

import dataclasses
import math
import weakref

import pytest
import torch
from helpers import SCALE_ADD, evaluation_context, judged_locally, sampling_definition

from flashinfer_bench.bench.calling import ValueReturning, reference_callee
from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators import (
    DefaultEvaluator,
    DSAEvaluator,
    LowbitEvaluator,
    SamplingEvaluator,
    resolve_evaluator,
)
from flashinfer_bench.bench.evaluators.evaluator import TimedOutputsMismatch
from flashinfer_bench.bench.judge.local import LocalSolution
from flashinfer_bench.bench.judge.solution import CallArgs
from flashinfer_bench.bench.slot import TensorLayout, output_mismatch
from flashinfer_bench.data import Definition, EvaluationStatus, Workload

CFG = ResolvedEvalConfig(warmup_runs=1, iterations=3, num_trials=2, rtol=1e-2, atol=1e-2)
SCALE = Definition.model_validate(SCALE_ADD)
WORKLOAD = Workload(uuid="w", axes={"n": 64}, inputs={})


def judge(evaluator, definition, fn, cfg=CFG, workload=WORKLOAD, dps=False):
    return judged_locally(evaluator, definition, fn, cfg, workload, dps=dps)[0]


def test_default_statuses():
    assert judge(DefaultEvaluator, SCALE, lambda x, y: x * 2 + y).status is EvaluationStatus.PASSED
    assert judge(DefaultEvaluator, SCALE, lambda x, y: x * 2 + y + 1).status is EvaluationStatus.INCORRECT_NUMERICAL
    assert judge(DefaultEvaluator, SCALE, lambda x, y: (x * 2 + y)[:-1]).status is EvaluationStatus.INCORRECT_SHAPE
    assert judge(DefaultEvaluator, SCALE, lambda x, y: (x * 2 + y).double()).status is EvaluationStatus.INCORRECT_DTYPE
    assert judge(DefaultEvaluator, SCALE, lambda x, y: (x, y)).status is EvaluationStatus.INCORRECT_SHAPE


def test_nan_and_inf_fail_even_with_huge_tolerance():
    loose = CFG.model_copy(update={"atol": 1e9, "rtol": 1e9})

    def nan_at_end(x, y):
        out = x * 2 + y
        out[-1] = float("nan")
        return out

    result = judge(DefaultEvaluator, SCALE, nan_at_end, cfg=loose)
    assert result.status is EvaluationStatus.INCORRECT_NUMERICAL and "NaN" in result.message
    assert judge(DefaultEvaluator, SCALE, lambda x, y: x * 2 + y + 1e3, cfg=loose).status is EvaluationStatus.PASSED


def test_destination_passing_output_left_unwritten_fails():
    def writes_half(x, y, out):
        out[: x.numel() // 2] = (x * 2 + y)[: x.numel() // 2]

    assert judge(DefaultEvaluator, SCALE, writes_half, dps=True).status is EvaluationStatus.INCORRECT_NUMERICAL
    assert judge(DefaultEvaluator, SCALE, lambda x, y, out: out.copy_(x * 2 + y), dps=True).passed


def test_trials_draw_fresh_inputs_from_the_secret():
    reference = reference_callee(SCALE)
    a = DefaultEvaluator.build_baseline(evaluation_context(SCALE, WORKLOAD, CFG), reference, profile=False)
    b = DefaultEvaluator.build_baseline(evaluation_context(SCALE, WORKLOAD, CFG), reference, profile=False)
    other = DefaultEvaluator.build_baseline(evaluation_context(SCALE, WORKLOAD, CFG, secret=2), reference, profile=False)
    assert not torch.equal(a.inputs[0][0], a.inputs[1][0])
    assert torch.equal(a.inputs[1][0], b.inputs[1][0])
    assert not torch.equal(a.inputs[0][0], other.inputs[0][0])  # another run's secret, other inputs


def test_performance_reports_speedup_against_reference_latency():
    _, timed = judged_locally(DefaultEvaluator, SCALE, lambda x, y: x * 2 + y, CFG, WORKLOAD, timed=True)
    perf = timed.performance
    assert perf.latency_ms > 0 and perf.reference_latency_ms > 0
    assert abs(perf.speedup_factor - perf.reference_latency_ms / perf.latency_ms) < 1e-9


def keeps_results_per_tensor():
    """A cheat: computes once per input tensor object, then hands back the same result whatever it holds."""
    kept = {}

    def run(x, y):
        key = id(x)
        if key not in kept:
            kept[key] = x * 2 + y
            weakref.finalize(x, kept.pop, key, None)  # a new tensor at the same address starts afresh
        return kept[key]

    return run


def timed(fn, dps=False, evaluator=DefaultEvaluator, definition=SCALE, cfg=CFG, workload=WORKLOAD):
    return judged_locally(evaluator, definition, fn, cfg, workload, dps=dps, timed=True)


def test_results_kept_from_an_earlier_call_fail_in_timing():
    every_call_checked = CFG.model_copy(update={"extra": {"timed_check_probability": 1.0}})
    with pytest.raises(TimedOutputsMismatch) as caught:
        timed(keeps_results_per_tensor(), cfg=every_call_checked)
    assert caught.value.result.status is EvaluationStatus.INCORRECT_NUMERICAL
    assert "timed call" in caught.value.result.message


def test_honest_solutions_pass_the_timed_check_in_both_styles():
    for fn, dps in ((lambda x, y: x * 2 + y, False), (lambda x, y, out: torch.add(y, x, alpha=2, out=out), True)):
        correctness, timing = timed(fn, dps=dps)
        # checked calls pass (whether the claim stands depends on the host's load here: the rule's own test is
        # test_a_claim_far_below_the_work_is_raised_to_the_least_the_clock_allows_and_one_above_it_stands)
        assert correctness.passed
        assert 0 < timing.performance.latency_ms < 50


def test_every_timed_call_gets_inputs_no_call_saw_before():
    seen = []

    def records(x, y):
        seen.append(x.clone())
        return x * 2 + y

    timed(records)
    calls = CFG.num_trials * (1 + CFG.warmup_runs + CFG.iterations)  # a correctness call and a session per trial
    assert len(seen) == calls
    assert len({tuple(x.tolist()) for x in seen}) == calls  # no two calls, correctness or timed, saw the same


def test_a_drawn_scalar_input_is_fresh_in_every_timed_call():
    """A scalar input the workload does not give is drawn per call like the tensors: the timing loop must hand
    every call its own draw's value (the judge checks picked calls against the reference on that value)."""
    scaled = Definition.model_validate({
        "name": "scaled", "op_type": "elementwise", "axes": {"n": {"type": "var"}},
        "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "alpha": {"shape": None, "dtype": "float32"}},
        "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
        "reference": "def run(x, alpha):\n    return x * alpha\n"})
    seen = []

    def run(x, alpha):
        seen.append(alpha)
        return x * alpha

    every_call_checked = CFG.model_copy(update={"extra": {"timed_check_probability": 1.0}})
    correctness, timing = timed(run, definition=scaled, cfg=every_call_checked)
    assert correctness.passed and timing is not None
    calls = CFG.num_trials * (1 + CFG.warmup_runs + CFG.iterations)
    assert len(seen) == calls and len(set(seen)) == calls


def test_sampling_outputs_are_not_judged_one_call_at_a_time():
    assert SamplingEvaluator.check_timed_outputs(SCALE, [((torch.zeros(1),), (torch.ones(1),))], CFG) is None


def test_timed_samples_that_ignore_their_inputs_fail_and_honest_ones_pass():
    cfg = SAMPLING_CFG.model_copy(update={"iterations": 12, "num_trials": 1})

    def stale():
        """Samples honestly on a new tensor (every correctness draw), then keeps its sample for that tensor."""
        kept = {}

        def run(p):
            key = id(p)
            if key not in kept:
                kept[key] = torch.multinomial(p, 1).squeeze(1)
                weakref.finalize(p, kept.pop, key, None)
            return kept[key]

        return run

    with pytest.raises(TimedOutputsMismatch) as caught:
        timed(stale(), evaluator=SamplingEvaluator, definition=SAMPLING, cfg=cfg, workload=SAMPLING_WORKLOAD)
    assert "repeat the previous call's sample" in caught.value.result.message  # the same samples, call after call
    correctness, honest = timed(lambda p: torch.multinomial(p, 1).squeeze(1), evaluator=SamplingEvaluator,
                                definition=SAMPLING, cfg=cfg, workload=SAMPLING_WORKLOAD)
    assert correctness.passed and honest.performance.latency_ms > 0  # every timed call scored, none failed


LOWBIT = Definition.model_validate(dict(SCALE_ADD, name="q", op_type="moe"))


def test_lowbit_matched_ratio():
    cfg = CFG.model_copy(update={"required_matched_ratio": 0.9})

    def off_in(fraction):
        def fn(x, y):
            out = x * 2 + y
            out[: int(out.numel() * fraction)] += 10
            return out

        return fn

    assert resolve_evaluator(LOWBIT) is LowbitEvaluator
    assert judge(LowbitEvaluator, LOWBIT, off_in(0.05), cfg=cfg).passed
    failed = judge(LowbitEvaluator, LOWBIT, off_in(0.2), cfg=cfg)
    assert failed.status is EvaluationStatus.INCORRECT_NUMERICAL
    assert failed.correctness.extra["matched_ratio"] < 0.9


SAMPLING = sampling_definition(8)
SAMPLING_CFG = CFG.model_copy(update={"extra": {"sampling_validation_trials": 200, "sampling_significance": 1e-4}})
SAMPLING_WORKLOAD = Workload(uuid="s", axes={"batch_size": 16}, inputs={})


def test_sampling_judged_by_distribution():
    assert resolve_evaluator(SAMPLING) is SamplingEvaluator
    fair = judge(SamplingEvaluator, SAMPLING, lambda p: torch.multinomial(p, 1).squeeze(1), cfg=SAMPLING_CFG,
                 workload=SAMPLING_WORKLOAD)
    assert fair.passed, fair.message
    greedy = judge(SamplingEvaluator, SAMPLING, lambda p: p.argmax(dim=1), cfg=SAMPLING_CFG, workload=SAMPLING_WORKLOAD)
    assert greedy.status is EvaluationStatus.INCORRECT_NUMERICAL and greedy.correctness.extra["tvd"] > 0.2
    out_of_range = judge(SamplingEvaluator, SAMPLING, lambda p: torch.full((p.shape[0],), 99), cfg=SAMPLING_CFG,
                         workload=SAMPLING_WORKLOAD)
    assert out_of_range.status is EvaluationStatus.INCORRECT_NUMERICAL
    # Upstream's sampling_tvd_threshold, where a config sets it, bounds the binned distance too.
    strict = SAMPLING_CFG.model_copy(update={"extra": {**SAMPLING_CFG.extra, "sampling_tvd_threshold": 0.0}})
    bounded = judge(SamplingEvaluator, SAMPLING, lambda p: torch.multinomial(p, 1).squeeze(1), cfg=strict,
                    workload=SAMPLING_WORKLOAD)
    assert bounded.status is EvaluationStatus.INCORRECT_NUMERICAL and "sampling_tvd_threshold" in bounded.message


@pytest.mark.parametrize("kind", ["default", "sampling"])
def test_first_call_is_the_call_check_correctness_makes_first(kind):
    """The judge has the worker make ``first_call`` while the reference runs (judge/main.py): it serves only where
    check_correctness asks for the same call first."""
    evaluator, definition, cfg, workload = {
        "default": (DefaultEvaluator, SCALE, CFG, WORKLOAD),
        "sampling": (SamplingEvaluator, SAMPLING, SAMPLING_CFG, SAMPLING_WORKLOAD),
    }[kind]
    ctx = evaluation_context(definition, workload, cfg)
    asked = []

    class Recording(LocalSolution):
        def call(self, seed, *, repeat=1, rng_seed=None, return_inputs=()):
            asked.append(CallArgs(seed, repeat, rng_seed, tuple(return_inputs)))
            return super().call(seed, repeat=repeat, rng_seed=rng_seed, return_inputs=return_inputs)

    baseline = evaluator.build_baseline(ctx, reference_callee(definition), profile=False)
    assert evaluator.check_correctness(ctx, Recording(ctx, reference_callee(definition)), baseline).passed
    assert asked[0] == evaluator.first_call(ctx)


@pytest.mark.parametrize("kind", ["default", "sampling"])
def test_each_trial_s_call_is_started_as_the_one_before_is_taken_up_and_then_asked_for_alike(kind):
    """While the judge compares a trial's outputs the worker makes the next trial's call (judge/remote.py
    ``start_call``): started with the very arguments the evaluator then asks for, so the worker's answer is taken
    up, not made again."""
    evaluator, definition, workload = {
        "default": (DefaultEvaluator, SCALE, WORKLOAD), "sampling": (SamplingEvaluator, SAMPLING, SAMPLING_WORKLOAD),
    }[kind]
    cfg = (SAMPLING_CFG if kind == "sampling" else CFG).model_copy(update={"num_trials": 3})
    ctx = evaluation_context(definition, workload, cfg)
    events = []

    class Recording(LocalSolution):
        def start_call(self, args):
            events.append(("start", args))

        def call(self, seed, *, repeat=1, rng_seed=None, return_inputs=()):
            events.append(("call", CallArgs(seed, repeat, rng_seed, tuple(return_inputs))))
            return super().call(seed, repeat=repeat, rng_seed=rng_seed, return_inputs=return_inputs)

    baseline = evaluator.build_baseline(ctx, reference_callee(definition), profile=False)
    assert evaluator.check_correctness(ctx, Recording(ctx, reference_callee(definition)), baseline).passed
    asked = [args for what, args in events if what == "call"]
    assert len(asked) == 3 and len({args.seed for args in asked}) == 3
    for trial in range(2):  # after each call but the last, the next one is started before it is asked for
        after = events[events.index(("call", asked[trial])) + 1:events.index(("call", asked[trial + 1]))]
        assert ("start", asked[trial + 1]) in after


DSA = Definition.model_validate({
    "name": "dsa_toy", "op_type": "dsa_paged",
    "axes": {"t": {"type": "var"}, "k": {"type": "const", "value": 4}},
    "inputs": {"scores": {"shape": ["t", "k"], "dtype": "float32"}},
    "outputs": {"output": {"shape": ["t"], "dtype": "float32"}, "topk_indices": {"shape": ["t", "k"], "dtype": "int32"}},
    "reference": ("import torch\ndef run(scores):\n    idx = torch.arange(4, dtype=torch.int32).repeat(scores.shape[0], 1)\n"
                  "    return scores.sum(1), idx\n"),
})
DSA_WORKLOAD = Workload(uuid="d", axes={"t": 5}, inputs={})


def test_dsa_indices_compared_as_sets():
    assert resolve_evaluator(DSA) is DSAEvaluator

    def permuted(scores):
        idx = torch.tensor([3, 1, 0, 2], dtype=torch.int32).repeat(scores.shape[0], 1)
        return scores.sum(1), idx

    def other_set(scores):
        idx = torch.tensor([0, 1, 2, 7], dtype=torch.int32).repeat(scores.shape[0], 1)
        return scores.sum(1), idx

    assert judge(DSAEvaluator, DSA, permuted, workload=DSA_WORKLOAD).passed
    assert judge(DSAEvaluator, DSA, other_set, workload=DSA_WORKLOAD).status is EvaluationStatus.INCORRECT_NUMERICAL
    assert judge(DefaultEvaluator, DSA, permuted, workload=DSA_WORKLOAD).status is EvaluationStatus.INCORRECT_NUMERICAL


def test_writing_into_inputs_is_incorrect_even_with_the_right_answer():
    def doubles_x_in_place(x, y, out):
        x.mul_(2)
        out.copy_(x + y)

    result = judge(DefaultEvaluator, SCALE, doubles_x_in_place, dps=True)
    assert result.status is EvaluationStatus.INCORRECT_NUMERICAL
    assert "wrote into its input(s) ['x']" in result.message


def test_an_output_on_another_device_than_the_reference_is_not_moved_and_passed():
    layout = [TensorLayout("out", torch.float32, (4,))]
    assert output_mismatch((torch.ones(4, device="meta"),), layout, "cpu") == (
        EvaluationStatus.INCORRECT_DTYPE, "output 'out' is on meta, expected cpu")
    assert judge(DefaultEvaluator, SCALE, lambda x, y: (x * 2 + y).to("meta")).status is EvaluationStatus.INCORRECT_DTYPE


def test_the_planned_last_timed_call_is_always_picked_and_calls_beyond_it_only_at_random():
    from flashinfer_bench.bench.judge.schedule import TimedSchedule

    ctx = evaluation_context(SCALE, WORKLOAD, CFG)

    def picks(probability: float) -> list[int]:
        schedule = TimedSchedule(ctx, ("timed", 0), warmup=2, iterations=3, probability=probability)
        schedule.round_limit = schedule.timed_round = 4
        assert len(schedule.opening_round()) == 2  # the warm-up calls: a round of their own
        picked = schedule.on_ran(2)
        assert len(schedule.next_round()) == 3  # the planned calls end a round
        picked += schedule.on_ran(5)
        assert len(schedule.next_round()) == 3  # the timer measured the batch again: a batch's calls
        return picked + schedule.on_ran(8)

    assert picks(0.0) == [4]
    assert picks(1.0) == list(range(8))


def test_picks_come_from_the_runs_secret_and_the_reference_runs_once_per_picked_call_of_a_workload():
    """Every solution of a workload gets the same seeds and the same picks, unpredictable without the secret; the
    reference's outputs for a picked call are kept in the workload's baseline, so the next solution's check of
    that call does not run the reference again."""
    from flashinfer_bench.bench.evaluators.evaluator import Baseline, TimedCheck
    from flashinfer_bench.bench.judge.schedule import TimedSchedule

    def picks(secret: int) -> list[int]:
        schedule = TimedSchedule(evaluation_context(SCALE, WORKLOAD, CFG, secret), ("timed", 0), warmup=0,
                                 iterations=200, probability=0.25)
        schedule.round_limit = schedule.timed_round = 200
        schedule.opening_round()
        return schedule.on_ran(200)

    assert picks(1) == picks(1) != picks(2)
    assert 20 < len(picks(1)) < 80  # about a quarter of 200

    calls = []

    def reference(x, y):
        calls.append(1)
        return x * 2 + y

    ctx = evaluation_context(SCALE, WORKLOAD, CFG)
    baseline = Baseline([], [], reference=ValueReturning(reference))
    inputs = ctx.inputs(ctx.seed_for("timed", 0, 7))
    first = TimedCheck(DefaultEvaluator, ctx, baseline).expected(ctx.seed_for("timed", 0, 7), inputs)
    again = TimedCheck(DefaultEvaluator, ctx, baseline).expected(ctx.seed_for("timed", 0, 7), inputs)
    assert len(calls) == 1 and torch.equal(first[0], again[0])


@pytest.mark.parametrize("replayed", [False, True])
def test_picked_calls_whose_expected_values_are_known_are_drawn_again_only_to_time_the_draw(replayed):
    """The judge draws a picked call's inputs again where the reference must run on them; where the reference's
    outputs are kept already (an earlier solution of the workload), only the first picks are drawn, to time the
    judge's own draw (only those draws are timed), and none in a replayed session (whose bound takes no draw time
    out). Every picked call is checked either way, against what its seed's inputs give."""
    from flashinfer_bench.bench.judge.picked import TIMED_DRAWS, PickedCall
    from flashinfer_bench.bench.judge.schedule import TimedSchedule

    ctx = evaluation_context(SCALE, WORKLOAD, CFG)
    schedule = TimedSchedule(ctx, ("timed", 0), warmup=1, iterations=3, probability=1.0)
    schedule.replayed_from = 1 if replayed else None
    seeds = [ctx.seed_for("timed", 0, index) for index in range(TIMED_DRAWS + 7)]
    schedule.picked = [PickedCall(index, seed, (torch.zeros(64),)) for index, seed in enumerate(seeds)]
    unknown = {seeds[TIMED_DRAWS + 2], seeds[TIMED_DRAWS + 5]}

    class Check:
        grouped = True
        worked_out, judged = [], []

        def known(self, seed):
            return None if seed in unknown else ("known", seed)

        def expected(self, seed, inputs):
            assert torch.equal(inputs[0], ctx.inputs(seed)[0])
            self.worked_out.append(seed)
            return ("worked out", seed)

        def check(self, calls):
            self.judged += [expected for _, expected in calls]

        def finish(self):
            return None

    check = Check()
    assert schedule.judge_picked(check) is None
    assert len(schedule.draw_ms) == (0 if replayed else TIMED_DRAWS) and set(check.worked_out) == unknown
    assert check.judged == [("worked out" if seed in unknown else "known", seed) for seed in seeds]


def test_each_round_is_clocked_from_its_seeds_to_its_end_and_shipments_apart(monkeypatch):
    """A round's window opens when its seeds go out and closes when the worker says it ended; a shipment of picked
    outputs is clocked on its own, per call shipped; seeds asked for before a round ended, and a round after one
    that ended early, fail the session."""
    from flashinfer_bench.bench.judge import schedule as timed

    now = [0.0]
    monkeypatch.setattr(timed.time, "perf_counter", lambda: now[0])
    schedule = timed.TimedSchedule(evaluation_context(SCALE, WORKLOAD, CFG), ("timed", 0), warmup=1, iterations=8,
                                   probability=0.0)
    assert schedule.timed_round == 1  # the planned calls in TIMED_ROUNDS rounds at most
    schedule.round_limit = schedule.timed_round = 4
    warm = schedule.opening_round()
    now[0] = 1.0
    assert schedule.on_ran(1) == []
    now[0] = 2.0
    first = schedule.next_round()
    now[0] = 6.0
    assert schedule.on_ran(5) == []
    now[0] = 9.0
    second = schedule.next_round()
    assert len(set(warm + first + second)) == 9
    now[0] = 10.0
    assert schedule.on_ran(9) == [8]  # the planned last call
    schedule.on_shipped([(torch.zeros(64),)], [8], asked_at=10.0, arrived_at=10.5)
    assert [(r.first, r.calls, r.wall_ms) for r in schedule.rounds] == [(0, 1, 1000.0), (1, 4, 4000.0),
                                                                         (5, 4, 1000.0)]
    assert [p.index for p in schedule.picked] == [8] and schedule.picked[0].key == second[3]
    # The cheapest timed round: 250 ms a call, less the judge's own draw (here 100 ms).
    schedule.draw_ms = [100.0]
    floor = schedule.floor()
    assert floor.per_call_ms == pytest.approx(150.0)
    # The shipment: 500 ms, less the judge's copy and the share of the timed rounds' median (4000 and 1000 ms).
    assert floor.ship_ms == pytest.approx(500.0 - schedule.copy_ms - timed.SHIP_ROUND_SHARE * 2500.0)
    schedule.next_round()
    with pytest.raises(timed.CallFailed, match="not reported ended"):
        schedule.next_round()
    assert schedule.on_ran(10) == []  # a round that ended before using all its seeds must be the last
    with pytest.raises(timed.CallFailed, match="ended early"):
        schedule.on_ran(11)


def test_replayed_rounds_follow_the_warm_up_sized_by_the_first_ones_clock_and_picks_name_their_place(monkeypatch):
    """Once the worker says its timed calls are replayed (at the warm-up's end, and only where asked), the first
    replayed round holds ``first_calls``, the later ones the first times a power of two, enough for the planned
    calls and for REPLAYED_ROUND_MS at the first round's time per call, at most ``most_calls``; no more rounds than
    planned; a picked call's inputs are its round's first seed and its place in the round (bench/replay.py)."""
    from flashinfer_bench.bench.inputs import DrawAt
    from flashinfer_bench.bench.judge import replayed
    from flashinfer_bench.bench.judge import schedule as timed
    from flashinfer_bench.bench.replay import ReplayShape

    now = [0.0]
    monkeypatch.setattr(timed.time, "perf_counter", lambda: now[0])

    def schedule_asking_replays() -> timed.TimedSchedule:
        made = timed.TimedSchedule(evaluation_context(SCALE, WORKLOAD, CFG), ("timed", 0), warmup=2, iterations=10,
                                   probability=1.0)
        assert made.replay is None  # the CPU: nothing to replay
        made.replay = ReplayShape(first_calls=2, most_calls=8, rounds=3)
        return made

    schedule = schedule_asking_replays()
    schedule.opening_round()
    with pytest.raises(timed.CallFailed, match="replays after the 2 warm-up calls"):
        schedule.on_ran(1, replay=True)

    def sizes(first_round_ms_per_call: float) -> tuple[timed.TimedSchedule, list[int]]:
        made = schedule_asking_replays()
        made.opening_round()
        assert made.on_ran(2, replay=True) == [0, 1]
        made.on_shipped([(torch.zeros(64),)] * 2, [0, 1], asked_at=0.0, arrived_at=0.0)
        got = []
        for _ in range(3):
            seeds = made.next_round()
            got.append(len(seeds))
            now[0] += len(seeds) * first_round_ms_per_call / 1e3
            picked = made.on_ran(made.ended + len(seeds))
            made.on_shipped([(torch.zeros(64),)] * len(picked), picked, asked_at=0.0, arrived_at=0.0)
        return made, got

    # 8 planned calls after the first round's 2, in 2 rounds: 4 each, which also hold REPLAYED_ROUND_MS here.
    schedule, got = sizes(replayed.REPLAYED_ROUND_MS / 4)
    assert got == [2, 4, 4] and [r.replayed for r in schedule.rounds] == [False, True, True, True]
    with pytest.raises(timed.CallFailed, match="more than the 3 replayed rounds"):
        schedule.next_round()
    keys = [call.key for call in schedule.picked]
    assert keys[:2] == schedule.seeds[:2]
    assert keys[2:8] == [DrawAt(schedule.seeds[2], 0), DrawAt(schedule.seeds[2], 1)] + \
        [DrawAt(schedule.seeds[4], k) for k in range(4)]
    assert sizes(replayed.REPLAYED_ROUND_MS / 40)[1] == [2, 8, 8]  # 40 calls would hold it: at most 8
    unasked = timed.TimedSchedule(evaluation_context(SCALE, WORKLOAD, CFG), ("timed", 0), 2, 10, 1.0)
    unasked.opening_round()
    with pytest.raises(timed.CallFailed, match="it asked for none"):
        unasked.on_ran(2, replay=True)


def test_a_replayed_round_hands_out_its_first_seed_only_and_draws_its_picks_once_per_round(monkeypatch):
    """A replayed round's calls draw from its first seed (bench/replay.py): its other seeds go as 0, and its picks
    come from one generator per round seeded from the run's secret (a hash per call cost the judge ~26 ms per
    session of 4,112 calls): about the round's probability of its calls, different in every round, the same for
    every schedule of the workload, and for another secret not."""
    from flashinfer_bench.bench.judge import replayed
    from flashinfer_bench.bench.judge import schedule as timed
    from flashinfer_bench.bench.replay import ReplayShape

    monkeypatch.setattr(timed.time, "perf_counter", lambda: 0.0)  # no time passes: rounds as long as allowed

    def picks(secret: int) -> tuple[list[list[int]], list[list[int]]]:
        schedule = timed.TimedSchedule(evaluation_context(SCALE, WORKLOAD, CFG, secret), ("timed", 0), warmup=1,
                                       iterations=4000, probability=0.25)
        schedule.replay = ReplayShape(first_calls=16, most_calls=1024, rounds=3)
        schedule.opening_round()
        schedule.on_ran(1, replay=True)
        handed, picked = [], []
        for _ in range(3):
            handed.append(schedule.next_round())
            picked.append(schedule.on_ran(schedule.ended + len(handed[-1])))
        return handed, picked

    handed, picked = picks(1)
    assert [len(seeds) for seeds in handed] == [16, 1024, 1024]
    assert all(seeds[0] != 0 and set(seeds[1:]) == {0} for seeds in handed)
    expected = 1024 * replayed.round_probability(0.25, 1024)
    assert all(expected / 3 < len(p) < expected * 3 for p in picked[1:])
    assert [i - 17 for i in picked[1]] != [i - 17 - 1024 for i in picked[2]]  # each round its own draws
    assert picks(1)[1] == picked and picks(2)[1] != picked


def test_a_replayed_session_takes_the_work_from_its_shortest_later_round_and_bounds_claims_by_it(monkeypatch):
    """In a replayed session the work per call is the rounds' windows less the exchange per round (calibrated) and
    the harness's own device work per call (timed by the judge), the least over the rounds after the first (a
    stalled one does not count); a claim under REPLAYED_PLAUSIBLE_FRACTION of it, less a microsecond, is recorded as
    that least, one just above stands."""
    from flashinfer_bench.bench.judge import replayed
    from flashinfer_bench.bench.judge import schedule as timed
    from flashinfer_bench.bench.replay import ReplayShape
    from flashinfer_bench.bench.wire.claims import TimingClaim

    ctx = evaluation_context(SCALE, WORKLOAD, CFG)
    schedule = timed.TimedSchedule(ctx, ("timed", 0), warmup=1, iterations=15, probability=0.0)
    schedule.replay, schedule.replayed_from = ReplayShape(first_calls=5, most_calls=10, rounds=3), 1
    # 0.1 ms of exchange per round, 5 calls of 0.01 ms harness work and 0.03 ms of work each: 0.3 ms, unless the
    # host stalled the round (the third). The first replayed round is left out (it reads too short here).
    schedule.rounds = [timed.Round(0, 1, 5.0, 0.0), timed.Round(1, 5, 0.2, 0.0, True),
                       timed.Round(6, 5, 0.9, 0.5, True), timed.Round(11, 5, 0.3, 0.0, True)]
    from flashinfer_bench.bench import replay as replays
    from flashinfer_bench.bench.judge import context as contexts

    measured = []  # the harness's work, timed once per workload and graph size for every solution of the workload
    monkeypatch.setattr(contexts, "_HARNESS_MS", {})
    monkeypatch.setattr(replays, "harness_device_ms",
                        lambda plan, layouts, size, ring_rows, dps: measured.append((size, ring_rows, dps)) or 0.01)
    floor = timed.ClockFloor(per_call_ms=1.0, ship_ms=0.0, replay_round_ms=0.1)
    least = replayed.REPLAYED_PLAUSIBLE_FRACTION * 0.03 - replayed.REPLAYED_MARGIN_MS

    def recorded(claim_ms: float) -> timed.SessionLatency:
        # One sample a round: its time per call, the harness's work included.
        return schedule.latencies(TimingClaim([claim_ms + 0.01] * 3, "cuda_events"), floor)[0]

    lie, close = recorded(0.00003), recorded(least + 0.0001)
    assert lie.latency_ms == pytest.approx(least) and "0.0300 ms per call" in lie.notes[0]
    assert close.notes == [] and close.latency_ms == pytest.approx(least + 0.0001)
    schedule.ctx = evaluation_context(SCALE, WORKLOAD, CFG)  # the workload's next solution
    # Measured on a graph of a round's calls, with the worker's ring (``most_calls`` rows), and again for a
    # destination-passing solution (whose outputs are written in place: no copies).
    assert recorded(least + 0.0001).latency_ms == pytest.approx(least + 0.0001) and measured == [(5, 10, False)]
    schedule.ctx = dataclasses.replace(schedule.ctx, destination_passing=True)
    assert recorded(least + 0.0001).notes == [] and measured == [(5, 10, False), (5, 10, True)]


def test_a_replayed_session_of_three_trials_holds_each_trials_round_to_the_sessions_bound(monkeypatch):
    """A replayed session may time every trial (judge/replayed.py RAMP_ROUNDS): its rounds are sized for all their
    planned calls; after the first two, one round per trial, whose sample is that trial's claim, each held to the
    session's work per call, so a lie in one round is caught in its trial; a loop that ends before its planned
    rounds fails."""
    from flashinfer_bench.bench import replay as replays
    from flashinfer_bench.bench.judge import context as contexts
    from flashinfer_bench.bench.judge import replayed
    from flashinfer_bench.bench.judge import schedule as timed
    from flashinfer_bench.bench.replay import ReplayShape
    from flashinfer_bench.bench.wire.claims import TimingClaim

    assert replayed.trial_rounds(5, 3) == [range(2, 3), range(3, 4), range(4, 5)]
    assert replayed.trial_rounds(5, 1) == [range(5)]
    now = [0.0]
    monkeypatch.setattr(timed.time, "perf_counter", lambda: now[0])

    def session(trials: int) -> timed.TimedSchedule:
        made = timed.TimedSchedule(evaluation_context(SCALE, WORKLOAD, CFG), ("timed", 0), warmup=1, iterations=50,
                                   probability=0.0, trials=trials)
        assert made.replay is None and made.trials == 1  # the CPU: nothing to replay, one trial a session
        rounds = replayed.REPLAYED_ROUNDS if trials == 1 else replayed.RAMP_ROUNDS + trials
        made.replay, made.trials = ReplayShape(first_calls=16, most_calls=1024, rounds=rounds), trials
        made.opening_round()
        made.on_ran(1, replay=True)
        return made

    def next_round(made: timed.TimedSchedule, ms_per_call: float) -> int:
        calls = len(made.next_round())
        now[0] += 0.1e-3 + calls * ms_per_call / 1e3
        made.on_ran(made.ended + calls)
        return calls

    # Calls of 1 ms: REPLAYED_ROUND_MS holds a few, so the planned calls size the rounds: 34 left over 4 rounds for one
    # trial's 50 (16 each), 134 for three trials' 150 (64 each).
    one, three = session(1), session(3)
    assert [next_round(one, 1.0) for _ in range(2)] == [16, 16]
    assert [next_round(three, 1.0) for _ in range(2)] == [16, 64]
    with pytest.raises(timed.CallFailed, match="ended after 2 of its 5 replayed rounds"):
        three.finished()
    now[0] = 0.0
    three = session(3)
    # 0.1 ms of exchange per round, 0.01 ms of the harness's work and 0.03 ms of work per call.
    sizes = [next_round(three, 0.04) for _ in range(5)]
    three.finished()
    monkeypatch.setattr(contexts, "_HARNESS_MS", {})
    monkeypatch.setattr(replays, "harness_device_ms", lambda plan, layouts, size, ring_rows, dps: 0.01)
    floor = timed.ClockFloor(per_call_ms=1.0, ship_ms=0.0, replay_round_ms=0.1)
    honest = three.latencies(TimingClaim([0.04] * 5, "cuda_events"), floor)
    assert [t.latency_ms for t in honest] == pytest.approx([0.03] * 3) and all(not t.notes for t in honest)
    assert [t.timed_calls for t in honest] == sizes[2:] and [len(t.samples_ms) for t in honest] == [1, 1, 1]
    # The ramp's rounds are no trial's: a lie there moves none; a lie in the last trial's round is that trial's.
    assert [t.latency_ms for t in three.latencies(TimingClaim([0.00002] * 2 + [0.04] * 3, "cuda_events"),
                                                 floor)] == pytest.approx([0.03] * 3)
    lying = three.latencies(TimingClaim([0.04] * 4 + [0.01002], "cuda_events"), floor)
    least = replayed.REPLAYED_PLAUSIBLE_FRACTION * 0.03 - replayed.REPLAYED_MARGIN_MS
    assert [t.latency_ms for t in lying] == pytest.approx([0.03, 0.03, least])
    assert not lying[0].notes and "claim not believed" in lying[2].notes[0] and lying[2].samples_ms == []


def test_the_references_replayed_trials_are_its_rounds_less_the_harnesss_draws(monkeypatch):
    """The reference's replayed session is split into trials as a solution's, and its samples are net of the
    harness's own device work as a solution's are (its draws; it copies no outputs into a ring): else a tiny
    reference would be charged for its inputs' draws, and every speed-up over it inflated."""
    from flashinfer_bench.bench import replay as replays
    from flashinfer_bench.bench.judge import context as contexts
    from flashinfer_bench.bench.judge.local import UncheckedSchedule
    from flashinfer_bench.bench.judge.windows import Round
    from flashinfer_bench.bench.replay import ReplayShape, graph_sizes

    measured = []
    monkeypatch.setattr(contexts, "_HARNESS_MS", {})
    monkeypatch.setattr(replays, "harness_device_ms",
                        lambda plan, layouts, size, ring_rows, dps: measured.append((ring_rows, size)) or 0.002)
    schedule = UncheckedSchedule(evaluation_context(SCALE, WORKLOAD, CFG), ("reference", 0), 10, 50, trials=3)
    assert schedule.replay is None and schedule.trial_samples([0.5, 0.7]) == [[0.5, 0.7]]  # the CPU: one trial
    schedule.replay = ReplayShape(16, 1024, 5)
    schedule.rounds = [Round(10, 16, 0.2, 0.0, True), *[Round(26 + 64 * k, 64, 0.5, 0.0, True) for k in range(4)]]
    trials = schedule.trial_samples([0.009, 0.007, 0.005, 0.006, 0.0021])
    assert [t for [t] in trials] == pytest.approx([0.003, 0.004, 0.0001]) and measured == [(0, graph_sizes(64)[0])]


def test_the_references_replayed_rounds_are_sized_on_its_own_clock_as_a_solutions_are(monkeypatch):
    """The reference's rounds after the first are sized for REPLAYED_ROUND_MS at its least time per call so far (the
    ramp's for its share of it), as a solution's, not for the planned calls alone: its 50 calls of 3 trials would
    make rounds of 64 calls, where a solution's of the same calls hold 1,024."""
    from flashinfer_bench.bench.judge import local
    from flashinfer_bench.bench.judge.local import UncheckedSchedule
    from flashinfer_bench.bench.judge.replayed import RAMP_ROUNDS, RAMP_SIZING_SHARE, REPLAYED_ROUND_MS
    from flashinfer_bench.bench.replay import ReplayShape

    now = [0.0]
    monkeypatch.setattr(local.time, "perf_counter", lambda: now[0])
    per_call_ms = 0.01  # the ramp's round then holds 512 calls, the trials' 1,024
    schedule = UncheckedSchedule(evaluation_context(SCALE, WORKLOAD, CFG), ("reference", 0), 10, 50, trials=3)
    schedule.replay = ReplayShape(16, 1024, RAMP_ROUNDS + 3)
    assert len(schedule.opening_round()) == 10
    schedule.on_ran(10, replay=True)
    sizes, ended = [], 10
    for _ in range(schedule.replay.rounds):
        seeds = schedule.next_round()
        sizes.append(len(seeds))
        now[0] += len(seeds) * per_call_ms / 1e3
        ended += len(seeds)
        schedule.on_ran(ended)
    ramp = 2 ** math.ceil(math.log2(RAMP_SIZING_SHARE * REPLAYED_ROUND_MS / per_call_ms))
    assert sizes == [16, ramp, 1024, 1024, 1024]
    assert [r.calls for r in schedule.rounds] == sizes
    assert [r.wall_ms for r in schedule.rounds] == pytest.approx([n * per_call_ms for n in sizes])


def test_a_session_asked_to_replay_whose_calls_were_made_one_at_a_time_says_so_in_the_log():
    """The worker decides whether its calls can be replayed (a solution could decline to escape the replayed
    bound): where it did not, the trace's log says the looser bound applied."""
    from flashinfer_bench.bench.judge import replayed
    from flashinfer_bench.bench.judge import schedule as timed
    from flashinfer_bench.bench.replay import ReplayShape
    from flashinfer_bench.bench.wire.claims import TimingClaim

    schedule = timed.TimedSchedule(evaluation_context(SCALE, WORKLOAD, CFG), ("timed", 0), warmup=1, iterations=5,
                                   probability=0.0)
    schedule.rounds = [timed.Round(0, 1, 5.0, 0.0), timed.Round(1, 5, 10.0, 0.0)]
    floor = timed.ClockFloor(per_call_ms=0.0, ship_ms=0.0)
    assert schedule.latencies(TimingClaim([2.0] * 5, "cupti"), floor)[0].notes == []  # not asked: nothing to say
    schedule.replay = ReplayShape(first_calls=5, most_calls=5, rounds=2)
    recorded = schedule.latencies(TimingClaim([2.0] * 5, "cupti"), floor)[0]
    assert recorded.latency_ms == 2.0 and recorded.notes == [replayed.NOT_REPLAYED_NOTE]


def test_a_claim_far_below_the_work_is_raised_to_the_least_the_clock_allows_and_one_above_it_stands():
    """The recorded latency moves smoothly with the judge's clock: a claim just under the least the clock allows is
    recorded as that least, not as the whole window (an honest host-bound solution's host time reads as work)."""
    from flashinfer_bench.bench.judge import schedule as timed
    from flashinfer_bench.bench.wire.claims import TimingClaim

    schedule = timed.TimedSchedule(evaluation_context(SCALE, WORKLOAD, CFG), ("timed", 0), warmup=0, iterations=5,
                                   probability=0.0)
    schedule.rounds = [timed.Round(0, 5, 10.0, 0.0)]
    floor = timed.ClockFloor(per_call_ms=0.0, ship_ms=0.0)
    margin = timed.MARGIN_MS + timed.ESTIMATE_SHARE_OF_MARGIN * schedule.copy_ms
    least = timed.PLAUSIBLE_FRACTION * 2.0 - timed.HOST_ALLOWANCE_MS - margin

    def recorded(claim_ms: float) -> timed.SessionLatency:
        return schedule.latencies(TimingClaim([claim_ms] * 5, "cupti"), floor)[0]

    below, above = recorded(least - 0.01), recorded(least + 0.01)
    assert below.latency_ms == pytest.approx(least) and "the least the judge's clock allows" in below.notes[0]
    assert below.samples_ms == [] and above.notes == [] and above.latency_ms == pytest.approx(least + 0.01)
    impossible = recorded(3.0)  # more than the whole window: the judge's estimate of the work
    assert impossible.latency_ms == pytest.approx(2.0) and "the judge's estimate" in impossible.notes[0]


def test_the_shipment_floor_is_paid_once_per_shipment_and_work_per_shipped_call_is_seen():
    """A shipment costs the exchange once, whatever the calls it carries (a calibration that ships several calls at
    a time must not make a session's one-call shipments look like work), and a share of the session's median round
    more (a host waking from a long round); what grows with the calls beyond the copies is work done while
    shipping, and lengthening a few rounds does not hide it."""
    from flashinfer_bench.bench.judge import schedule as timed
    from flashinfer_bench.bench.wire.claims import TimingClaim

    calibration = timed.TimedSchedule(evaluation_context(SCALE, WORKLOAD, CFG), ("calibration",), warmup=0,
                                      iterations=8, probability=0.0)
    calibration.rounds = [timed.Round(0, 4, 4.0, 0.0), timed.Round(4, 4, 4.0, 0.0)]
    copy = calibration.copy_ms
    exchange = 1.2  # ms: the same for two calls and for three
    calibration.shipments = [timed.Shipment(0, 2, exchange + 2 * copy, 0.0),
                             timed.Shipment(4, 3, exchange + 3 * copy, 0.0)]
    floor = calibration.floor()
    assert floor.ship_ms == pytest.approx(exchange - timed.SHIP_ROUND_SHARE * 4.0)  # less its 4 ms rounds' share

    def session(work_per_shipped_call_ms: float) -> timed.SessionLatency:
        schedule = timed.TimedSchedule(evaluation_context(SCALE, WORKLOAD, CFG), ("timed", 0), warmup=0,
                                       iterations=10, probability=0.0)
        schedule.rounds = [timed.Round(first, 1, 1.0, 0.0) for first in range(10)]
        schedule.shipments = [timed.Shipment(first, 1, exchange + copy + work_per_shipped_call_ms, 0.0)
                              for first in range(10)]
        return schedule.latencies(TimingClaim([0.3] * 10, "host_clock"), floor)[0]

    assert session(0.0).notes == [] and session(0.0).latency_ms == 0.3
    lazy = session(2.0)
    assert "work done when its outputs were asked for" in lazy.notes[0] and lazy.latency_ms > 1.9
    # After a long round a shipment takes longer (a host waking from it): a share of the round is not work.
    after_long_rounds = timed.TimedSchedule(evaluation_context(SCALE, WORKLOAD, CFG), ("timed", 1), warmup=0,
                                            iterations=100, probability=0.0)
    after_long_rounds.rounds = [timed.Round(first, 10, 10 * 0.3, 0.0) for first in range(0, 100, 10)]
    woke_late = timed.SHIP_ROUND_SHARE * 3.0 + 0.45  # ms: over HOST_ALLOWANCE_MS, but for the share
    after_long_rounds.shipments = [timed.Shipment(first, 1, floor.ship_ms + copy + woke_late, 0.0)
                                   for first in range(0, 100, 10)]
    assert after_long_rounds.latencies(TimingClaim([0.3] * 100, "host_clock"), floor)[0].notes == []
    # A lazy solution that lengthens a few rounds (3 of 10) to widen the share gains nothing: the median round's.
    padded = timed.TimedSchedule(evaluation_context(SCALE, WORKLOAD, CFG), ("timed", 2), warmup=0, iterations=10,
                                 probability=0.0)
    padded.rounds = [timed.Round(first, 1, 30.0 if first < 3 else 0.5, 0.0) for first in range(10)]
    padded.shipments = [timed.Shipment(first, 1, floor.ship_ms + copy + 2.0, 0.0) for first in range(10)]
    lazy = padded.latencies(TimingClaim([0.3] * 10, "host_clock"), floor)[0]
    assert "work done when its outputs were asked for" in lazy.notes[0]


def test_the_work_per_call_comes_from_rounds_with_a_picked_call_so_skipping_unpicked_calls_gains_nothing():
    """Three timed calls of 100 ms, one a round (a slow solution's sized session): a solution that skips the work of
    the first two (each picked with 1/8 only) and does the always-picked last one. Over every round the median
    window was the skipped calls' 1 ms, and its claim of 0.5 ms stood, 0.875^2 of the time; over the rounds with a
    picked call it is the last call's 100 ms. An honest solution's claim stands either way."""
    from flashinfer_bench.bench.judge import schedule as timed
    from flashinfer_bench.bench.wire.claims import TimingClaim

    floor = timed.ClockFloor(per_call_ms=0.0, ship_ms=0.0)

    def session(windows_ms: list[float], claims_ms: list[float]) -> timed.SessionLatency:
        schedule = timed.TimedSchedule(evaluation_context(SCALE, WORKLOAD, CFG), ("timed", 0), warmup=0,
                                       iterations=3, probability=0.125)
        schedule.rounds = [timed.Round(first, 1, wall, 0.0) for first, wall in enumerate(windows_ms)]
        schedule.shipments = [timed.Shipment(2, 1, schedule.copy_ms, 0.0)]  # the planned last call, shipped
        return schedule.latencies(TimingClaim(claims_ms, "cuda_events"), floor)[0]

    skipper = session([1.0, 1.0, 100.0], [0.5, 0.5, 100.0])
    assert "far less than the work in a call" in skipper.notes[0]
    assert skipper.latency_ms > timed.PLAUSIBLE_FRACTION * 100.0 - timed.HOST_ALLOWANCE_MS - 0.1
    honest = session([100.0, 101.0, 100.0], [99.0, 99.5, 99.0])
    assert honest.notes == [] and honest.latency_ms == 99.0


def test_a_timing_loop_that_ends_before_its_planned_last_call_fails():
    """Of calls made one at a time, the planned last is the one always checked: a loop that stops short of it would
    escape every pick but by luck (an honest timer makes at least the planned calls). Replayed rounds have picks of
    their own, and large outputs hold them to fewer calls than planned."""
    from flashinfer_bench.bench.judge import schedule as timed

    schedule = timed.TimedSchedule(evaluation_context(SCALE, WORKLOAD, CFG), ("timed", 0), warmup=0, iterations=3,
                                   probability=0.0)
    schedule.opening_round()
    assert schedule.on_ran(1) == []
    with pytest.raises(timed.CallFailed, match="ended after 1 of its 3 planned calls"):
        schedule.finished()
    for count in (2, 3):
        schedule.next_round()
        picked = schedule.on_ran(count)
    assert picked == [2]
    schedule.finished()  # all planned calls made


def test_a_trial_whose_reference_outputs_are_all_zero_is_drawn_again():
    """An MoE token routed to no local expert gives all-zero outputs: against them a solution returning zeros, or
    its outputs scaled, passes. Such a trial is drawn again from another seed."""
    from flashinfer_bench.bench.evaluators.evaluator import TRIAL_DRAWS
    from flashinfer_bench.bench.judge.local import LocalSolution

    gated = Definition.model_validate({**SCALE_ADD, "reference": (
        "import torch\n\ndef run(x, y):\n    return (x * 2 + y) * (x[0] > 0)\n")})
    zeros_first = next(secret for secret in range(1, 100)
                       if float(evaluation_context(gated, WORKLOAD, CFG, secret).inputs(
                           evaluation_context(gated, WORKLOAD, CFG, secret).trial_seed(0))[0][0]) <= 0)
    ctx = evaluation_context(gated, WORKLOAD, CFG, zeros_first)
    baseline = DefaultEvaluator.build_baseline(ctx, reference_callee(gated), profile=False)
    assert baseline.seeds[0] != ctx.trial_seed(0) and all(bool(out[0].any()) for out in baseline.outputs)
    zeros = LocalSolution(ctx, ValueReturning(lambda x, y: torch.zeros_like(x)))
    assert DefaultEvaluator.check_correctness(ctx, zeros, baseline).status is EvaluationStatus.INCORRECT_NUMERICAL
    honest = LocalSolution(ctx, ValueReturning(lambda x, y: (x * 2 + y) * (x[0] > 0)))
    assert DefaultEvaluator.check_correctness(ctx, honest, baseline).passed

    always_zero = Definition.model_validate({**SCALE_ADD, "reference": (
        "import torch\n\ndef run(x, y):\n    return torch.zeros_like(x)\n")})
    ctx = evaluation_context(always_zero, WORKLOAD, CFG)
    baseline = DefaultEvaluator.build_baseline(ctx, reference_callee(always_zero), profile=False)
    assert baseline.seeds[0] == ctx.seed_for("trial", 0, "draw", TRIAL_DRAWS - 1)  # the last draw kept


def test_a_solution_whose_correctness_call_took_a_session_s_time_is_timed_in_the_least_calls_with_no_warm_up():
    """Sized on its last correctness call as the judge clocked it: on the CPU its calls are made one at a time, so
    a call of WARMED_BY_ONE_CALL_MS or more has no warm-up; the trace's log says what the session made."""
    import time

    from flashinfer_bench.bench.evaluators.sessions import SESSION_LEAST_CALLS, SOLUTION_SESSION_MS

    calls = []

    def slow(x, y):
        calls.append(len(calls))
        time.sleep(SOLUTION_SESSION_MS / 1e3 / SESSION_LEAST_CALLS * 1.2)
        return x * 2 + y

    cfg = ResolvedEvalConfig(warmup_runs=2, iterations=10, num_trials=1, rtol=1e-2, atol=1e-2)
    correct, timed = judged_locally(DefaultEvaluator, SCALE, slow, cfg, WORKLOAD, timed=True)
    assert correct.passed
    assert calls == list(range(1 + SESSION_LEAST_CALLS))  # one correctness call, then the timed ones alone
    assert timed.performance.extra["timed_calls"] == [SESSION_LEAST_CALLS]
    assert timed.notes[0].startswith(f"timing: 0 warm-up and {SESSION_LEAST_CALLS} timed calls planned per session "
                                     "(configured: 2 and 10): a call took ")


def test_the_reference_outputs_kept_for_the_workloads_next_solutions_stop_at_their_byte_bound(monkeypatch):
    """Checked timed calls' reference outputs are kept for the next solutions of the workload (they get the same
    picks) up to TIMED_EXPECTED_BYTES; past it the reference runs again for each."""
    from flashinfer_bench.bench.evaluators import evaluator as base

    monkeypatch.setattr(base, "TIMED_EXPECTED_BYTES", 2 * 64 * 4 + 1)  # two calls' outputs of 64 float32
    ctx = evaluation_context(SCALE, WORKLOAD, CFG)
    baseline = base.Baseline(inputs=[], outputs=[], reference=reference_callee(SCALE))
    check = DefaultEvaluator.timed_check(ctx, baseline)
    outputs = [check.expected(seed, ctx.inputs(seed)) for seed in range(4)]
    assert list(baseline.timed_expected) == [0, 1] and baseline.timed_expected_bytes == 2 * 64 * 4
    assert check.known(1) is outputs[1] and check.known(2) is None
    x, y = ctx.inputs(3)
    assert torch.equal(outputs[3][0], x * 2 + y)


def test_each_session_is_told_the_reference_s_timed_latency_and_none_where_it_was_not_timed(monkeypatch):
    """eval_performance hands every session's schedule the latency the judge timed the reference at (it sizes the
    first replayed round, judge/replayed.py ``first_round_calls``): a number the solution cannot touch."""
    from flashinfer_bench.bench.evaluators import evaluator as evaluators
    from flashinfer_bench.bench.judge.local import LocalSolution

    told = []

    class Recording(evaluators.TimedSchedule):
        def __init__(self, *args, **kwargs) -> None:
            told.append(kwargs.get("reference_call_ms"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(evaluators, "TimedSchedule", Recording)
    ctx = evaluation_context(SCALE, WORKLOAD, CFG)
    timed_reference = DefaultEvaluator.build_baseline(ctx, reference_callee(SCALE), profile=True)
    assert timed_reference.reference_timing is not None
    untimed_reference = DefaultEvaluator.build_baseline(ctx, reference_callee(SCALE), profile=False)
    for baseline in (timed_reference, untimed_reference):
        DefaultEvaluator.eval_performance(ctx, LocalSolution(ctx, ValueReturning(lambda x, y: x * 2 + y)), baseline)
    latency = timed_reference.reference_timing.latency_ms
    assert told == [latency] * CFG.num_trials + [None] * CFG.num_trials  # on the CPU: a session per trial

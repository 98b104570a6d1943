"""The check of a slow solution's first timing session's planned last call worked out while its last correctness
call runs (evaluators/ahead.py), judged in-process on the CPU."""

import time

import pytest
import torch
from helpers import SCALE_ADD, evaluation_context

from flashinfer_bench.bench.calling import ValueReturning, reference_callee
from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators import DefaultEvaluator
from flashinfer_bench.bench.evaluators.sessions import (
    SLOW_CALL_MS,
    SOLUTION_SESSION_MS,
    session_calls,
    session_purpose,
)
from flashinfer_bench.bench.judge.local import LocalSolution
from flashinfer_bench.data import Definition, Workload

DEFINITION = Definition.model_validate(SCALE_ADD)
WORKLOAD = Workload(uuid="w", axes={"n": 64}, inputs={})


class CountedReference(ValueReturning):
    """The definition's reference, counting its calls in ``calls``."""

    def __init__(self) -> None:
        reference, self.calls = reference_callee(DEFINITION).fn, 0

        def counted(*args, **kwargs):
            self.calls += 1
            return reference(*args, **kwargs)

        super().__init__(counted)


def slow_solution(ctx, answered: bool) -> LocalSolution:
    """The reference's math, each call SLOW_CALL_MS and more; ``answered``: what ``answered_within`` says."""
    def run(x, y):
        time.sleep(SLOW_CALL_MS / 1e3 + 0.02)
        return x * 2 + y

    class Slow(LocalSolution):
        def answered_within(self, ms: float) -> bool:
            return answered

    return Slow(ctx, ValueReturning(run))


@pytest.mark.parametrize("trials", [1, 2])
def test_a_slow_last_correctness_call_has_the_first_sessions_last_check_worked_out_before_the_session(trials):
    cfg = ResolvedEvalConfig(warmup_runs=2, iterations=8, num_trials=trials, rtol=1e-2, atol=1e-2,
                             extra={"timed_check_probability": 0.5})
    ctx = evaluation_context(DEFINITION, WORKLOAD, cfg)
    reference = CountedReference()
    baseline = DefaultEvaluator.build_baseline(ctx, reference, profile=False)
    assert reference.calls == trials and not baseline.timed_expected
    solution = slow_solution(ctx, answered=False)
    assert DefaultEvaluator.check_correctness(ctx, solution, baseline).passed
    # The first session's plan is known: no warm-up, SESSION_LEAST_CALLS calls, the last of them always checked.
    warmup, iterations = session_calls(cfg, SLOW_CALL_MS, SOLUTION_SESSION_MS)
    stream = ctx.seed_stream(*session_purpose(0))
    last = stream.seed(warmup + iterations - 1)
    assert (warmup, iterations) == (0, 3) and list(baseline.timed_expected) == [last]
    assert reference.calls == trials + 1
    x, y = ctx.inputs(last)  # the reference's outputs for the inputs that call will be given
    torch.testing.assert_close(baseline.timed_expected[last][0], x * 2 + y)
    picks = [i for i in range(warmup + iterations - 1) if stream.seed("pick", i) / (1 << 63) < 0.5]
    worked_out = reference.calls
    performance = DefaultEvaluator.eval_performance(ctx, solution, baseline)
    assert performance.performance.latency_ms > SLOW_CALL_MS
    assert performance.performance.extra["timed_calls"][0] == 3
    # The first session's checks called the reference for its random picks only; a later trial's session has picks
    # of its own, its planned last among them.
    if trials == 1:
        assert reference.calls == worked_out + len(picks)
    else:
        assert reference.calls > worked_out + len(picks)


def test_a_call_answered_in_time_has_nothing_worked_out():
    cfg = ResolvedEvalConfig(warmup_runs=1, iterations=3, num_trials=1, rtol=1e-2, atol=1e-2)
    ctx = evaluation_context(DEFINITION, WORKLOAD, cfg)
    reference = CountedReference()
    baseline = DefaultEvaluator.build_baseline(ctx, reference, profile=False)
    assert DefaultEvaluator.check_correctness(ctx, slow_solution(ctx, answered=True), baseline).passed
    assert not baseline.timed_expected and reference.calls == 1

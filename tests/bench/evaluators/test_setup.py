"""A solution's setup: run before every call with the layout inputs only, kept out of the timed call, its time
reported beside the call's (in-process here; the runner does the same in a worker)."""

import time

import pytest
import torch
from helpers import evaluation_context

from flashinfer_bench.bench.calling import reference_callee
from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators import DefaultEvaluator
from flashinfer_bench.bench.judge.local import LocalSolution
from flashinfer_bench.bench.wire.failures import CallFailed
from flashinfer_bench.compile.runnable import Runnable
from flashinfer_bench.data import Definition, EvaluationStatus, Workload

#: out = x + offset, where the offsets (integers: layout) come with the floating data x.
SHIFT = Definition.model_validate({
    "name": "shift", "op_type": "elementwise", "axes": {"n": {"type": "var"}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "offset": {"shape": ["n"], "dtype": "int32"}},
    "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
    "reference": "def run(x, offset):\n    return x + offset.float()\n",
})
WORKLOAD = Workload(uuid="w", axes={"n": 256}, inputs={})
CFG = ResolvedEvalConfig(warmup_runs=2, iterations=20, num_trials=2, rtol=1e-3, atol=1e-3)
SETUP_SECONDS = 0.01


def evaluate(setup, run):
    ctx = evaluation_context(SHIFT, WORKLOAD, CFG)
    baseline = DefaultEvaluator.build_baseline(ctx, reference_callee(SHIFT), profile=False)
    solution = LocalSolution(ctx, Runnable(fn=run, destination_passing_style=True, cached=True, setup=setup))
    correct = DefaultEvaluator.check_correctness(ctx, solution, baseline)
    return correct, DefaultEvaluator.eval_performance(ctx, solution, baseline) if correct.passed else None


def test_setup_gets_the_layout_inputs_and_its_time_is_reported_beside_the_call():
    given = []

    def setup(**inputs):
        given.append(sorted(inputs))
        time.sleep(SETUP_SECONDS)  # a plan() or a workspace allocation
        return {"shift": inputs["offset"].float()}

    def run(x, offset, out, shift):
        torch.add(x, shift, out=out)

    correct, timed = evaluate(setup, run)
    assert correct.passed and timed is not None
    assert set(map(tuple, given)) == {("offset",)}  # never the floating data
    # before every call: the correctness calls, and each session's warm-up and timed calls
    assert len(given) == CFG.num_trials + CFG.num_trials * (CFG.warmup_runs + CFG.iterations)
    # A sleep never returns early (how much later depends on the host's load): the setup's time is at least its
    # sleep, and a call whose time held the setup would take at least as long.
    assert timed.setup_latency_ms >= SETUP_SECONDS * 1e3 * 0.95
    assert timed.performance.latency_ms < SETUP_SECONDS * 1e3


def test_a_solution_without_setup_reports_no_setup_time():
    _, timed = evaluate(None, lambda x, offset, out: torch.add(x, offset, out=out))
    assert timed.setup_latency_ms is None


def test_a_setup_that_returns_no_keyword_arguments_is_a_runtime_error():
    with pytest.raises(CallFailed) as failed:
        evaluate(lambda offset: [offset], lambda x, offset, out: None)
    assert failed.value.status is EvaluationStatus.RUNTIME_ERROR and "setup must return a dict" in failed.value.message

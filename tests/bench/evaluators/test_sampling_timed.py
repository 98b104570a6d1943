"""SamplingTimedCheck: a timed call whose samples ignore its inputs (a skipped call's stale buffer, a result kept
from an earlier call) fails, honest samplers pass, and the stated false-pass bound holds."""

import json
import math
import weakref

import pytest
import torch
from helpers import REPO, evaluation_context, sampling_definition

from flashinfer_bench.bench.calling import ValueReturning, reference_callee
from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators import SamplingEvaluator
from flashinfer_bench.bench.evaluators.evaluator import Baseline, TimedOutputsMismatch
from flashinfer_bench.bench.evaluators.sampling import SamplingTimedCheck, outside_filters
from flashinfer_bench.bench.harness import seeded
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.judge.local import LocalSolution
from flashinfer_bench.data import TraceSet, Workload

EXAMPLES = REPO / "examples" / "trace-set"
TOP_K_TOP_P = "top_k_top_p_sampling_from_probs_v1024"
#: The example's default warm-up would hide nothing here: with none, two of a session's three calls are stale.
FEW_CALLS = ResolvedEvalConfig(warmup_runs=0, iterations=3, num_trials=2, rtol=1e-2, atol=1e-2,
                               extra={"sampling_validation_trials": 100, "sampling_significance": 1e-4})


@pytest.fixture(scope="module")
def example():
    trace_set = TraceSet.from_path(EXAMPLES)
    source = json.loads((EXAMPLES / "solutions/flashinfer-bench-examples/sampling" / TOP_K_TOP_P
                         / f"{TOP_K_TOP_P}_torch.json").read_text())["sources"][0]["content"]
    namespace = {}
    exec(compile(source, "main.py", "exec"), namespace)
    workloads = {t.workload.axes["batch_size"]: t.workload for t in trace_set.workloads[TOP_K_TOP_P]}
    return trace_set.definitions[TOP_K_TOP_P], workloads, namespace["run"]


def stale_destination_passing(honest):
    """Samples honestly into a buffer it has not filled yet; handed that buffer again (the timing loop's), it
    returns at once and leaves its earlier samples there."""
    filled = set()

    def run(probs, top_k, top_p, samples):
        if id(samples) in filled:
            return
        honest(probs, top_k, top_p, samples)
        filled.add(id(samples))
        weakref.finalize(samples, filled.discard, id(samples))

    return run


def stale_value_returning(honest):
    """Samples honestly for an input tensor it has not seen; called with it again, returns its last result."""
    kept = {}

    def run(probs, top_k, top_p):
        if id(probs) not in kept:
            kept[id(probs)] = torch.empty(probs.shape[0], dtype=torch.int64)
            honest(probs, top_k, top_p, kept[id(probs)])
            weakref.finalize(probs, kept.pop, id(probs), None)
        return kept[id(probs)]

    return run


def judged(definition, workload, fn, dps, cfg=FEW_CALLS):
    ctx = EvaluationContext(definition, workload, cfg, "cpu", str(EXAMPLES), 7)
    baseline = SamplingEvaluator.build_baseline(ctx, reference_callee(definition), profile=False)
    solution = LocalSolution(ctx, ValueReturning(fn, destination_passing_style=dps))
    assert SamplingEvaluator.check_correctness(ctx, solution, baseline).passed
    return SamplingEvaluator.eval_performance(ctx, solution, baseline)


@pytest.mark.parametrize("batch", [1, 4, 8])
def test_stale_samples_of_the_examples_top_k_top_p_sampler_fail_and_honest_ones_pass(example, batch):
    definition, workloads, honest = example
    for fn, dps in ((stale_destination_passing(honest), True), (stale_value_returning(honest), False)):
        with pytest.raises(TimedOutputsMismatch) as caught:
            judged(definition, workloads[batch], fn, dps)
        assert "outside the top-k" in caught.value.result.message
    # Honest: every timed call's samples checked, none failed (TimedOutputsMismatch would propagate).
    assert judged(definition, workloads[batch], honest, True).performance.latency_ms > 0
    assert judged(definition, workloads[batch], reference_callee(definition).fn, False).performance.latency_ms > 0


def test_the_filter_check_allows_every_honest_semantics():
    row = torch.tensor([[0.4, 0.3, 0.2, 0.1]], dtype=torch.float64)

    def breaks(token, k=None, p=None):
        return outside_filters(row, torch.tensor([token]), None if k is None else torch.tensor([float(k)]),
                               None if p is None else torch.tensor([p], dtype=torch.float64))

    assert [breaks(t, k=2) for t in range(4)] == ["", "", "top-k", "top-k"]
    assert all(breaks(3, k=k) == "" for k in (0, -1, 4, 5))  # k <= 0 or >= vocab: no top-k filter
    assert [breaks(t, p=0.5) for t in range(4)] == ["", "", "top-p", "top-p"]
    assert breaks(2, p=0.7) == ""  # mass above it is exactly top_p: kept by the "<=" reading, so allowed
    assert [breaks(t, p=0.0) for t in range(4)] == ["", "top-p", "top-p", "top-p"]  # top_p <= 0: the argmax
    assert all(breaks(t, p=1.0) == "" for t in range(4))
    ties = torch.tensor([[0.3, 0.3, 0.3, 0.1]], dtype=torch.float64)
    assert [outside_filters(ties, torch.tensor([t]), torch.tensor([1.0]), None) for t in range(4)] == \
        ["", "", "", "top-k"]  # any tie-breaking of the top-1


def test_every_sample_the_examples_reference_draws_passes_the_filter_check(example):
    definition, workloads, _ = example
    ctx = EvaluationContext(definition, workloads[8], FEW_CALLS, "cpu", str(EXAMPLES), 3)
    check = SamplingTimedCheck(SamplingEvaluator, ctx, Baseline(inputs=[], outputs=[]))
    reference = reference_callee(definition).fn
    for call in range(200):
        inputs = ctx.inputs(ctx.seed_for("filters", call))
        probs, top_k, top_p = check.expected(0, inputs)
        with seeded(call, "cpu"):
            samples = reference(*inputs)
        assert outside_filters(probs.double() / probs.double().sum(1, keepdim=True), samples, top_k, top_p) == ""


def test_the_score_is_calibrated_on_the_references_own_draws(example):
    definition, workloads, _ = example
    filtered = EvaluationContext(definition, workloads[4], FEW_CALLS, "cpu", str(EXAMPLES), 7)
    excess, _ = SamplingEvaluator.build_baseline(filtered, reference_callee(definition), profile=False) \
        .extra["timed_score"]
    assert excess > 1.5  # top-k <= 4 of 1024 tokens: well above sampling from the whole row
    plain = sampling_definition(1024)
    ctx = evaluation_context(plain, workloads[4].model_copy(update={"inputs": {}}), FEW_CALLS)
    excess, _ = SamplingEvaluator.build_baseline(ctx, reference_callee(plain), profile=False).extra["timed_score"]
    assert excess < 0.1


def test_without_filters_repeated_or_input_ignoring_samples_fail():
    """Sampling from the whole row (no top-k / top-p to check): a call that leaves its last samples fails the
    repeat check, one that draws tokens without looking at the probabilities fails the score."""
    plain = sampling_definition(1024)
    workload = Workload(uuid="b8", axes={"batch_size": 8}, inputs={})
    ctx = evaluation_context(plain, workload, FEW_CALLS.model_copy(update={"warmup_runs": 10}))
    baseline = SamplingEvaluator.build_baseline(ctx, reference_callee(plain), profile=False)

    def honest(probs):
        return torch.multinomial(probs, 1).squeeze(1)

    kept = {}

    def stale(probs):
        if id(probs) not in kept:
            kept[id(probs)] = honest(probs)
            weakref.finalize(probs, kept.pop, id(probs), None)
        return kept[id(probs)]

    generator = torch.Generator().manual_seed(5)

    def ignoring(probs):
        return torch.randint(0, probs.shape[1], (probs.shape[0],), generator=generator)

    for fn, message in ((stale, "repeat the previous call's sample"), (ignoring, "do not follow the probabilities")):
        with pytest.raises(TimedOutputsMismatch) as caught:
            SamplingEvaluator.eval_performance(ctx, LocalSolution(ctx, ValueReturning(fn)), baseline)
        assert message in caught.value.result.message
    assert SamplingEvaluator.eval_performance(ctx, LocalSolution(ctx, ValueReturning(honest)), baseline)


def test_the_repeat_check_is_a_binomial_tail_of_one_in_v():
    ctx = evaluation_context(sampling_definition(8), Workload(uuid="b1", axes={"batch_size": 1}, inputs={}),
                             FEW_CALLS)
    check = SamplingTimedCheck(SamplingEvaluator, ctx, Baseline(inputs=[], outputs=[]))
    generator = torch.Generator().manual_seed(2)
    for token in (3, 3, 3, 5):
        probs = torch.softmax(torch.randn(1, 8, generator=generator), dim=1)
        assert check.check([((torch.tensor([token]),), (probs, None, None))]) is None
    assert (check.repeats, check.pairs) == (2, 3)
    assert check.repeat_probability == pytest.approx(3 * (1 / 8) ** 2 * (7 / 8) + (1 / 8) ** 3)
    assert check.check([((torch.tensor([5]),), (probs, None, None))]) is None  # the same row again: no pair
    assert (check.repeats, check.pairs) == (2, 3)


class FixedThreshold(SamplingTimedCheck):
    threshold = 2.0


def test_the_false_pass_bound_holds_for_samples_that_ignore_their_inputs():
    """Sessions of 4 calls of 2 rows over 64 tokens whose samples are drawn without looking at the
    probabilities: the share that reaches the threshold stays under the mean bound (seeded: the same every run)."""
    definition = sampling_definition(64)
    ctx = evaluation_context(definition, Workload(uuid="b2", axes={"batch_size": 2}, inputs={}), FEW_CALLS)
    baseline = Baseline(inputs=[], outputs=[])
    generator = torch.Generator().manual_seed(11)
    sessions, passed, bounds = 1500, 0, 0.0
    for _ in range(sessions):
        check = FixedThreshold(SamplingEvaluator, ctx, baseline)
        for _ in range(4):
            probs = torch.softmax(torch.randn(2, 64, generator=generator), dim=1)
            assert check.check([((torch.randint(0, 64, (2,), generator=generator),), (probs, None, None))]) is None
        passed += check.finish() is None
        bounds += check.false_pass_bound
        assert check.false_pass_bound <= math.exp(-check.threshold)  # lambda = 1: the mean of V p is 1
    assert 0 < passed / sessions <= bounds / sessions < 0.5


def test_samples_that_do_not_follow_one_row_each_are_refused_with_why():
    """Speculative sampling's accepted tokens (one more per row than the draft has rows) are no sample per row of
    the probabilities: the evaluator says so instead of failing inside its statistics."""
    plain = sampling_definition(8)
    definition = type(plain).model_validate({
        **plain.model_dump(mode="json"),
        "axes": {"batch_size": {"type": "var"}, "vocab_size": {"type": "const", "value": 8},
                 "two": {"type": "const", "value": 2}},
        "outputs": {"samples": {"shape": ["batch_size", "two"], "dtype": "int64"}},
        "reference": "import torch\ndef run(probs):\n    return torch.multinomial(probs, 2)\n",
    })
    ctx = evaluation_context(definition, Workload(uuid="b3", axes={"batch_size": 3}, inputs={}), FEW_CALLS)
    with pytest.raises(ValueError, match="one sample per row of the definition's probabilities \\(3 rows here\\); "
                                         "its outputs hold 6 values per call"):
        SamplingEvaluator.build_baseline(ctx, reference_callee(definition), profile=False)

"""Evaluators judged in-process on CPU tensors (the worker calls exactly these methods)."""

import weakref

import torch
from helpers import SCALE_ADD

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators import (
    DefaultEvaluator,
    DSAEvaluator,
    LowbitEvaluator,
    SamplingEvaluator,
    resolve_evaluator,
)
from flashinfer_bench.bench.evaluators.calling import ValueReturning
from flashinfer_bench.bench.evaluators.compare import structure_mismatch
from flashinfer_bench.bench.evaluators.evaluator import TimedOutputsMismatch
from flashinfer_bench.data import Definition, EvaluationStatus, Workload

CFG = ResolvedEvalConfig(warmup_runs=1, iterations=3, num_trials=2, rtol=1e-2, atol=1e-2)
SCALE = Definition.model_validate(SCALE_ADD)
WORKLOAD = Workload(uuid="w", axes={"n": 64}, inputs={})


def judge(evaluator, definition, fn, cfg=CFG, workload=WORKLOAD, dps=False):
    baseline = evaluator.build_baseline(definition, workload, cfg, "cpu", profile=False)
    callee = ValueReturning(fn, destination_passing_style=dps)
    return evaluator.check_correctness(definition, callee, baseline.inputs, baseline.outputs, cfg,
                                       workload=workload, device="cpu", baseline=baseline)


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


def test_mutating_inputs_does_not_reach_the_baseline():
    baseline = DefaultEvaluator.build_baseline(SCALE, WORKLOAD, CFG, "cpu", profile=False)
    before = [t.clone() for t in baseline.inputs[0]]

    def vandal(x, y):
        x.fill_(0)
        return x * 2 + y

    DefaultEvaluator.check_correctness(SCALE, ValueReturning(vandal), baseline.inputs, baseline.outputs, CFG,
                                       workload=WORKLOAD, device="cpu")
    assert all(torch.equal(a, b) for a, b in zip(before, baseline.inputs[0], strict=True))


def test_trials_draw_fresh_inputs_deterministically():
    a = DefaultEvaluator.build_baseline(SCALE, WORKLOAD, CFG, "cpu", profile=False)
    b = DefaultEvaluator.build_baseline(SCALE, WORKLOAD, CFG, "cpu", profile=False)
    assert not torch.equal(a.inputs[0][0], a.inputs[1][0])
    assert torch.equal(a.inputs[1][0], b.inputs[1][0])


def test_performance_reports_speedup_against_reference_latency():
    baseline = DefaultEvaluator.build_baseline(SCALE, WORKLOAD, CFG, "cpu", profile=True)
    assert baseline.mean_latency_ms > 0
    perf = DefaultEvaluator.eval_performance(SCALE, ValueReturning(lambda x, y: x * 2 + y), baseline.inputs,
                                             baseline.mean_latency_ms, CFG, workload=WORKLOAD, device="cpu")
    assert perf.latency_ms > 0
    assert abs(perf.speedup_factor - baseline.mean_latency_ms / perf.latency_ms) < 1e-9


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


def timed(fn, dps=False, evaluator=DefaultEvaluator, definition=SCALE):
    baseline = evaluator.build_baseline(definition, WORKLOAD, CFG, "cpu", profile=False)
    callee = ValueReturning(fn, destination_passing_style=dps)
    correct = evaluator.check_correctness(definition, callee, baseline.inputs, baseline.outputs, CFG,
                                          workload=WORKLOAD, device="cpu", baseline=baseline)
    perf = evaluator.eval_performance(definition, callee, baseline.inputs, 1.0, CFG, workload=WORKLOAD,
                                      device="cpu", ref_outputs=baseline.outputs)
    return correct, perf


def test_results_kept_from_an_earlier_call_fail_in_timing():
    correct, _ = timed(lambda x, y: x * 2 + y)
    assert correct.passed
    try:
        timed(keeps_results_per_tensor())
    except TimedOutputsMismatch as exc:
        assert exc.result.status is EvaluationStatus.INCORRECT_NUMERICAL
        assert "timed call" in exc.result.message
    else:
        raise AssertionError("a solution returning stale results passed its timing")


def test_honest_solutions_pass_the_timed_check_in_both_styles():
    assert timed(lambda x, y: x * 2 + y)[1].latency_ms > 0
    assert timed(lambda x, y, out: torch.add(y, x, alpha=2, out=out), dps=True)[1].latency_ms > 0


def test_timed_calls_see_two_trials_values_in_turn():
    seen = []

    def records(x, y):
        seen.append(float(x[0]))
        return x * 2 + y

    baseline = DefaultEvaluator.build_baseline(SCALE, WORKLOAD, CFG, "cpu", profile=False)
    DefaultEvaluator.eval_performance(SCALE, ValueReturning(records), baseline.inputs, 1.0, CFG,
                                      workload=WORKLOAD, device="cpu", ref_outputs=baseline.outputs)
    first = {float(inputs[0][0]) for inputs in baseline.inputs}
    assert set(seen) == first and len(first) == 2  # every call got one of the two trials' values


def test_sampling_outputs_are_not_judged_one_call_at_a_time():
    assert SamplingEvaluator.check_timed_outputs(SCALE, (torch.zeros(1),), (torch.ones(1),), CFG) is None


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


SAMPLING = Definition.model_validate({
    "name": "sample_v8", "op_type": "sampling",
    "axes": {"batch_size": {"type": "var"}, "vocab_size": {"type": "const", "value": 8}},
    "inputs": {"probs": {"shape": ["batch_size", "vocab_size"], "dtype": "float32"}},
    "outputs": {"samples": {"shape": ["batch_size"], "dtype": "int64"}},
    "reference": "import torch\ndef run(probs):\n    return torch.multinomial(probs, 1).squeeze(1)\n",
})
SAMPLING_CFG = CFG.model_copy(update={"extra": {"sampling_validation_trials": 200, "sampling_tvd_threshold": 0.2}})
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
    reference = torch.ones(4)
    assert structure_mismatch((torch.ones(4, device="meta"),), (reference,), ["out"]) == (
        EvaluationStatus.INCORRECT_DTYPE, "output 'out' is on meta, expected cpu")
    assert judge(DefaultEvaluator, SCALE, lambda x, y: (x * 2 + y).to("meta")).status is EvaluationStatus.INCORRECT_DTYPE

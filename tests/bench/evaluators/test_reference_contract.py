"""What the public dataset's references need from the harness: in/out buffers, parameters named out of order,
reproducible sampling verdicts."""

import torch
from helpers import evaluation_context, judged_locally, sampling_definition

from flashinfer_bench.bench.calling import reference_callee
from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators import DefaultEvaluator, SamplingEvaluator
from flashinfer_bench.data import Definition, EvaluationStatus, Workload

CFG = ResolvedEvalConfig(warmup_runs=0, iterations=1, num_trials=2, rtol=1e-2, atol=1e-2)

#: Like the dataset's gdn_mtp references: ``cache`` is an input the reference writes into (an in/out buffer).
IN_OUT = Definition.model_validate({
    "name": "in_out", "op_type": "toy",
    "axes": {"n": {"type": "var"}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "cache": {"shape": ["n"], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
    "reference": "def run(x, cache):\n    cache.copy_(x * 3)\n    return x + 1\n",
})
WORKLOAD = Workload(uuid="w", axes={"n": 16}, inputs={})


def judge(definition, fn, evaluator=DefaultEvaluator, cfg=CFG, workload=WORKLOAD):
    return judged_locally(evaluator, definition, fn, cfg, workload)[0]


def test_an_input_the_reference_writes_into_is_judged_like_an_output():
    def same(x, cache):
        cache.copy_(x * 3)
        return x + 1

    def wrong_cache(x, cache):
        cache.copy_(x * 4)
        return x + 1

    def no_cache(x, cache):
        return x + 1

    def also_writes_x(x, cache):
        cache.copy_(x * 3)
        y = x + 1
        x.zero_()
        return y

    assert judge(IN_OUT, same).passed
    assert judge(IN_OUT, wrong_cache).status is EvaluationStatus.INCORRECT_NUMERICAL
    assert judge(IN_OUT, no_cache).status is EvaluationStatus.INCORRECT_NUMERICAL
    result = judge(IN_OUT, also_writes_x)
    assert result.status is EvaluationStatus.INCORRECT_NUMERICAL and "['x']" in result.message


def test_the_baseline_knows_which_inputs_the_reference_writes_into():
    baseline = DefaultEvaluator.build_baseline(evaluation_context(IN_OUT, WORKLOAD, CFG), reference_callee(IN_OUT),
                                               profile=False)
    assert [set(written) for written in baseline.written] == [{"cache"}, {"cache"}]


#: Like four MoE definitions of the dataset: ``run`` names ``bias`` second, the definition lists it last.
PERMUTED = Definition.model_validate({
    "name": "permuted", "op_type": "toy",
    "axes": {"n": {"type": "var"}, "m": {"type": "const", "value": 3}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "w": {"shape": ["m", "n"], "dtype": "float32"},
               "bias": {"shape": ["m"], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["m"], "dtype": "float32"}},
    "reference": "import torch\n@torch.no_grad()\ndef run(x, bias, w):\n    return w @ x + bias\n",
})


def test_reference_with_parameters_out_of_order_is_called_by_name():
    x, w, bias = torch.randn(4), torch.randn(3, 4), torch.randn(3)
    callee = reference_callee(PERMUTED)
    assert torch.allclose(callee.fn(x, w, bias), w @ x + bias)
    assert judge(PERMUTED, lambda x, w, bias: w @ x + bias, workload=Workload(uuid="p", axes={"n": 4}, inputs={})).passed
    in_order = reference_callee(IN_OUT)
    assert in_order.fn.__name__ == "run"  # no adapter when the order already matches


SAMPLING = sampling_definition(6)
SAMPLING_CFG = CFG.model_copy(update={"num_trials": 1, "extra": {"sampling_validation_trials": 20}})


def test_sampling_verdicts_are_reproducible():
    workload = Workload(uuid="s", axes={"batch_size": 4}, inputs={})
    torch.manual_seed(1)
    first = judge(SAMPLING, lambda p: torch.multinomial(p, 1).squeeze(1), SamplingEvaluator, SAMPLING_CFG, workload)
    torch.manual_seed(2)  # whatever the global generator's state, the histograms are drawn the same
    second = judge(SAMPLING, lambda p: torch.multinomial(p, 1).squeeze(1), SamplingEvaluator, SAMPLING_CFG, workload)
    assert first.passed and first.correctness.extra["tvd"] == second.correctness.extra["tvd"]


#: Like FlashInfer's quantising norms: a scalar input that init gives as a 0-dim tensor, and a scalar output.
ZERO_DIM = Definition.model_validate({
    "name": "zero_dim", "op_type": "toy", "axes": {"n": {"type": "var"}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "scale": {"shape": None, "dtype": "float32"}},
    "outputs": {"y": {"shape": ["n"], "dtype": "float32"}, "total": {"shape": None, "dtype": "float32"}},
    "reference": "def run(x, scale):\n    return x * scale, (x * scale).sum()\n",
    "init": "import torch\ndef _zero_dim_init(*, n, device='cpu', seed=0):\n    torch.manual_seed(seed)\n"
            "    return {'x': torch.randn(n, device=device), 'scale': torch.tensor(0.5, device=device)}\n",
})


def test_zero_dim_inputs_and_outputs_are_judged():
    def wrong_total(x, scale):
        return x * scale, (x * scale).sum() + 1

    def writes_scale(x, scale):
        y = x * scale
        scale.fill_(2.0)
        return y, y.sum()

    workload = Workload(uuid="z", axes={"n": 8}, inputs={})
    honest = judge(ZERO_DIM, lambda x, scale: (x * scale, (x * scale).sum()), workload=workload)
    assert honest.passed, honest.message
    assert judge(ZERO_DIM, wrong_total, workload=workload).status is EvaluationStatus.INCORRECT_NUMERICAL
    written = judge(ZERO_DIM, writes_scale, workload=workload)
    assert written.status is EvaluationStatus.INCORRECT_NUMERICAL and "['scale']" in written.message


def test_a_zero_dim_tensor_crosses_the_slot():
    from flashinfer_bench.bench.slot import Slot, output_layouts

    layouts = output_layouts(ZERO_DIM, Workload(uuid="z", axes={"n": 3}, inputs={}))
    assert [layout.shape for layout in layouts] == [(3,), ()]
    slot = Slot.create(sum(layout.nbytes for layout in layouts))
    try:
        sent = [torch.tensor([1.0, 2.0, 3.0]), torch.tensor(-7.25)]
        assert slot.write(0, sent) == 16
        read, end = slot.read(0, layouts, "cpu")
        assert end == 16 and read[1].dim() == 0 and all(torch.equal(a, b) for a, b in zip(read, sent, strict=True))
    finally:
        slot.close()

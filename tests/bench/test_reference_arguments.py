"""The reference called with the inputs by keyword when its parameters are not the inputs in order: fewer
positional parameters than inputs, keyword-only ones, ``**kwargs``, a parameter named like no input, an API
argument the reference never reads (as FlashInfer's references take them)."""

import pytest
import torch
from helpers import REPO, judged_locally

from flashinfer_bench.bench.calling import reference_callee
from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.definition_code import (
    DefinitionCodeError,
    call_reference,
    required_init_axes,
    workload_from_init,
)
from flashinfer_bench.bench.evaluators import DefaultEvaluator
from flashinfer_bench.bench.inputs import InputPlan
from flashinfer_bench.bench.reference_arguments import ReferenceArgumentError
from flashinfer_bench.compile import build_reference
from flashinfer_bench.data import Definition, EvaluationStatus, TraceSet, Workload

DUMPS = REPO.parent / "shared" / "corpus" / "flashinfer-dumps"
CFG = ResolvedEvalConfig(warmup_runs=0, iterations=1, num_trials=1, rtol=1e-5, atol=1e-5)
WORKLOAD = Workload(uuid="w", axes={"n": 8}, inputs={})


def _definition(reference: str, *, optional_scale: bool = False) -> Definition:
    scale = {"shape": None, "dtype": "float32", **({"optional": True} if optional_scale else {})}
    return Definition.model_validate({
        "name": "kw", "op_type": "toy", "axes": {"n": {"type": "var"}},
        "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "w": {"shape": ["n"], "dtype": "float32"},
                   "scale": scale, "flag": {"shape": None, "dtype": "bool"}},
        "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
        "reference": reference,
    })


#: Like the MoE references of the dumps: fewer positional parameters, the rest keyword-only, in another order.
KEYWORD_ONLY = _definition("def _kw_reference(w, x, *, flag=False, scale=1.0):\n"
                           "    return (x * w * scale) if flag else x + w\n")
#: Like the block-sparse decode reference: an API argument it never reads, the rest read from **kwargs.
KWARGS = _definition("def _kw_reference(x, workspace_buffer, w, **kwargs):\n"
                     "    return x * w * float(kwargs.get('scale', 1.0))\n", optional_scale=True)
#: Like gemma_rmsnorm's: a parameter named like no input takes the input no parameter names.
RENAMED = _definition("def _kw_reference(input, w, scale, flag):\n    return input * w * scale\n")


def _inputs() -> tuple:
    return torch.arange(1.0, 5.0), torch.full((4,), 2.0), 3.0, True


def test_fewer_positional_parameters_than_inputs_are_given_by_keyword():
    x, w, scale, flag = _inputs()
    with pytest.raises(TypeError):  # what calling it positionally did
        build_reference(KEYWORD_ONLY)(x, w, scale, flag)
    assert torch.equal(reference_callee(KEYWORD_ONLY).fn(x, w, scale, flag), x * w * scale)
    assert torch.equal(reference_callee(KEYWORD_ONLY).fn(x, w, scale, False), x + w)


def test_kwargs_take_the_inputs_by_name_and_an_unread_api_argument_is_given_none():
    x, w, scale, flag = _inputs()
    assert torch.equal(reference_callee(KWARGS).fn(x, w, scale, flag), x * w * 3.0)
    assert torch.equal(reference_callee(KWARGS).fn(x, w, None, flag), x * w)  # absent: the reference's default


def test_a_parameter_named_like_no_input_takes_the_spare_input():
    x, w, scale, flag = _inputs()
    assert torch.equal(reference_callee(RENAMED).fn(x, w, scale, flag), x * w * scale)


def test_a_required_parameter_the_reference_reads_and_nothing_gives_is_named():
    reads = _definition("def _kw_reference(x, w, bias, **kwargs):\n    return x * w + bias\n")
    with pytest.raises(ReferenceArgumentError, match=r"needs \['bias'\], which no input gives"):
        reference_callee(reads).fn(*_inputs())
    with pytest.raises(DefinitionCodeError, match=r"needs \['bias'\]"):
        call_reference(reads, dict(zip(reads.inputs, _inputs(), strict=True)))
    # a required input left absent is named too, not passed as None
    with pytest.raises(ReferenceArgumentError, match=r"needs \['scale'\]"):
        reference_callee(RENAMED).fn(*_inputs()[:2], None, True)


def test_the_harness_judges_against_a_keyword_called_reference():
    honest = judged_locally(DefaultEvaluator, KEYWORD_ONLY, lambda x, w, scale, flag: x * w * scale if flag else x + w,
                            CFG, WORKLOAD)[0]
    assert honest.passed, honest.message
    wrong = judged_locally(DefaultEvaluator, KEYWORD_ONLY, lambda x, w, scale, flag: x - w, CFG, WORKLOAD)[0]
    assert wrong.status is EvaluationStatus.INCORRECT_NUMERICAL


@pytest.mark.skipif(not DUMPS.is_dir(), reason=f"the FlashInfer dumps are not at {DUMPS}")
@pytest.mark.parametrize("name", ["trtllm_batch_decode_block_sparse_h16_kv2_d128_ps16", "gemma_rmsnorm_h4608",
                                  "fmha_v2_prefill_sm120_h4_d128"])
def test_dumps_whose_references_take_other_arguments_are_called_as_call_reference_calls_them(name):
    definition = TraceSet.from_path(DUMPS).definitions[name]
    workload = workload_from_init(definition, {axis: 4 for axis in required_init_axes(definition)}, seed=0)
    inputs = InputPlan(definition, workload, "cpu", None).draw(3)
    expected = call_reference(definition, dict(zip(definition.inputs, inputs, strict=True)))
    result = reference_callee(definition).fn(*inputs)
    actual = result if isinstance(result, tuple | list) else (result,)
    assert len(actual) == len(expected)
    for a, b in zip(actual, expected, strict=True):
        assert torch.equal(a, b)

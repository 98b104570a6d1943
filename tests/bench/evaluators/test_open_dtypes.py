"""Tensors whose dtype FlashInfer leaves open (``unknown``: index arrays chosen at plan time, optional tensors
the traced call left out): the evaluators and the calling helpers take their type from the tensor itself, and
where no tensor says it (the bytes of an output) the definition is refused with the tensor named."""

import pytest
import torch

from flashinfer_bench.bench.calling import layout_inputs
from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators import DefaultEvaluator, LowbitEvaluator, SamplingEvaluator
from flashinfer_bench.bench.evaluators.dsa import DSAEvaluator
from flashinfer_bench.bench.evaluators.registry import resolve_evaluator
from flashinfer_bench.bench.evaluators.sampling import probabilities
from flashinfer_bench.bench.inputs import blob_order_axes, holds_floats
from flashinfer_bench.bench.slot import output_layouts
from flashinfer_bench.data import Definition, Workload

CFG = ResolvedEvalConfig(warmup_runs=0, iterations=1, num_trials=1, rtol=1e-3, atol=1e-3)


def _definition(op_type: str, inputs: dict, outputs: dict) -> Definition:
    return Definition.model_validate({
        "name": f"open_{op_type}", "op_type": op_type, "axes": {"n": {"type": "var"}, "v": {"type": "var"}},
        "inputs": inputs, "outputs": outputs, "reference": "def run(*args):\n    return args[0]\n",
    })


OPEN_INDEX = {"shape": ["n"], "dtype": "unknown"}
SAMPLER = _definition("sampling", {"indptr": OPEN_INDEX, "probs": {"shape": ["n", "v"], "dtype": "unknown"}},
                      {"samples": {"shape": ["n"], "dtype": "int32"}})


def test_an_open_input_is_floating_as_its_tensor_is():
    spec = SAMPLER.inputs["probs"]
    assert holds_floats(spec, torch.zeros(2)) and not holds_floats(spec, torch.zeros(2, dtype=torch.int32))
    assert not holds_floats(spec, None)
    indptr, probs = torch.arange(3, dtype=torch.int32), torch.softmax(torch.randn(2, 5), dim=1)
    assert set(layout_inputs(SAMPLER, [indptr, probs])) == {"indptr"}  # floating data never reaches a setup
    assert torch.equal(probabilities(SAMPLER, [indptr, probs]), probs)
    assert blob_order_axes(SAMPLER.inputs["probs"], (2, 5), "probs", SAMPLER) == ()


def test_an_open_input_neither_selects_nor_breaks_an_evaluator():
    gemm = _definition("gemm", {"a": {"shape": ["n", "v"], "dtype": "bfloat16"}, "indptr": OPEN_INDEX},
                       {"c": {"shape": ["n", "v"], "dtype": "bfloat16"}})
    assert not LowbitEvaluator.can_evaluate(gemm) and resolve_evaluator(gemm) is DefaultEvaluator
    assert resolve_evaluator(SAMPLER) is SamplingEvaluator


def test_an_open_index_output_is_compared_as_sets_when_its_tensor_holds_integers():
    dsa = _definition("dsa_topk", {"scores": {"shape": ["n", "v"], "dtype": "float32"}},
                      {"topk_indices": {"shape": ["n", "v"], "dtype": "unknown"}})
    ref = torch.tensor([[3, 1, 2], [0, 5, 4]], dtype=torch.int32)
    assert DSAEvaluator.compare_output(dsa, "topk_indices", ref[:, [2, 0, 1]], ref, CFG).matched_ratio == 1.0
    assert DSAEvaluator.compare_output(dsa, "topk_indices", ref + 1, ref, CFG).matched_ratio == 0.0
    values = torch.tensor([[0.5, 0.25]])  # floats under an open dtype: compared element-wise
    assert DSAEvaluator.compare_output(dsa, "topk_indices", values.flip(1), values, CFG).matched_ratio == 0.0


def test_an_output_of_open_dtype_cannot_be_read_and_says_which():
    definition = _definition("toy", {"x": {"shape": ["n"], "dtype": "float32"}},
                             {"y": {"shape": ["n"], "dtype": "float32"}, "lse": {"shape": ["n"], "dtype": "unknown"}})
    with pytest.raises(ValueError, match=r"'lse' \(unknown\) name no element type"):
        output_layouts(definition, Workload(uuid="w", axes={"n": 2, "v": 1}, inputs={}))

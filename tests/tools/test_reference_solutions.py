"""The two solutions made from a reference: itself, and a copy whose outputs are off."""

import torch

from flashinfer_bench.compile import build_solution
from flashinfer_bench.data import Definition, Solution
from flashinfer_bench.tools.reference_solutions import (
    perturbed_solution,
    reference_parameters,
    reference_solution,
    write_solutions,
)

TOPK = Definition.model_validate({
    "name": "toy_topk", "op_type": "toy",
    "axes": {"n": {"type": "var"}, "k": {"type": "const", "value": 2}},
    "inputs": {"x": {"shape": ["n"], "dtype": "bfloat16"}, "scale": {"shape": None, "dtype": "float32"}},
    "outputs": {"values": {"shape": ["k"], "dtype": "bfloat16"}, "indices": {"shape": ["k"], "dtype": "int32"}},
    "reference": ("import torch\n\n@torch.no_grad()\ndef run(x, scale):\n"
                  "    v, i = torch.topk(x * scale, 2)\n    return v, i.to(torch.int32)\n"),
})
#: ``run`` takes its parameters in another order than the definition lists its inputs.
PERMUTED = Definition.model_validate({
    "name": "toy_permuted", "op_type": "toy",
    "axes": {"n": {"type": "var"}},
    "inputs": {"a": {"shape": ["n"], "dtype": "float32"}, "b": {"shape": ["n"], "dtype": "float32"}},
    "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
    "reference": "def run(b, a):\n    return a - b\n",
})


def build(solution: dict, tmp_path):
    return build_solution(Solution.model_validate(solution), device="cpu", cache_dir=tmp_path).fn


def test_reference_and_perturbed_copy(tmp_path):
    x = torch.tensor([1.0, 4.0, 2.0], dtype=torch.bfloat16)
    values, indices = build(reference_solution(TOPK), tmp_path)(x, 0.5)
    assert values.tolist() == [2.0, 1.0] and indices.tolist() == [1, 2]
    off_values, off_indices = build(perturbed_solution(TOPK), tmp_path)(x, 0.5)
    assert off_values.dtype == torch.bfloat16 and off_values.tolist() == [2.5, 1.25]
    assert off_indices.dtype == torch.int32 and off_indices.tolist() == [2, 3]


def test_inputs_reach_parameters_of_their_name(tmp_path):
    assert reference_parameters(PERMUTED) == ["b", "a"]
    a, b = torch.tensor([5.0]), torch.tensor([1.0])
    assert build(reference_solution(PERMUTED), tmp_path)(a, b).tolist() == [4.0]
    assert build(perturbed_solution(PERMUTED), tmp_path)(a, b).tolist() == [5.0]


def test_solutions_are_value_returning_public_json(tmp_path):
    paths = write_solutions(tmp_path, TOPK)
    assert [p.name for p in paths] == ["toy_topk__reference.json", "toy_topk__off25.json"]
    for path in paths:
        solution = Solution.model_validate_json(path.read_text())
        assert solution.definition == "toy_topk" and solution.spec.destination_passing_style is False

"""Random inputs: drawn in the input's own type, reproducible per (workload, trial)."""

import pytest
import torch

from flashinfer_bench.bench.inputs import generate_inputs
from flashinfer_bench.data import Definition, Workload

MIXED = Definition.model_validate({
    "name": "mixed", "op_type": "toy",
    "axes": {"n": {"type": "var"}},
    "inputs": {name: {"shape": ["n"], "dtype": dtype} for name, dtype in
               (("a", "float32"), ("b", "bfloat16"), ("c", "float16"), ("d", "float8_e4m3fn"), ("e", "int32"))},
    "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
    "reference": "def run(a, b, c, d, e):\n    return a\n",
})


def test_floating_inputs_are_standard_normal_in_their_own_type():
    workload = Workload(uuid="w", axes={"n": 20000}, inputs={})
    values = generate_inputs(MIXED, workload, 0, "cpu", None)
    assert [v.dtype for v in values] == [torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.int32]
    for value in values[:4]:
        as_float = value.float()
        assert abs(float(as_float.mean())) < 0.05 and abs(float(as_float.std()) - 1) < 0.05
    again = generate_inputs(MIXED, workload, 0, "cpu", None)
    assert all(torch.equal(x.view(torch.uint8) if x.dtype == torch.float8_e4m3fn else x,
                           y.view(torch.uint8) if y.dtype == torch.float8_e4m3fn else y)
               for x, y in zip(values, again, strict=True))


def test_drawn_inputs_that_break_a_constraint_are_refused_naming_it():
    definition = Definition.model_validate({
        "name": "paged", "op_type": "gqa_paged",
        "axes": {"n": {"type": "var"}, "len_indptr": {"type": "var"}},
        "inputs": {"kv_indptr": {"shape": ["len_indptr"], "dtype": "int32"}},
        "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
        "constraints": ["n == kv_indptr[-1].item() + 1000"],
        "reference": "def run(kv_indptr):\n    return kv_indptr\n",
    })
    workload = Workload(axes={"n": 3, "len_indptr": 2}, inputs={}, uuid="u")
    with pytest.raises(ValueError, match=r"n == kv_indptr\[-1\].item\(\) \+ 1000' is false"):
        generate_inputs(definition, workload, 0, "cpu", None)

"""A definition's ``check`` as a correctness rule, run without FlashInfer installed."""

import sys

import pytest
import torch
from helpers import SCALE_ADD

from flashinfer_bench.bench.definition_code import DefinitionCodeError
from flashinfer_bench.bench.evaluators.definition_check import default_check, default_tolerances, run_check
from flashinfer_bench.data import Definition

#: FlashInfer's default check as it writes it: annotations that need typing's names, an import when called.
STANDARD = '''def standard_check(
    reference_outputs: Any,
    actual_outputs: Any,
    *,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
    max_mismatch_pct: float = 0.0,
    min_cos_sim: Optional[float] = 1.0 - 1e-3,
) -> bool:
    from flashinfer.trace import default_check

    return default_check(reference_outputs, actual_outputs, rtol=rtol, atol=atol,
                         max_mismatch_pct=max_mismatch_pct, min_cos_sim=min_cos_sim)
'''


def _definition(check: str) -> Definition:
    return Definition.model_validate(dict(SCALE_ADD, check=check))


def test_the_standard_check_passes_equal_outputs_and_fails_outputs_25_percent_off():
    definition = _definition(STANDARD)
    reference = [torch.randn(64, dtype=torch.bfloat16)]
    assert run_check(definition, {}, [reference[0].clone()], reference).passed
    verdict = run_check(definition, {}, [(reference[0].float() * 1.25).bfloat16()], reference)
    assert not verdict.passed and "standard_check says the outputs do not match" in verdict.message
    assert "flashinfer" not in sys.modules and "flashinfer.trace" not in sys.modules


def test_thresholds_a_check_sets_are_honoured():
    lax = STANDARD.replace("def standard_check(", "def _lax_check(").replace(
        "max_mismatch_pct: float = 0.0", "max_mismatch_pct: float = 100.0").replace("1.0 - 1e-3", "None")
    reference = [torch.ones(8)]
    assert run_check(_definition(lax), {}, [torch.full((8,), 3.0)], reference).passed
    assert not run_check(_definition(STANDARD), {}, [torch.full((8,), 3.0)], reference).passed


@pytest.mark.parametrize(("source", "said"), [
    ("def _boom_check(reference_outputs, actual_outputs):\n    raise RuntimeError('no')\n", "raised RuntimeError: no"),
    ("def _other_check(reference_outputs, actual_outputs):\n    import flashinfer.norm\n    return True\n",
     "may import only from flashinfer.trace"),
    ("def _odd_check(reference_outputs, actual_outputs):\n    return 'yes'\n", "returned str, not a bool"),
])
def test_a_check_that_misbehaves_fails_saying_how(source, said):
    verdict = run_check(_definition(source), {}, [torch.ones(2)], [torch.ones(2)])
    assert not verdict.passed and said in verdict.message


def test_a_check_that_asks_for_the_inputs_gets_them_by_name():
    source = ("def _count_check(reference_outputs, actual_outputs, inputs):\n"
              "    return int(actual_outputs[0].sum()) == int(inputs['x'].numel())\n")
    inputs = {"x": torch.zeros(5), "y": torch.zeros(5)}
    assert run_check(_definition(source), inputs, [torch.ones(5)], [torch.ones(5)]).passed
    assert not run_check(_definition(source), inputs, [torch.ones(4)], [torch.ones(4)]).passed


def test_a_definition_without_a_check_is_said_to_have_none():
    with pytest.raises(DefinitionCodeError, match="has no check"):
        run_check(Definition.model_validate(SCALE_ADD), {}, [], [])


def test_default_check_decides_as_documented():
    assert default_tolerances(torch.bfloat16) == (1e-2, 1e-2) and default_tolerances("float8_e4m3fn") == (0.1, 0.1)
    assert default_tolerances(torch.int32) == (0.0, 0.0)
    assert not default_check([torch.ones(3)], [torch.ones(4)])  # shapes differ
    assert default_check([torch.tensor([1, 2, 3])], [torch.tensor([1, 2, 4])], max_mismatch_pct=34.0)
    assert not default_check([torch.tensor([1, 2, 3])], [torch.tensor([1, 2, 4])])
    assert default_check({"a": 1.5}, {"a": 1.5}) and not default_check({"a": 1}, {"b": 1})
    assert not default_check([torch.ones(100)], [-torch.ones(100)], rtol=10.0, atol=10.0)  # cosine -1

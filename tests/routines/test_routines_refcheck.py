import torch

from flashinfer_bench.routines.refcheck import DTYPE_TOLERANCES, Tolerance, compare, tensor_stats


def test_pass_and_worst_element_location():
    ref = torch.zeros(3, 4, dtype=torch.float64)
    out = ref.clone()
    out[2, 1] = 0.01
    res = compare(out, ref, Tolerance(atol=0.02, rtol=0.0))
    assert res.passed and res.worst_index == (2, 1) and res.max_abs_diff == 0.01 and res.num_outside == 0


def test_fail_counts_elements_outside():
    ref = torch.ones(10, dtype=torch.float64)
    out = ref.clone()
    out[7] = 1.5
    res = compare(out, ref, Tolerance(atol=0.01, rtol=0.01))
    assert not res.passed and res.num_outside == 1 and res.worst_index == (7,)
    assert compare(out, ref, Tolerance(atol=0.01, rtol=0.01, min_close_fraction=0.9)).passed


def test_nan_output_fails_even_with_fraction_budget():
    ref = torch.ones(100, dtype=torch.float64)
    out = ref.clone()
    out[3] = float("nan")
    res = compare(out, ref, Tolerance(atol=0.1, rtol=0.1, min_close_fraction=0.5))
    assert not res.passed and res.worst_index == (3,)


def test_atol_scales_with_reference_rms():
    ref = torch.full((4,), 100.0, dtype=torch.float64)
    ref[0] = 0.0
    out = ref.clone()
    out[0] = 1.0  # 1.0 off near zero: fine next to outputs of magnitude ~87 (atol 0.02 * rms)
    assert compare(out, ref, Tolerance(atol=0.02, rtol=0.0)).passed
    assert not compare(out[:1], ref[:1], Tolerance(atol=0.02, rtol=0.0)).passed


def test_bf16_tolerance_admits_rounding_only():
    ref = torch.randn(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    tol = DTYPE_TOLERANCES[torch.bfloat16]
    assert compare(ref.to(torch.bfloat16), ref, tol).passed
    assert not compare((ref + 0.1).to(torch.bfloat16), ref, tol).passed


def test_stats_line():
    line = tensor_stats(torch.tensor([1.0, 3.0, float("inf")]))
    assert "mean=2" in line and "min=1" in line and "max=3" in line and "nonfinite=1" in line

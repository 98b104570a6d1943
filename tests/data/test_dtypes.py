import pytest
import torch

from flashinfer_bench.data import DType


@pytest.mark.parametrize("dtype", list(DType))
def test_every_dtype_maps_to_torch(dtype):
    assert isinstance(dtype.to_torch(), torch.dtype)


def test_floating_and_low_bit_classification():
    floating = {d for d in DType if d.is_floating}
    assert floating == {DType.FLOAT64, DType.FLOAT32, DType.FLOAT16, DType.BFLOAT16, DType.FLOAT8_E4M3FN, DType.FLOAT8_E5M2,
                        DType.FLOAT4_E2M1}
    assert {d for d in DType if d.is_low_bit} == {DType.FLOAT8_E4M3FN, DType.FLOAT8_E5M2, DType.FLOAT4_E2M1}
    assert DType.BFLOAT16.to_torch().is_floating_point

"""The timer and the output buffer on a real GPU (run on the GPU machine: ``pytest -m gpu``)."""

import pytest
import torch

from flashinfer_bench.bench.evaluators.slot import Slot, TensorLayout
from flashinfer_bench.testing import bench_gpu_time_detailed
from flashinfer_bench.timing.cupti_timer import load_cupti
from flashinfer_bench.timing.result import CUDA_EVENTS, CUPTI

pytestmark = pytest.mark.gpu


def test_work_before_each_sample_is_not_counted_in_it():
    a = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    big = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")

    def fill(_: int) -> None:  # ~20 us of GPU work on an H100, far more than the matmul
        big.fill_(1)

    alone = bench_gpu_time_detailed(torch.matmul, args=(a, a), num_iters=50, dry_run_iters=5)
    after_fill = bench_gpu_time_detailed(torch.matmul, args=(a, a), num_iters=50, dry_run_iters=5, before_each=fill)
    assert alone.method == after_fill.method == (CUPTI if load_cupti() is not None else CUDA_EVENTS)
    assert after_fill.median_ms < 1.5 * alone.median_ms + 0.002


def test_a_pinned_buffer_takes_device_outputs_and_gives_them_back():
    slot = Slot.create(1 << 20)
    try:
        assert slot.pin()
        out = torch.randn(1000, device="cuda")
        end = slot.write(0, [out])
        (back,), _ = slot.read(0, [TensorLayout("out", torch.float32, (1000,))], "cuda")
        assert end == out.nbytes and torch.equal(back, out)
    finally:
        slot.close()

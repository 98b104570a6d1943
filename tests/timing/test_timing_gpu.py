"""The timer and the output buffer on a real GPU (run on the GPU machine: ``pytest -m gpu``)."""

import re

import pytest
import torch

from flashinfer_bench.bench.slot import FIRST_PINNED_BYTES, Slot, TensorLayout
from flashinfer_bench.testing import bench_gpu_time_detailed
from flashinfer_bench.timing.cupti_timer import load_cupti
from flashinfer_bench.timing.graph import GraphCaptureFailed, capture
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


@pytest.mark.parametrize("enable_cupti", [True, False], ids=["cupti", "events"])
def test_work_after_each_sample_runs_once_it_has_finished_and_is_not_counted(enable_cupti):
    a = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    big = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    results, finished = [], []

    def call() -> None:
        results.append(torch.matmul(a, a))

    def after(_: int) -> None:  # the sample's work is done when it runs; the fill is in no sample
        finished.append(torch.cuda.current_stream().query())
        big.fill_(1)

    alone = bench_gpu_time_detailed(call, num_iters=50, dry_run_iters=5, enable_cupti=enable_cupti)
    with_after = bench_gpu_time_detailed(call, num_iters=50, dry_run_iters=5, enable_cupti=enable_cupti,
                                         after_each=after)
    # Once per dry run and per sample; a batch whose first launches the host was late with in too many samples is
    # measured again with a longer lead-in (cuda_sampler.py ``_trace``), its samples' work after them included.
    batches, left = divmod(len(finished) - 5, 50)
    assert batches >= 1 and left == 0 and all(finished)
    assert with_after.median_ms < 1.5 * alone.median_ms + 0.002


def test_a_pinned_buffer_takes_device_outputs_and_gives_them_back():
    slot = Slot.create(16 << 20)
    try:
        assert slot.pin() and slot.pinned_bytes == FIRST_PINNED_BYTES  # locked as far as copies reach, not whole
        out = torch.randn(1000, device="cuda")
        end = slot.write(0, [out])
        (back,), _ = slot.read(0, [TensorLayout("out", torch.float32, (1000,))], "cuda")
        assert end == out.nbytes and torch.equal(back, out)
        large = torch.randn(3 << 18, device="cuda")  # 3 MB, written after the first: locked further
        end = slot.write(end, [large])
        assert slot.pinned_bytes >= end
        slot.reserve(12 << 20)  # ahead of the copies (the timing loop's first round)
        assert slot.pinned_bytes >= 12 << 20
        (first, second), _ = slot.read(0, [TensorLayout("out", torch.float32, (1000,)),
                                          TensorLayout("large", torch.float32, (3 << 18,))], "cuda")
        assert torch.equal(first, out) and torch.equal(second, large)
        slot.bytes[:4096].fill_(0)  # read straight to the device, but into memory of the reader's own
        assert torch.equal(first, out) and first.device.type == "cuda"
    finally:
        slot.close()


def test_a_call_that_waits_for_the_device_is_stopped_there_and_not_captured(monkeypatch):
    x = torch.ones(256, device="cuda")
    after_the_wait = []
    captures = []
    real_begin = torch.cuda.CUDAGraph.capture_begin

    def spied_begin(graph, *args, **kwargs):
        captures.append(args)
        return real_begin(graph, *args, **kwargs)

    monkeypatch.setattr(torch.cuda.CUDAGraph, "capture_begin", spied_begin)

    def waits(_: int) -> None:
        x.mul_(3)
        x.sum().item()
        after_the_wait.append(1)  # a 3 s reference of the real dataset waits early and goes on for seconds

    with pytest.raises(GraphCaptureFailed, match="waits for the device"):
        capture(waits, 4, torch.device("cuda"))
    assert captures == [] and after_the_wait == [] and torch.cuda.get_sync_debug_mode() == 0  # the mode is put back
    assert torch.equal(x, torch.full_like(x, 3))  # what it queued before the wait ran
    graph = capture(lambda _: x.mul_(2), 3, torch.device("cuda"))  # one that does not wait: captured as before
    x.fill_(1)
    graph.replay()
    torch.cuda.synchronize()
    assert len(captures) == 1 and torch.equal(x, torch.full_like(x, 8))


@pytest.mark.skipif(load_cupti() is None, reason="needs cupti-python")
def test_host_work_before_the_launch_is_waited_for_not_estimated():
    import time

    x = torch.randn(4096, device="cuda")

    def late(t: torch.Tensor) -> torch.Tensor:
        end = time.perf_counter() + 200e-6  # a wrapper's host-side checks before its launch
        while time.perf_counter() < end:
            pass
        return t * 2

    result = bench_gpu_time_detailed(late, args=(x,), num_iters=30, dry_run_iters=3, cold_l2_cache=True)
    # The lead-in was lengthened until the launch was waiting when the GPU got to it: no gap had to be estimated,
    # but in a sample whose host work a busy host held up past the lead-in (2 of 30 with 11 other test processes
    # on a 16-core H100 host). Without the lengthening every sample would need one: the L2 flush before it, the
    # lead-in, is far shorter than the 200 us of host work.
    assert result.method == CUPTI
    estimated = [int(re.search(r"In (\d+) samples", w)[1]) for w in result.warnings if "launch processing" in w]
    assert sum(estimated) < 30 // 4, result.warnings


@pytest.mark.skipif(load_cupti() is None, reason="needs cupti-python")
def test_host_work_between_launches_is_estimated_and_said():
    import time

    x = torch.randn(4096, device="cuda")

    def apart(t: torch.Tensor) -> torch.Tensor:
        y = t * 2
        end = time.perf_counter() + 50e-6
        while time.perf_counter() < end:
            pass
        return y + 1

    result = bench_gpu_time_detailed(apart, args=(x,), num_iters=30, dry_run_iters=3, cold_l2_cache=True)
    assert [w for w in result.warnings if "launch processing" in w]
    assert result.median_ms < 0.030  # the 50 us of host work between the kernels is not in it

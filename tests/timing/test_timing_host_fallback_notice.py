"""bench_gpu_time on a machine without a CUDA device: asking for CUPTI (the default) falls back to the host clock
with a warning, logged once per process and kept in every result's warnings; enable_cupti=False says nothing."""

import logging

import torch

from flashinfer_bench.testing import bench_gpu_time_detailed
from flashinfer_bench.timing import notices
from flashinfer_bench.timing.api import HOST_FALLBACK


def test_the_host_clock_fallback_is_said_once(monkeypatch, caplog):
    monkeypatch.setattr(notices, "_already_logged", set())
    caplog.set_level(logging.WARNING, logger=notices.LOGGER_NAME)
    x = torch.ones(8)
    first = bench_gpu_time_detailed(torch.add, args=(x, x), num_iters=2, dry_run_iters=0, device="cpu")
    second = bench_gpu_time_detailed(torch.add, args=(x, x), num_iters=2, dry_run_iters=0, device="cpu")
    assert HOST_FALLBACK in first.warnings and HOST_FALLBACK in second.warnings
    assert [r.getMessage() for r in caplog.records].count(HOST_FALLBACK) == 1
    quiet = bench_gpu_time_detailed(torch.add, args=(x, x), num_iters=2, dry_run_iters=0, device="cpu",
                                    enable_cupti=False)
    assert HOST_FALLBACK not in quiet.warnings

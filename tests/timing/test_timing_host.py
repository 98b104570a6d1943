"""The host-clock path end to end: the public API timing real CPU functions."""

import json
import logging
import time

import pytest
import torch

from flashinfer_bench.testing import bench_gpu_time, bench_gpu_time_detailed
from flashinfer_bench.timing import notices
from flashinfer_bench.timing.result import HOST_CLOCK, WARM


def test_sleep_measures_at_least_its_length():
    res = bench_gpu_time_detailed(time.sleep, args=(0.005,), num_iters=5, dry_run_iters=1, device="cpu")
    assert res.method == HOST_CLOCK
    assert res.device == "cpu"
    assert res.cache_policy == WARM
    assert res.cuda_graph is False
    assert res.clocks_before is None and res.clocks_after is None
    assert len(res.samples_ms) == 5 == res.stats.n
    assert min(res.samples_ms) >= 5.0
    s = res.stats
    assert s.min_ms <= s.ci95_low_ms <= s.median_ms <= s.ci95_high_ms <= s.max_ms
    assert res.median_ms == s.median_ms and res.std_ms == s.std_ms


def test_longer_sleep_measures_longer():
    short, _ = bench_gpu_time(time.sleep, args=(0.002,), num_iters=5, dry_run_iters=0, device="cpu")
    long, _ = bench_gpu_time(time.sleep, args=(0.012,), num_iters=5, dry_run_iters=0, device="cpu")
    assert long > short + 5.0  # 10 ms apart; generous against scheduler noise


def test_before_each_runs_before_every_call_and_is_not_timed():
    events = []

    def before(i):
        events.append(("before", i))
        time.sleep(0.02)

    res = bench_gpu_time_detailed(
        lambda: events.append("call"), num_iters=3, dry_run_iters=2, device="cpu", before_each=before
    )
    assert events == [("before", 0), "call", ("before", 1), "call"] + [("before", 0), "call", ("before", 1), "call", ("before", 2), "call"]
    assert max(res.samples_ms) < 10.0  # the 20 ms sleeps are outside the timed span


def test_after_each_runs_after_every_call_and_is_not_timed():
    events = []

    def after(i):
        events.append(("after", i))
        time.sleep(0.02)

    res = bench_gpu_time_detailed(lambda: events.append("call"), num_iters=3, dry_run_iters=2, device="cpu",
                                  before_each=lambda i: events.append(("before", i)), after_each=after)
    dry = [("before", 0), "call", ("after", 0), ("before", 1), "call", ("after", 1)]
    timed = [step for i in range(3) for step in (("before", i), "call", ("after", i))]
    assert events == dry + timed
    assert max(res.samples_ms) < 10.0  # the 20 ms sleeps are outside the timed span


def test_args_kwargs_and_call_counts():
    calls = []

    def fn(a, b, *, c):
        calls.append((a, b, c))

    bench_gpu_time(fn, args=(1, 2), kwargs={"c": 3}, num_iters=7, dry_run_iters=2, device="cpu")
    assert calls == [(1, 2, 3)] * 9


def test_cpu_tensors_infer_host_clock(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    x = torch.ones(64)
    res = bench_gpu_time_detailed(torch.add, args=(x, x), num_iters=3, dry_run_iters=0)
    assert res.method == HOST_CLOCK and res.device == "cpu"


def test_cold_cache_and_graph_requests_are_reported_on_host(caplog):
    caplog.set_level(logging.WARNING, logger=notices.LOGGER_NAME)
    res = bench_gpu_time_detailed(
        lambda: None, num_iters=3, dry_run_iters=0, cold_l2_cache=True, use_cuda_graph=True, device="cpu"
    )
    assert res.cache_policy == WARM and res.cuda_graph is False
    expected = [
        "A cold cache is not available on the host clock; timed with a warm cache.",
        "CUDA graphs need a CUDA device; timed without a graph.",
    ]
    assert res.warnings[:2] == expected
    logged = [r.getMessage() for r in caplog.records if r.name == notices.LOGGER_NAME]
    assert logged[:2] == expected


def test_time_budget_keeps_sampling_in_batches():
    res = bench_gpu_time_detailed(
        time.sleep, args=(0.001,), num_iters=4, dry_run_iters=0, device="cpu", time_budget_s=0.05
    )
    assert res.stats.n >= 8 and res.stats.n % 4 == 0


def test_target_ci_stops_early_on_steady_function():
    res = bench_gpu_time_detailed(
        time.sleep,
        args=(0.002,),
        num_iters=20,
        dry_run_iters=1,
        device="cpu",
        target_ci_pct=50.0,
        time_budget_s=5.0,
    )
    assert res.stats.n == 20  # a sleep's median is known to far better than 50% after one batch
    assert not any("target" in w for w in res.warnings)


def test_unreachable_target_warns():
    # Calls of different lengths: a no-op's samples can all be equal on a coarse clock, and a zero-width
    # interval meets any target.
    lengths = iter([0.0, 2e-4, 4e-4] * 1000)
    res = bench_gpu_time_detailed(
        lambda: time.sleep(next(lengths)), num_iters=3, dry_run_iters=0, device="cpu", target_ci_pct=1e-9,
        time_budget_s=0.01,
    )
    assert any("not under the target" in w for w in res.warnings)


def test_result_is_json_serializable():
    res = bench_gpu_time_detailed(lambda: None, num_iters=3, dry_run_iters=0, device="cpu")
    data = json.loads(json.dumps(res.to_dict()))
    assert data["method"] == HOST_CLOCK and data["stats"]["n"] == 3 and len(data["samples_ms"]) == 3


@pytest.mark.parametrize("kwargs", [{"num_iters": 0}, {"dry_run_iters": -1}])
def test_bad_iteration_counts_rejected(kwargs):
    with pytest.raises(ValueError):
        bench_gpu_time(lambda: None, device="cpu", **kwargs)


def test_noisy_samples_warn(monkeypatch):
    from flashinfer_bench.timing import api

    values = iter([1.0, 5.0, 1.0, 9.0, 2.0, 7.0])
    monkeypatch.setattr(api, "measure_host", lambda prepare, body, indices, after=None: [next(values) for _ in indices])
    res = bench_gpu_time_detailed(lambda: None, num_iters=6, dry_run_iters=0, device="cpu")
    assert any("Noisy samples" in w for w in res.warnings)

"""What CUPTI tracing costs the harness's timing loop, and what it does to the measured span.

The harness times each call after an untimed setup (drawing the next call's inputs, synchronising, talking to
the judge). Everything the process does while activity tracing is on becomes records that must be processed.
This times a small kernel (a 256^3 bf16 matmul, a few us) with a harness-like setup before each sample
(two fresh randn tensors and a synchronize), in variants:

- ``no setup``: the span alone;
- ``setup, all api``: the setup before each sample, every API call recorded;
- ``setup``: the same with only the calls that can put work on the GPU recorded (what the timer does);
- ``driver api only``: only driver API records, never runtime ones (runtime launches are then lost).

and prints per variant: median span (us), records per sample, record-processing time per sample (us), wall
time per sample (us). It also prints what one activity_enable/activity_disable pair costs (why the timer does
not switch tracing off around the setup), what the timer's own switch costs per batch, what the first launch
after a forced flush of the records costs by the size of CUPTI's record buffers (the timer flushes after every
batch, and CUPTI asks for a new buffer at the next record), and how long a worker takes from its start until its
judge has it ready.

    python benchmarks/cupti_costs.py [--samples 200]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from flashinfer_bench.timing import cupti_timer
from flashinfer_bench.timing.lead_in import lead_in_step


def instrumented_session(cupti, api_kinds: set[int], every_api_call: bool) -> tuple[cupti_timer._Session, dict]:
    """A fresh CUPTI session tracing ``api_kinds``, whose record processing is timed and counted."""
    cupti_timer._session = None
    session = cupti_timer.session(cupti)
    session.api_kinds = api_kinds
    if every_api_call:
        session.api_choices = []
    stats = {"seconds": 0.0, "api": 0, "gpu": 0}
    original = session._buffer_completed

    def completed(activities):
        start = time.perf_counter()
        before_api, before_gpu = len(session.api), len(session.gpu)
        original(activities)
        stats["seconds"] += time.perf_counter() - start
        stats["api"] += len(session.api) - before_api
        stats["gpu"] += len(session.gpu) - before_gpu

    session._buffer_completed = completed
    cupti.activity_register_callbacks(session._buffer_requested, completed)
    return session, stats


def run_variant(cupti, name: str, samples: int, dev: torch.device) -> None:
    kind = cupti.ActivityKind
    runtime, driver = int(kind.RUNTIME), int(kind.DRIVER)
    api_kinds = {driver} if name == "driver api only" else {runtime, driver}
    session, stats = instrumented_session(cupti, api_kinds, every_api_call=name == "setup, all api")
    a = torch.randn(256, 256, dtype=torch.bfloat16, device=dev)
    b = torch.randn(256, 256, dtype=torch.bfloat16, device=dev)
    generator = torch.Generator(device=dev)

    def setup(i: int) -> None:
        generator.manual_seed(i)
        a.set_(torch.randn(256, 256, dtype=torch.bfloat16, device=dev, generator=generator))
        b.set_(torch.randn(256, 256, dtype=torch.bfloat16, device=dev, generator=generator))
        torch.cuda.synchronize(dev)

    def body(_: int) -> None:
        torch.matmul(a, b)

    lead_in = lead_in_step(dev, flush=False)
    for i in range(10):
        setup(i)
        lead_in(i)
        body(i)
    torch.cuda.synchronize(dev)
    start = time.perf_counter()
    if name == "no setup":
        spans = session.trace(lead_in, body, range(samples), dev)
    else:
        spans = session.trace(lead_in, body, range(samples), dev, setup)
    wall = time.perf_counter() - start
    found = [s.duration_ms * 1e3 for s in spans if s is not None]
    print(f"{name:<16} {statistics.median(found):>9.2f} {len(found):>5} {stats['api'] / samples:>8.1f} "
          f"{stats['gpu'] / samples:>8.1f} {stats['seconds'] / samples * 1e6:>10.1f} {wall / samples * 1e6:>9.1f}")


def toggle_cost_us(cupti, repeats: int = 200) -> float:
    kind = int(cupti.ActivityKind.DRIVER)
    start = time.perf_counter()
    for _ in range(repeats):
        cupti.activity_enable(kind)
        cupti.activity_disable(kind)
    return (time.perf_counter() - start) / repeats * 1e6


def tracing_switch_ms(cupti, repeats: int = 5) -> tuple[float, int]:
    """What switching the timer's tracing on and off costs (``_Session._set_enabled``: the record kinds, then the
    choice of API calls whose records are kept), in ms per on/off pair, and how many API calls are chosen."""
    cupti_timer._session = None
    session = cupti_timer.session(cupti)
    start = time.perf_counter()
    for _ in range(repeats):
        session._set_enabled(True)
        session._set_enabled(False)
    return (time.perf_counter() - start) / repeats * 1e3, len(session.api_choices)


def after_flush_us(cupti, buffer_bytes: int, repeats: int = 40) -> tuple[float, float, float]:
    """Medians (us) of a forced flush of 20 launches' records, of the first launch after it and of the second,
    with CUPTI's record buffers of ``buffer_bytes`` (the timer's tracing on throughout)."""
    saved = cupti_timer._BUFFER_BYTES
    cupti_timer._BUFFER_BYTES = buffer_bytes
    cupti_timer._session = None
    session = cupti_timer.session(cupti)
    flush, first, second = [], [], []
    try:
        with session.held():
            session._set_enabled(True)
            for _ in range(repeats):
                for _ in range(20):
                    torch.cuda._sleep(10)
                torch.cuda.synchronize()
                start = time.perf_counter_ns()
                cupti.activity_flush_all(cupti_timer._FLUSH_FORCED)
                flushed = time.perf_counter_ns()
                torch.cuda._sleep(10)
                launched = time.perf_counter_ns()
                torch.cuda._sleep(10)
                flush.append((flushed - start) / 1e3)
                first.append((launched - flushed) / 1e3)
                second.append((time.perf_counter_ns() - launched) / 1e3)
            torch.cuda.synchronize()
    finally:
        cupti.activity_flush_all(cupti_timer._FLUSH_FORCED)
        cupti_timer._BUFFER_BYTES = saved
    warm = slice(5, None)  # the first rounds are left out: one-off set-up lands there
    return statistics.median(flush[warm]), statistics.median(first[warm]), statistics.median(second[warm])


def worker_ready_s(device: str) -> float:
    """From starting a worker to the judge having it ready (a judge already running)."""
    import tempfile
    from pathlib import Path

    from flashinfer_bench.bench.runner.process import JudgeProcess, WorkerProcess
    from flashinfer_bench.bench.runner.process_pool import worker_policy

    judge = JudgeProcess(device)
    judge.wait_ready(600)
    cache = Path(tempfile.mkdtemp(prefix="fib-costs-"))
    times = []
    for _ in range(3):
        start = time.perf_counter()
        worker = WorkerProcess(device, cache, worker_policy(()))
        judge.attach(worker, 600)
        times.append(time.perf_counter() - start)
        judge.detach()
        worker.kill()
    judge.stop()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    from flashinfer_bench.bench.runner.server import start_worker_server

    start_worker_server()
    cupti = cupti_timer.load_cupti()
    dev = torch.device("cuda", 0)
    torch.zeros(1, device=dev)
    print(f"activity_enable + activity_disable of one kind: {toggle_cost_us(cupti):.1f} us")
    switch_ms, choices = tracing_switch_ms(cupti)
    print(f"the timer's tracing on and off (record kinds and the choice of {choices} API calls): {switch_ms:.2f} ms")
    print(f"{'variant':<16} {'span us':>9} {'n':>5} {'api/smp':>8} {'gpu/smp':>8} {'process us':>10} {'wall us':>9}")
    for name in ("no setup", "setup, all api", "setup", "driver api only"):
        run_variant(cupti, name, args.samples, dev)
    for size in (64 << 10, 1 << 20, cupti_timer._BUFFER_BYTES):
        flush_us, first_us, second_us = after_flush_us(cupti, size)
        print(f"record buffers of {size >> 10} KiB: forced flush {flush_us:.1f} us, first launch after it "
              f"{first_us:.1f} us, the second {second_us:.1f} us")
    print(f"worker start to ready (judge running): {worker_ready_s('cuda:0'):.2f} s")


if __name__ == "__main__":
    main()

"""Our timer and FlashInfer's own ``bench_gpu_time`` on the exact callable our routine CLI times for one test-list
line, alternating in one process: where the two CLIs disagree, whether the timers do, and why.

Each round times the call with our ``bench_gpu_time_detailed`` (CUPTI, cold L2, as the CLI does), again with
our timer's flush made FlashInfer's (the buffer written, not read back: the L2 is left full of dirty lines that
the timed call must write back), then with FlashInfer's ``bench_gpu_time`` (CUPTI, ``cold_l2_cache=True``, as
its CLI does), ``--num-iters`` samples each. Printed per round and timer: the median; for ours also the kernel
records' own span (first kernel start to last kernel end, no lead-in); and the SM clock NVML reported while the
timer ran (sampled every millisecond by a thread: minimum and median), since a timer that keeps the GPU busier
can run it at a lower clock.

    python3 benchmarks/timer_vs_flashinfer.py [--rounds 3] [--num-iters 30] [--backend fa2] -- LINE...

Needs a GPU and FlashInfer (``shared/device/flashinfer-wheel``); the clock columns need nvidia-ml-py.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

from flashinfer_bench.timing.clocks import sm_clock_mhz


@contextmanager
def clock_samples(device: torch.device, into: list[int]) -> Iterator[None]:
    """Sample the SM clock every millisecond into ``into`` while the block runs."""
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            mhz = sm_clock_mhz(device)
            if mhz is not None:
                into.append(mhz)
            time.sleep(0.001)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def clocks(seen: list[int]) -> str:
    return f"{min(seen)}/{int(statistics.median(seen))} MHz" if seen else "clock unknown"


def ours(fn: Callable[[], object], device: torch.device, iters: int, dry: int, read_back: bool = True,
         ) -> tuple[float, float | None]:
    """Our median and kernel-records median (us); ``read_back=False``: the flush leaves a dirty L2."""
    from flashinfer_bench.timing import bench_gpu_time_detailed, l2

    l2.FLUSH_READ_BACK, saved = read_back, l2.FLUSH_READ_BACK
    try:
        result = bench_gpu_time_detailed(fn, enable_cupti=True, num_iters=iters, dry_run_iters=dry, cold_l2_cache=True,
                                         use_cuda_graph=False, device=device)
    finally:
        l2.FLUSH_READ_BACK = saved
    kernels = result.kernel_samples_ms
    for warning in result.warnings:
        print(f"    ours: {warning}")
    return result.median_ms * 1e3, statistics.median(kernels) * 1e3 if kernels else None


def theirs(fn: Callable[[], object], iters: int, dry: int) -> float:
    from flashinfer.testing import bench_gpu_time

    times = bench_gpu_time(fn, dry_run_iters=dry, repeat_iters=iters, enable_cupti=True, cold_l2_cache=True,
                           use_cuda_graph=False, sleep_after_run=False)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--num-iters", type=int, default=30)
    parser.add_argument("--dry-run-iters", type=int, default=5)
    parser.add_argument("--backend", help="the line's backend to time (default: its first)")
    parser.add_argument("line", nargs=argparse.REMAINDER, help="-- then the test-list line's arguments")
    args = parser.parse_args()
    line = args.line[1:] if args.line[:1] == ["--"] else args.line
    if not line:
        parser.error("give the line's arguments after --")

    import flashinfer

    from flashinfer_bench.routines.args import parse_case
    from flashinfer_bench.routines.runner import build_case

    case_args = parse_case(line)
    device = torch.device("cuda")
    torch.manual_seed(case_args.random_seed)  # as the CLI does before it builds the case
    backend = args.backend or case_args.backends[0]
    fn = build_case(case_args, device, flashinfer, use_cuda_graph=False).make_backend(backend)
    fn()
    torch.cuda.synchronize()
    print(f"{case_args.routine} {backend}: per-call us")
    for round_ in range(1, args.rounds + 1):
        seen_ours: list[int] = []
        with clock_samples(device, seen_ours):
            median, kernels = ours(fn, device, args.num_iters, args.dry_run_iters)
        dirty, _ = ours(fn, device, args.num_iters, args.dry_run_iters, read_back=False)
        seen_theirs: list[int] = []
        with clock_samples(device, seen_theirs):
            their = theirs(fn, args.num_iters, args.dry_run_iters)
        kernel_text = f"{kernels:.2f}" if kernels is not None else "-"
        print(f"  round {round_}: ours {median:.2f} (kernel records {kernel_text}; {clocks(seen_ours)})   "
              f"ours, dirty L2 {dirty:.2f}   flashinfer {their:.2f} ({clocks(seen_theirs)})")


if __name__ == "__main__":
    main()

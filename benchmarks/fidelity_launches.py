"""How many of a fidelity case's launches were late, and what the late ones were counted as (issue 11).

For each named case of timing_fidelity.py: ``--repeats`` timings (cold L2, CUPTI, 100 samples), each printing
the per-call median, the late launches per sample (those the host submitted after the GPU ran out of work,
counted as launch processing rather than measured) and the figure they were counted at. Set beside
timing_fidelity.py's ncu column, it tells a shortfall of the late-launch estimate from one that is there when
every launch was queued.

    python3 benchmarks/fidelity_launches.py several_small_kernels,two_kernels_30us_apart [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import timing_fidelity  # noqa: E402

from flashinfer_bench.testing import bench_gpu_time_detailed  # noqa: E402
from flashinfer_bench.timing import cuda_sampler  # noqa: E402
from flashinfer_bench.timing.cupti_records import IterationSpan  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", help="comma-separated names from timing_fidelity.py")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    spans: list[IterationSpan] = []
    figures: list[float | None] = []
    measure = cuda_sampler.CudaSampler._measure

    def recording(self, indices):
        found = measure(self, indices)
        spans.extend(s for s in found if s is not None)
        figures.append(self.device_launch_ns or self.launch_ns)
        return found

    cuda_sampler.CudaSampler._measure = recording
    device = torch.device("cuda:0")
    for name in args.cases.split(","):
        fn, fn_args = timing_fidelity.CASES[name](device)[:2]
        for repeat in range(args.repeats):
            spans.clear()
            figures.clear()
            result = bench_gpu_time_detailed(fn, fn_args, num_iters=100, dry_run_iters=10, cold_l2_cache=True)
            late = statistics.mean(s.estimated_gaps for s in spans)
            figure = f"{figures[-1] / 1e3:.3f} us" if figures[-1] else "-"
            print(f"{name} #{repeat}: {result.median_ms * 1e3:.3f} us per call; {statistics.mean(s.activities for s in spans):.1f} "
                  f"kernels, {late:.2f} of them late per sample, each counted as {figure}")


if __name__ == "__main__":
    main()

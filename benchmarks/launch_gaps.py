"""Does the idle gap before a kernel depend on the process? (timing/launch_processing.py; issues 11 and 13)

Starts ``--processes`` fresh processes one after another. Each times the same one-kernel call (``x * 2`` on 4096
floats, cold L2, CUPTI, 100 samples) twice: with every idle gap counted as observed, and with the device's
measured figure (where launch_processing.py lists one); and reports the median gap it observed before the
kernel. Prints a line per process, then the mean of the per-process medians (what launch_processing.py lists for
a device) and the spread of the call's time under each rule.

    python3 benchmarks/launch_gaps.py [--processes 6]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys


def child() -> None:
    import torch

    from flashinfer_bench.testing import bench_gpu_time_detailed
    from flashinfer_bench.timing import api, launch_processing

    gaps: list[int] = []
    measure = api._CudaSampler._measure

    def observing(self, indices):
        spans = measure(self, indices)
        gaps.extend(s.launch_gap_ns for s in spans if s is not None and s.launch_gap_ns is not None)
        return spans

    api._CudaSampler._measure = observing
    x = torch.randn(4096, device="cuda")
    name = torch.cuda.get_device_name()
    figure = launch_processing.device_launch_ns(name)
    times = {}
    for rule in ("figure", "observed"):
        if rule == "observed":
            launch_processing.MEASURED_NS.clear()
        gaps.clear()
        result = bench_gpu_time_detailed(lambda: x * 2, num_iters=100, dry_run_iters=10, cold_l2_cache=True)
        times[rule] = result.median_ms * 1e3
    print(json.dumps({"device": name, "figure_us": figure / 1e3 if figure else None,
                      "gap_us": statistics.median(gaps) / 1e3, "time_us": times}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return
    rows = []
    for index in range(args.processes):
        done = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"process {index}: median gap observed {row['gap_us']:.3f} us; one-kernel call "
              f"{row['time_us']['observed']:.3f} us counting gaps as observed, {row['time_us']['figure']:.3f} us with "
              f"the device's figure ({row['figure_us']} us)")
    gaps = [row["gap_us"] for row in rows]
    print(f"{rows[0]['device']}: per-process median gaps {min(gaps):.3f}-{max(gaps):.3f} us, mean "
          f"{statistics.mean(gaps):.3f} us")
    for rule in ("observed", "figure"):
        times = [row["time_us"][rule] for row in rows]
        print(f"one-kernel call, gaps {rule}: {min(times):.3f}-{max(times):.3f} us across processes "
              f"(spread {100 * (max(times) - min(times)) / statistics.mean(times):.1f}%)")


if __name__ == "__main__":
    main()

"""Which CUPTI record kind matches ncu's gpu__time_duration: CONCURRENT_KERNEL (what bench_gpu_time uses)
or the serialised KERNEL kind. Times the three single-kernel cases of timing_fidelity.py both ways (cold L2,
100 iterations) and reads ncu for the same cases on the same machine.

    python benchmarks/cupti_kind_probe.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import timing_fidelity  # noqa: E402

from flashinfer_bench.testing import bench_gpu_time_detailed  # noqa: E402
from flashinfer_bench.timing import cupti_timer  # noqa: E402

CASES = ("rms_norm_1x4096", "mul2_64MiB_bf16", "matmul_bf16_4096")


def median_us(name: str, dev: torch.device) -> float:
    fn, args = timing_fidelity.CASES[name](dev)
    result = bench_gpu_time_detailed(fn, args, cold_l2_cache=True, num_iters=100, dry_run_iters=10)
    assert result.method == "cupti", result.warnings
    return result.median_ms * 1e3


def main() -> None:
    dev = torch.device("cuda")
    cupti = cupti_timer.load_cupti()
    session = cupti_timer.session(cupti)
    rows = []
    for name in CASES:
        ncu = timing_fidelity.run_ncu(name, {})
        times = {}
        for label, kind in (("concurrent", cupti.ActivityKind.CONCURRENT_KERNEL), ("serial", cupti.ActivityKind.KERNEL)):
            session.gpu_kinds = {int(kind), int(cupti.ActivityKind.MEMCPY), int(cupti.ActivityKind.MEMSET)}
            times[label] = statistics.median(median_us(name, dev) for _ in range(3))
        rows.append((name, ncu["per_call_us"] if ncu else float("nan"), times["concurrent"], times["serial"]))
    print(f"{'case':<20} {'ncu us':>8} {'CONCURRENT_KERNEL':>22} {'KERNEL (serialised)':>22}")
    for name, ncu, conc, serial in rows:
        print(f"{name:<20} {ncu:>8.2f} {conc:>10.2f} ({(conc / ncu - 1) * 100:+5.1f}%) {serial:>10.2f} ({(serial / ncu - 1) * 100:+5.1f}%)")


if __name__ == "__main__":
    main()

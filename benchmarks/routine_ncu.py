"""What the GPU spends per call in each routine CLI's own run of one test-list line, by Nsight Compute.

``routine_crosscheck.py`` compares what the two CLIs *report*. Where they differ, this says whether they time the
same work: it runs the line once in FlashInfer's benchmark and once in ours, each under ``ncu`` (kernel
durations, ``gpu__time_duration``, clocks left alone, caches flushed before every kernel as ncu does by default),
profiling only the kernels whose names match ``--kernels`` (FlashInfer's attention kernels by default), and
prints per CLI each kernel's count and median, and the sum per call. Both CLIs run with CUDA events (so that
neither timer's CUPTI tracing runs beside ncu) and few iterations; the workload is what the line and
``--random_seed`` make, so equal sums mean equal work.

    python3 benchmarks/routine_ncu.py --flashinfer-benchmark .anchor/flashinfer-benchmark -- \\
        --routine BatchPrefillWithPagedKVCacheWrapper --backends fa2 ... [--out DIR]

Needs a GPU, ``ncu`` and FlashInfer (``shared/device/flashinfer-wheel``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from timing_fidelity import parse_ncu_csv  # noqa: E402

#: FlashInfer's attention kernels (prefill, decode, their persistent and merge kernels); not torch's reference.
ATTENTION_KERNELS = "regex:Batch|Merge|Persistent|Prefill|Decode"
NCU = ["ncu", "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv", "--print-units", "base"]
#: Few iterations: every profiled kernel is replayed by ncu.
ITERATIONS = ["--num_iters", "10", "--dry_run_iters", "2", "--use_cuda_events"]


def durations_us(ncu_csv: Path) -> dict[str, list[float]]:
    """{kernel name: its durations in us, in launch order} from ncu's CSV."""
    found: dict[str, list[float]] = defaultdict(list)
    for name, duration_us in parse_ncu_csv(ncu_csv.read_text()):
        # torch's own kernels that the filter also matches (a CatArrayBatchedCopy in a CLI's set-up) are not the call
        if "at::" not in name:
            found[name].append(duration_us)
    return dict(found)


def per_call_us(found: dict[str, list[float]]) -> float:
    """The sum of each kernel's median, weighted by how often it ran per call (a call: the most frequent
    kernel's count)."""
    calls = max(len(values) for values in found.values())
    return sum(statistics.median(values) * len(values) / calls for values in found.values())


def profile(name: str, command: list[str], kernels: str, out: Path) -> dict[str, list[float]]:
    report = out / f"{name}.csv"
    with (out / f"{name}.log").open("w") as log:
        status = subprocess.run([*NCU, "--kernel-name", kernels, "--log-file", str(report), *command],
                                stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    try:
        found = durations_us(report)
    except (OSError, StopIteration, ValueError, KeyError):  # no report, or one that holds no kernel
        found = {}
    print(f"{name}: exit {status}; {sum(len(v) for v in found.values())} kernels profiled (log: {out / name}.log)")
    return found


def show(name: str, found: dict[str, list[float]]) -> None:
    if not found:
        print(f"{name}: no kernel matched")
        return
    for kernel, values in sorted(found.items(), key=lambda item: -len(item[1])):
        print(f"  {name:10} {len(values):5}x  median {statistics.median(values):9.2f} us  "
              f"[{min(values):.2f}, {max(values):.2f}]  {kernel[:110]}")
    print(f"  {name:10} per call: {per_call_us(found):.2f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flashinfer-benchmark", type=Path, required=True,
                        help="folder holding FlashInfer's flashinfer_benchmark.py and launch.py")
    parser.add_argument("--kernels", default=ATTENTION_KERNELS, help="ncu --kernel-name filter")
    parser.add_argument("--out", type=Path, help="folder for ncu's CSVs and the logs (default: a temporary one)")
    parser.add_argument("line", nargs=argparse.REMAINDER, help="-- then the test-list line's arguments")
    args = parser.parse_args()
    line = args.line[1:] if args.line[:1] == ["--"] else args.line
    if not line:
        parser.error("give the line's arguments after --")
    out = args.out or Path(tempfile.mkdtemp(prefix="fib-routine-ncu-"))
    out.mkdir(parents=True, exist_ok=True)
    anchor = args.flashinfer_benchmark
    commands = {
        "flashinfer": [sys.executable, str(anchor / "launch.py"), str(anchor / "flashinfer_benchmark.py"), *line,
                       *ITERATIONS],
        "ours": [sys.executable, str(HERE / "flashinfer_benchmark.py"), *line, *ITERATIONS],
    }
    found = {name: profile(name, command, args.kernels, out) for name, command in commands.items()}
    for name, kernels in found.items():
        show(name, kernels)


if __name__ == "__main__":
    main()

"""How long loading a large trace set takes, and how much memory it holds: synthetic result traces in the
project's own format (about 0.9 KB a line, like a leaderboard's), loaded with ``TraceSet.from_path`` and
summarised as ``flashinfer-bench report summary`` does.

    python3 benchmarks/trace_loading.py --lines 10000 30000 100000 [--out results.json]
    git worktree add /tmp/old d631a02 && python3 benchmarks/trace_loading.py --compare-with /tmp/old

Each size runs in a fresh child process, so peak memory (ru_maxrss) is that load's alone.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFINITION = {
    "name": "rmsnorm_h4096", "op_type": "rmsnorm",
    "axes": {"batch_size": {"type": "var"}, "hidden_size": {"type": "const", "value": 4096}},
    "inputs": {"hidden_states": {"shape": ["batch_size", "hidden_size"], "dtype": "bfloat16"},
               "weight": {"shape": ["hidden_size"], "dtype": "bfloat16"}},
    "outputs": {"output": {"shape": ["batch_size", "hidden_size"], "dtype": "bfloat16"}},
    "reference": "import torch\ndef run(hidden_states, weight):\n    return hidden_states\n",
}


def write_trace_set(root: Path, lines: int) -> int:
    """A trace set with ``lines`` result traces over 100 solutions; returns the trace file's size in bytes."""
    from flashinfer_bench.data import Correctness, Environment, Evaluation, Performance, Trace, Workload
    from flashinfer_bench.data.trace import EvaluationStatus

    (root / "definitions" / "rmsnorm").mkdir(parents=True)
    (root / "definitions" / "rmsnorm" / "rmsnorm_h4096.json").write_text(json.dumps(DEFINITION))
    environment = Environment(hardware="NVIDIA H100 80GB HBM3",
                              libs={"torch": "2.13.0+cu130", "triton": "3.5.1", "cuda": "13.0"})
    log = "ninja: no work to do.\n" + "x" * 500
    path = root / "traces" / "agents" / "rmsnorm" / "rmsnorm_h4096.jsonl"
    path.parent.mkdir(parents=True)
    with open(path, "w", encoding="utf-8") as handle:
        for index in range(lines):
            workload_index = index % 1000  # 1000 workloads, each evaluated for 100 solutions
            workload = Workload(axes={"batch_size": 1 + workload_index % 64},
                                inputs={"hidden_states": {"type": "random"}, "weight": {"type": "random"}},
                                uuid=f"{workload_index:08d}-0000-4000-8000-000000000000")
            passed = index % 5 != 0
            evaluation = Evaluation(
                status=EvaluationStatus.PASSED if passed else EvaluationStatus.INCORRECT_NUMERICAL,
                environment=environment, timestamp="2026-11-23T10:00:00.000000", log=log,
                correctness=Correctness(max_relative_error=0.0078125, max_absolute_error=0.03125),
                performance=Performance(latency_ms=0.0123, reference_latency_ms=0.0456, speedup_factor=3.7) if passed else None,
            )
            trace = Trace(definition="rmsnorm_h4096", workload=workload, solution=f"solution_{index // 1000:03d}",
                          evaluation=evaluation)
            handle.write(trace.to_json_line())
    return path.stat().st_size


def measure(root: str) -> dict[str, float]:
    """In this process: load and summarise; seconds and peak resident memory."""
    from flashinfer_bench.data import TraceSet
    from flashinfer_bench.report.summary import summarize

    started = time.perf_counter()
    trace_set = TraceSet.from_path(root)
    loaded = time.perf_counter()
    summaries = summarize(t for traces in trace_set.traces.values() for t in traces)
    summarised = time.perf_counter()
    return {
        "traces": sum(len(t) for t in trace_set.traces.values()),
        "load_s": loaded - started,
        "summary_s": summarised - loaded,
        "solutions": sum(len(s) for s in summaries.values()),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def measure_in_child(folder: str, package_root: str | None) -> tuple[dict[str, float], float]:
    """(measurement, peak RSS of the imports alone) in fresh processes; ``package_root`` puts another checkout's
    flashinfer_bench first on the path."""
    env = dict(os.environ)
    if package_root:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    baseline = json.loads(subprocess.check_output(
        [sys.executable, "-c", "import resource, json, flashinfer_bench.data, flashinfer_bench.report.summary; "
         "print(json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))"], env=env))
    return json.loads(subprocess.check_output([sys.executable, __file__, "--measure", folder], env=env)), baseline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare-with", metavar="CHECKOUT",
                        help="also load with the package of another checkout (e.g. a worktree of an older commit)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # child mode: measure this folder
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return
    results = []
    for lines in args.lines:
        with tempfile.TemporaryDirectory() as folder:
            size = write_trace_set(Path(folder), lines)
            for label, package_root in (("this checkout", None), (args.compare_with, args.compare_with)):
                if label is None:
                    continue
                row, baseline = measure_in_child(folder, package_root)
                row.update(lines=lines, file_mb=size / 2**20, import_rss_mb=baseline, package=label)
                row["held_mb"] = row["peak_rss_mb"] - baseline
                results.append(row)
                print(f"{label}: {lines:>7} lines, {row['file_mb']:6.1f} MB: load {row['load_s']:.2f} s, summary "
                      f"{row['summary_s']:.2f} s, peak RSS {row['peak_rss_mb']:.0f} MB ({row['held_mb']:.0f} MB over "
                      f"the imports, {row['held_mb'] / row['file_mb']:.1f}x the file)", flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

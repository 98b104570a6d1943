"""What a solution that does its work and reports 1/1000 of its time gains, per call size, and whether honest
solutions of the same sizes keep their claims: on a quiet host and with a busy-loop process per core.

Builds a trace set of one elementwise definition whose solutions spend a set device time per call (a spin kernel
of ``--sizes`` microseconds on a GPU, a host busy-wait on the CPU) before computing the outputs: for each size an
honest solution, and a liar that does the same work and rewrites the timer's samples to 1/1000. Runs it through
the persistent runner at the default settings (``--busy``: with a busy-loop process per core running meanwhile;
``--busy N``: N of them) and prints per size the honest latency (and whether its claim was believed), the liar's
recorded latency, the judge's clock of the liar's work (what a refuted claim is raised towards) and the liar's
gain (honest / liar).

    python3 benchmarks/claim_bounds.py [--sizes 5,20,100] [--busy [N]] [--workloads 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import tempfile
from pathlib import Path

REFERENCE = "def run(x, y):\n    return x * 2 + y\n"
#: One call: ``WORK_US`` of device time (a spin kernel; cycles from the device's clock) or of host busy-waiting.
HONEST = '''import time
import torch
WORK_US = {us}
CYCLES = []
def run(x, y):
    if x.is_cuda:
        if not CYCLES:
            CYCLES.append(int(WORK_US * torch.cuda.get_device_properties(x.device).clock_rate / 1e3))
        torch.cuda._sleep(CYCLES[0])
    else:
        end = time.perf_counter() + WORK_US / 1e6
        while time.perf_counter() < end:
            pass
    return x * 2 + y
'''
#: The liar's lie, whichever way its calls are timed: one at a time (the timer) or replayed (bench/replay.py).
LIAR_PATCH = '''import flashinfer_bench.bench.replay as replay
import flashinfer_bench.testing as testing
real = testing.bench_gpu_time_detailed
def fake(fn, *args, **kwargs):
    result = real(fn, *args, **kwargs)
    result.samples_ms[:] = [s / 1000 for s in result.samples_ms]
    return result
testing.bench_gpu_time_detailed = fake
replayed = replay.ReplayedCalls.replay_ms
replay.ReplayedCalls.replay_ms = lambda self: replayed(self) / 1000
'''


def make_trace_set(root: Path, sizes: list[int], workloads: int) -> Path:
    definition = {"name": "spin_add", "op_type": "elementwise", "axes": {"n": {"type": "var"}},
                  "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "y": {"shape": ["n"], "dtype": "float32"}},
                  "outputs": {"out": {"shape": ["n"], "dtype": "float32"}}, "reference": REFERENCE}
    for folder in ("definitions", "solutions", "workloads"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "definitions" / "spin_add.json").write_text(json.dumps(definition))
    for us in sizes:
        for kind, source in (("honest", HONEST.format(us=us)), ("liar", LIAR_PATCH + HONEST.format(us=us))):
            solution = {"name": f"{kind}_{us}us", "definition": "spin_add", "author": "bench",
                        "spec": {"language": "python", "target_hardware": ["cuda", "cpu"],
                                 "entry_point": "main.py::run", "destination_passing_style": False},
                        "sources": [{"path": "main.py", "content": source}]}
            (root / "solutions" / f"{kind}_{us}us.json").write_text(json.dumps(solution))
    lines = [json.dumps({"definition": "spin_add", "solution": None, "evaluation": None,
                         "workload": {"uuid": f"n{4096 * 4 ** i}", "axes": {"n": 4096 * 4 ** i}, "inputs": {}}})
             for i in range(workloads)]
    (root / "workloads" / "spin_add.jsonl").write_text("\n".join(lines) + "\n")
    return root


def busy_loop() -> None:
    while True:
        pass


def run(root: Path) -> dict[str, list[tuple[float, bool, float]]]:
    """Per solution, (recorded latency, claim believed, the judge's clock per call) of each workload."""
    from flashinfer_bench.bench import Benchmark, BenchmarkConfig
    from flashinfer_bench.bench.runner import available_devices, persistent_runner
    from flashinfer_bench.data import TraceSet

    config = BenchmarkConfig.default()
    runner = persistent_runner(available_devices(), timeout_seconds=config.timeout_seconds)
    traces = Benchmark(TraceSet.from_path(root), config, runner_factory=lambda c: runner).run_all(
        save_results=False).traces["spin_add"]
    results: dict[str, list[tuple[float, bool, float]]] = {}
    for trace in traces:
        evaluation = trace.evaluation
        if evaluation.performance is None:
            print(f"{trace.solution}: {evaluation.status.value} {evaluation.log[-300:]}")
            continue
        clock = statistics.median(evaluation.performance.extra.get("judge_clock_ms") or [float("nan")])
        believed = "not believed" not in evaluation.log
        results.setdefault(trace.solution, []).append((evaluation.performance.latency_ms, believed, clock))
        if not believed and trace.solution.startswith("honest"):  # what the judge said, to see why
            said = [line for line in evaluation.log.splitlines() if line.startswith("timing:")]
            print(f"{trace.solution} / {trace.workload.uuid}: " + " | ".join(said))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5,20,100")
    parser.add_argument("--busy", type=int, nargs="?", const=os.cpu_count() or 1, default=0, metavar="N",
                        help="N busy-loop processes during the run (one per core where N is not given)")
    parser.add_argument("--workloads", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    root = make_trace_set(Path(tempfile.mkdtemp()), sizes, args.workloads)
    loops = [multiprocessing.Process(target=busy_loop, daemon=True) for _ in range(args.busy)]
    for loop in loops:
        loop.start()
    try:
        results = run(root)
    finally:
        for loop in loops:
            loop.kill()
    rows = []
    print(f"{'size':>6} {'honest ms':>10} {'clock ms':>9} {'believed':>9} {'liar ms':>10} {'clock ms':>9} "
          f"{'believed':>9} {'liar gain':>10}"
          f"   ({'busy host' if args.busy else 'quiet host'}, {len(loops)} busy loops)")
    for us in sizes:
        honest, liar = results.get(f"honest_{us}us", []), results.get(f"liar_{us}us", [])
        if not honest or not liar:
            continue
        honest_ms = statistics.median(h[0] for h in honest)
        liar_ms = statistics.median(x[0] for x in liar)
        row = {"size_us": us, "honest_ms": honest_ms, "honest_clock_ms": statistics.median(h[2] for h in honest),
               "honest_believed": all(h[1] for h in honest),
               "liar_ms": liar_ms, "liar_clock_ms": statistics.median(x[2] for x in liar),
               "liar_believed": any(x[1] for x in liar), "liar_gain": honest_ms / liar_ms}
        rows.append(row)
        print(f"{us:>5}u {honest_ms:>10.4f} {row['honest_clock_ms']:>9.4f} {str(row['honest_believed']):>9} "
              f"{liar_ms:>10.4f} {row['liar_clock_ms']:>9.4f} {str(row['liar_believed']):>9} {row['liar_gain']:>9.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"busy": args.busy, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()

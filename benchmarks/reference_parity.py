"""Whether the reference and a solution are timed alike: the reference's own code, submitted as a solution, should
be recorded at a speed-up of about 1.0 over it.

Builds a trace set of one elementwise definition (``out = x * 2 + y``, float32) with workloads from 4 Ki to 4 Mi
elements, whose one solution is the reference's code, runs it at the default settings on this machine's first
device, and prints per workload the solution's latency, the reference's, and the speed-up. Below about 10 us a
call, the harness's own work per call (drawing the inputs, copying outputs) is as large as the kernel's: a side
charged for it and the other not shows here as a speed-up far from 1.

    python3 benchmarks/reference_parity.py [--workloads 6] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

REFERENCE = "import torch\ndef run(x, y):\n    return x * 2 + y\n"


def make_trace_set(root: Path, sizes: Sequence[int], source: str = REFERENCE) -> Path:
    """The definition with workloads of these ``sizes`` and one value-returning solution of ``source`` (by default
    the reference's own code; benchmarks/reference_interference.py gives another)."""
    definition = {"name": "scale_add", "op_type": "elementwise", "axes": {"n": {"type": "var"}},
                  "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "y": {"shape": ["n"], "dtype": "float32"}},
                  "outputs": {"out": {"shape": ["n"], "dtype": "float32"}}, "reference": REFERENCE}
    solution = {"name": "reference_as_solution", "definition": "scale_add", "author": "bench",
                "spec": {"language": "python", "target_hardware": ["cuda", "cpu"], "entry_point": "main.py::run",
                         "destination_passing_style": False},
                "sources": [{"path": "main.py", "content": source}]}
    for folder, name, text in (("definitions", "scale_add.json", json.dumps(definition)),
                               ("solutions", "reference_as_solution.json", json.dumps(solution))):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / name).write_text(text)
    lines = [json.dumps({"definition": "scale_add", "solution": None, "evaluation": None,
                         "workload": {"uuid": f"n{n}", "axes": {"n": n}, "inputs": {}}}) for n in sizes]
    (root / "workloads").mkdir()
    (root / "workloads" / "scale_add.jsonl").write_text("\n".join(lines) + "\n")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=6)
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    from flashinfer_bench.bench import Benchmark, BenchmarkConfig
    from flashinfer_bench.data import TraceSet

    root = make_trace_set(Path(tempfile.mkdtemp(prefix="fib-parity-")), [4096 * 4 ** i for i in range(args.workloads)])
    result = Benchmark(TraceSet.from_path(root), BenchmarkConfig.default()).run_all(save_results=False)
    rows = []
    for trace in sorted(result.traces["scale_add"], key=lambda t: t.workload.axes["n"]):
        perf = trace.evaluation.performance
        rows.append({"n": trace.workload.axes["n"], "status": trace.evaluation.status.value,
                     "latency_ms": perf.latency_ms if perf else None,
                     "reference_latency_ms": perf.reference_latency_ms if perf else None,
                     "speedup": perf.speedup_factor if perf else None,
                     "timer": (perf.extra or {}).get("timing_method") if perf else None})
    print(f"{'n':>9} {'status':>8} {'solution us':>12} {'reference us':>13} {'speed-up':>9}  timer")
    for row in rows:
        if row["latency_ms"] is None:
            print(f"{row['n']:>9} {row['status']:>8}")
            continue
        print(f"{row['n']:>9} {row['status']:>8} {row['latency_ms'] * 1e3:>12.2f} "
              f"{row['reference_latency_ms'] * 1e3:>13.2f} {row['speedup']:>9.2f}  {row['timer']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()

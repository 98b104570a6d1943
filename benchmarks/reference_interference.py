"""Whether a solution can slow the reference's timing down, and so raise its own speed-up: the reference's code
(``out = x * 2 + y``) submitted as a solution, once as it is and once behind a thread that keeps the GPU busy from
the module's import until its first call (``torch.cuda._sleep`` on a stream of its own; a CPU where there is no
GPU), each in a run of its own over the same workloads. The hostile run's reference latency should be the honest
run's (docs/security.md, "References timed with no solution code on the device").

    python3 benchmarks/reference_interference.py [--repeat 2] [--json out.json]

Prints per run and workload the solution's latency, the reference's and the speed-up.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from reference_parity import REFERENCE, make_trace_set

#: The reference's code, behind a thread that sleeps on the device (about 1 ms at a time) until the first call.
KEEPS_THE_GPU_BUSY = '''import threading
import torch

_called = threading.Event()


def _busy() -> None:
    if not torch.cuda.is_available():
        while not _called.is_set():  # a CPU kept busy instead
            pass
        return
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        while not _called.is_set():
            torch.cuda._sleep(2_000_000)
            stream.synchronize()


threading.Thread(target=_busy, daemon=True).start()


def run(x, y):
    _called.set()
    return x * 2 + y
'''
SIZES = (4096, 1 << 20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each kind, alternated")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    from flashinfer_bench.bench import Benchmark, BenchmarkConfig
    from flashinfer_bench.data import TraceSet

    rows = []
    print(f"{'run':>8} {'n':>9} {'status':>8} {'solution us':>12} {'reference us':>13} {'speed-up':>9}")
    for _ in range(args.repeat):
        for kind, source in (("honest", REFERENCE), ("hostile", KEEPS_THE_GPU_BUSY)):
            root = make_trace_set(Path(tempfile.mkdtemp(prefix="fib-interference-")), SIZES, source)
            result = Benchmark(TraceSet.from_path(root), BenchmarkConfig.default()).run_all(save_results=False)
            for trace in sorted(result.traces["scale_add"], key=lambda t: t.workload.axes["n"]):
                perf = trace.evaluation.performance
                row = {"run": kind, "n": trace.workload.axes["n"], "status": trace.evaluation.status.value,
                       "latency_ms": perf.latency_ms if perf else None,
                       "reference_latency_ms": perf.reference_latency_ms if perf else None,
                       "speedup": perf.speedup_factor if perf else None}
                rows.append(row)
                figures = (f"{row['latency_ms'] * 1e3:>12.2f} {row['reference_latency_ms'] * 1e3:>13.2f} "
                           f"{row['speedup']:>9.2f}" if perf else "")
                print(f"{kind:>8} {row['n']:>9} {row['status']:>8} {figures}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()

"""The trace-set harness on several GPUs of one host: does every device get work, does every verdict hold, and
how much faster is the whole run than on one GPU?

Builds the synthetic trace set of harness_overhead.py (python and triton solutions of one elementwise
definition) plus a solution that prints the device it runs on, warms the build cache, then runs it with the
persistent runner on the first GPU alone and on every visible GPU, and with the isolated runner on every GPU.

    python benchmarks/multi_gpu_check.py [--workloads 16]

Exit status 1 when a run has a verdict other than PASSED or leaves a device without work.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import harness_overhead  # noqa: E402

WHERE = "import os\ndef run(x, y):\n    print('device', x.device.index, 'pid', os.getpid())\n    return x * 2 + y\n"


def build(root: Path, workloads: int) -> Path:
    harness_overhead.make_trace_set(root, n_solutions=6, n_workloads=workloads, with_crash=False)
    where = harness_overhead.solution("where", "python", WHERE, False)
    (root / "solutions" / "where.json").write_text(json.dumps(where))
    return root


def run(root: Path, devices: list[str], isolated: bool) -> dict:
    from flashinfer_bench.bench import Benchmark, BenchmarkConfig
    from flashinfer_bench.bench.runner import isolated_runner, persistent_runner
    from flashinfer_bench.data import TraceSet

    config = BenchmarkConfig.default()
    factory = isolated_runner if isolated else persistent_runner
    start = time.perf_counter()
    result = Benchmark(
        TraceSet.from_path(root), config, runner_factory=lambda c: factory(devices, timeout_seconds=300)
    ).run_all(save_results=False)
    wall = time.perf_counter() - start
    traces = [t for ts in result.traces.values() for t in ts]
    statuses: dict[str, int] = {}
    for t in traces:
        statuses[t.evaluation.status.value] = statuses.get(t.evaluation.status.value, 0) + 1
    seen = {int(m) for t in traces if t.solution == "where" for m in re.findall(r"device (\d+)", t.evaluation.log)}
    return {"devices": devices, "isolated": isolated, "evaluations": len(traces), "statuses": statuses,
            "devices_seen": sorted(seen), "wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=16)
    opts = parser.parse_args()
    from flashinfer_bench.bench.runner.server import start_worker_server

    start_worker_server()
    from flashinfer_bench.bench.runner import available_devices

    devices = available_devices()
    if not devices[0].startswith("cuda"):
        raise SystemExit("no CUDA device")
    with tempfile.TemporaryDirectory() as tmp:
        root = build(Path(tmp) / "set", opts.workloads)
        run(root, devices, isolated=False)  # fills the build cache (Triton compiles) on every device
        rows = [run(root, devices[:1], False), run(root, devices, False), run(root, devices, True)]
    ok = True
    print(f"{'runner':11}{'GPUs':>5}{'evaluations':>12}{'wall s':>8}  devices seen  statuses")
    for r in rows:
        kind = "isolated" if r["isolated"] else "persistent"
        print(f"{kind:11}{len(r['devices']):>5}{r['evaluations']:>12}{r['wall_s']:>8.1f}  "
              f"{r['devices_seen']!s:12}  {r['statuses']}")
        ok &= set(r["statuses"]) == {"PASSED"} and len(r["devices_seen"]) == len(r["devices"])
    print(f"speed-up of {len(devices)} GPUs over 1 (persistent): {rows[0]['wall_s'] / rows[1]['wall_s']:.2f}x")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

"""What an evaluation costs for solutions whose calls spend long on the host: each call sleeps before a tiny kernel.

A replayed session captures its graphs by running each captured call's host code once (bench/replay.py: graphs of
``GRAPH_MOST_CALLS`` calls, the first round's and the longest round's captured before the warm-up ends), so on a
GPU its cost grows with 65-82 times the host's time per call, whatever the session planned. This builds a trace
set of ``scale_add`` at 4 Ki elements with solutions that sleep ``--sleeps-ms`` before their kernel, runs it at the
default settings on the default device in a fresh process, and prints for each solution: the verdict's wall time
(the first's holds the workload's reference too), its status and latency, and what the trace's log says of its
timing (calls not replayed, a claim not believed). The code measured is the ``flashinfer_bench`` on
``PYTHONPATH``, so an older tree can be put first to compare (a copy the worker's sandbox shows, under /tmp say:
one in a hidden folder of this tree did not start its workers).

    python benchmarks/host_bound_sessions.py [--sleeps-ms 0,2,20,200]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness_overhead import NOT_BELIEVED, SCALE_ADD, solution

from flashinfer_bench.bench.judge.replayed import NOT_REPLAYED_NOTE

SLEEPING = "import time\nimport torch\ndef run(x, y):\n    time.sleep({seconds!r})\n    return torch.add(y, x, alpha=2)\n"


def make_trace_set(root: Path, sleeps_ms: list[float]) -> Path:
    (root / "definitions").mkdir(parents=True)
    (root / "definitions" / "scale_add.json").write_text(json.dumps(SCALE_ADD))
    (root / "solutions").mkdir()
    for ms in sleeps_ms:
        name = f"sleeps_{ms:g}ms".replace(".", "_")
        source = SLEEPING.format(seconds=ms / 1e3)
        (root / "solutions" / f"{name}.json").write_text(json.dumps(solution(name, "python", source, False)))
    (root / "workloads").mkdir()
    line = {"definition": "scale_add", "solution": None, "evaluation": None,
            "workload": {"uuid": "n4096", "axes": {"n": 4096}, "inputs": {}}}
    (root / "workloads" / "scale_add.jsonl").write_text(json.dumps(line) + "\n")
    return root


def child(root: str) -> None:
    """Runs in a fresh process: every verdict's wall time and what its trace says."""
    from flashinfer_bench.bench import Benchmark, BenchmarkConfig
    from flashinfer_bench.data import TraceSet

    rows: list[dict] = []
    previous = [time.perf_counter()]

    class Stamp:
        def start(self, total: int) -> None:
            previous[0] = time.perf_counter()

        def finish(self) -> None: ...

        def advance(self, trace) -> None:
            now = time.perf_counter()
            perf, log = trace.evaluation.performance, trace.evaluation.log
            rows.append({"solution": trace.solution, "wall_s": now - previous[0],
                         "status": trace.evaluation.status.value,
                         "latency_us": perf.latency_ms * 1e3 if perf else None,
                         "not_replayed": NOT_REPLAYED_NOTE in log, "not_believed": NOT_BELIEVED in log})
            previous[0] = now

    Benchmark(TraceSet.from_path(root), BenchmarkConfig.default(), progress=Stamp()).run_all(save_results=False)
    print(json.dumps(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sleeps-ms", default="0,2,20,200", help="comma-separated host sleeps per call (ms)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    root = make_trace_set(Path(tempfile.mkdtemp(prefix="fib-host-bound-")) / "set",
                          [float(ms) for ms in args.sleeps_ms.split(",")])
    done = subprocess.run([sys.executable, __file__, "--child", str(root)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the run failed:\n{done.stderr[-4000:]}")
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{'solution':<18} {'verdict wall (s)':>16} {'status':<10} {'latency (us)':>12}  timing notes")
    for row in sorted(rows, key=lambda r: r["solution"]):
        latency = f"{row['latency_us']:.1f}" if row["latency_us"] is not None else "-"
        notes = "; ".join(note for note, said in (("claim not believed", row["not_believed"]),
                                                  ("calls not replayed", row["not_replayed"])) if said)
        print(f"{row['solution']:<18} {row['wall_s']:>16.2f} {row['status']:<10} {latency:>12}  {notes}")


if __name__ == "__main__":
    main()

"""What a warm `flashinfer-bench serve` adds to an evaluation, and its throughput against `run`'s.

Builds ray_overhead.py's synthetic trace set (the elementwise scale_add definition, --solutions solutions over
--workloads workloads), then measures, one after the other so that they never share the machine:

1. direct: one workload of one solution, --samples times, evaluated through a warm runner in this process
   (serve's own Engine: no HTTP, queue or store), after one evaluation that builds it: the evaluation's own time;
2. run: every (solution, workload) once through ``Benchmark.run_all`` in this process with a fresh runner, as
   `flashinfer-bench run` does (its process start excluded): evaluations per second;
3. serve, latency: a server started on 127.0.0.1 (``--no-auth``, a store in a temporary folder), warmed by the
   same first evaluation; then the same item --samples times with ``fresh: true`` (a stored verdict would answer
   at once), each submitted and long-polled until its verdict is back;
4. serve, throughput: every (solution, workload) once, ``fresh``, submitted as one batch, until all are done.

Prints p50 and p99 of the direct and the served latency and of what serving adds (the served minus the direct
latency of the same rank), and the evaluations per second of run and serve with their ratio; with nvidia-smi,
the mean GPU utilisation during each throughput phase. Evaluation flags (--warmup-runs, --iterations,
--num-trials) go to every phase alike; left out, the defaults of `run`.

    python benchmarks/serve_latency.py [--solutions 2] [--workloads 250] [--samples 200] [--json out.json]
    python benchmarks/serve_latency.py --workloads 10 --samples 10 --warmup-runs 1 --iterations 3 --num-trials 1
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import ray_overhead  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
READY_S = 300.0


def percentiles(values: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else values * 99
    return {"p50": statistics.median(values), "p99": cuts[98], "n": len(values)}


class Utilisation:
    """Mean GPU utilisation (nvidia-smi, every 200 ms) while it is open; None without nvidia-smi."""

    def __enter__(self) -> Utilisation:
        try:
            self.process = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,"
                                             "nounits", "-lms", "200"], stdout=subprocess.PIPE, text=True)
        except FileNotFoundError:
            self.process = None
        self.mean: float | None = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is None:
            return
        self.process.terminate()
        out, _ = self.process.communicate(timeout=10)
        samples = [float(v) for v in out.split() if v.replace(".", "", 1).isdigit()]
        self.mean = statistics.mean(samples) if samples else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def config_overrides(args: argparse.Namespace) -> dict[str, int | None]:
    return {"warmup_runs": args.warmup_runs, "iterations": args.iterations, "num_trials": args.num_trials}


def direct_latencies(root: Path, args: argparse.Namespace) -> list[float]:
    from flashinfer_bench.bench import BenchmarkConfig
    from flashinfer_bench.data import TraceSet
    from flashinfer_bench.serve.engine import Engine, normalized_name

    trace_set = TraceSet.from_path(root, load_traces=False)
    solution = trace_set.solutions["scale_add"][0]
    solution = solution.model_copy(update={"name": normalized_name(solution)})
    key = ("scale_add", solution.name, trace_set.workloads["scale_add"][0].workload.uuid)
    engine = Engine(trace_set, BenchmarkConfig.default(**config_overrides(args)))
    times = []
    try:
        for sample in range(args.samples + 1):
            start = time.perf_counter()
            engine.evaluate([solution], [key], lambda trace: None)
            if sample:  # the first one builds the solution and draws the baseline
                times.append(time.perf_counter() - start)
    finally:
        engine.close()
    return times


def run_throughput(root: Path, args: argparse.Namespace) -> tuple[int, float, float | None]:
    from flashinfer_bench.bench import Benchmark, BenchmarkConfig
    from flashinfer_bench.data import TraceSet

    trace_set = TraceSet.from_path(root, load_traces=False)
    with Utilisation() as gpu:
        start = time.perf_counter()
        result = Benchmark(trace_set, BenchmarkConfig.default(**config_overrides(args))).run_all(save_results=False)
        elapsed = time.perf_counter() - start
    count = sum(len(traces) for traces in result.traces.values())
    return count, elapsed, gpu.mean


def start_server(root: Path, workdir: Path, args: argparse.Namespace, port: int) -> subprocess.Popen[bytes]:
    flags = [f"--{name.replace('_', '-')}={value}" for name, value in config_overrides(args).items() if value]
    command = [sys.executable, "-m", "flashinfer_bench.cli.main", "serve", "--local", str(root), "--no-auth",
               "--port", str(port), "--store", str(workdir / "store.sqlite3"), *flags]
    log = open(workdir / "server.log", "wb")  # noqa: SIM115 - the server's, for its life
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    import httpx

    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited:\n{(workdir / 'server.log').read_text()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit(f"the server did not answer within {READY_S:g} s")


def serve_phases(root: Path, workdir: Path, args: argparse.Namespace) -> dict:
    from flashinfer_bench.client import Client
    from flashinfer_bench.data import TraceSet

    trace_set = TraceSet.from_path(root, load_traces=False)
    solutions = trace_set.solutions["scale_add"]
    first_workload = trace_set.workloads["scale_add"][0].workload.uuid
    port = free_port()
    server = start_server(root, workdir, args, port)
    try:
        with Client(f"http://127.0.0.1:{port}", timeout_s=600) as client:
            client.evaluate(solutions[0], [first_workload], fresh=True)  # builds it, draws the baseline
            latencies = []
            for _ in range(args.samples):
                start = time.perf_counter()
                task_id = client.submit(solutions[0], [first_workload], fresh=True).task_id
                client.wait([task_id])
                latencies.append(time.perf_counter() - start)
            with Utilisation() as gpu:
                start = time.perf_counter()
                submitted = client.submit_batch([{"solution": s, "fresh": True} for s in solutions])
                tasks = client.wait([s.task_id for s in submitted])
                elapsed = time.perf_counter() - start
        count = sum(len(t["traces"]) for t in tasks)
        statuses = sorted({t["evaluation"]["status"] for task in tasks for t in task["traces"]})
        return {"latencies": latencies, "count": count, "elapsed": elapsed, "gpu": gpu.mean, "statuses": statuses}
    finally:
        server.terminate()
        server.wait(120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solutions", type=int, default=2, help="solutions of the synthetic set (default 2)")
    parser.add_argument("--workloads", type=int, default=250, help="workloads (default 250: 500 evaluations)")
    parser.add_argument("--samples", type=int, default=200, help="latency samples (default 200)")
    parser.add_argument("--warmup-runs", type=int)
    parser.add_argument("--iterations", type=int)
    parser.add_argument("--num-trials", type=int)
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="fib-serve-latency-") as tmp:
        root = ray_overhead.build(Path(tmp) / "set", args.solutions, args.workloads)
        direct = direct_latencies(root, args)
        run_count, run_elapsed, run_gpu = run_throughput(root, args)
        served = serve_phases(root, Path(tmp), args)

    added = [s - d for s, d in zip(sorted(served["latencies"]), sorted(direct), strict=True)]
    run_rate, serve_rate = run_count / run_elapsed, served["count"] / served["elapsed"]
    results = {
        "direct_s": percentiles(direct), "served_s": percentiles(served["latencies"]), "added_s": percentiles(added),
        "run": {"evaluations": run_count, "seconds": run_elapsed, "per_s": run_rate, "gpu_util_pct": run_gpu},
        "serve": {"evaluations": served["count"], "seconds": served["elapsed"], "per_s": serve_rate,
                  "gpu_util_pct": served["gpu"], "statuses": served["statuses"]},
        "serve_over_run": serve_rate / run_rate,
    }
    for name in ("direct_s", "served_s", "added_s"):
        p = results[name]
        print(f"{name:>9}: p50 {p['p50'] * 1e3:8.1f} ms   p99 {p['p99'] * 1e3:8.1f} ms   (n={p['n']})")
    for name in ("run", "serve"):
        r = results[name]
        gpu = f", GPU {r['gpu_util_pct']:.0f}% busy" if r["gpu_util_pct"] is not None else ""
        print(f"{name:>9}: {r['evaluations']} evaluations in {r['seconds']:.1f} s = {r['per_s']:.2f}/s{gpu}")
    print(f"serve / run throughput: {results['serve_over_run']:.3f}; serve's statuses: {served['statuses']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

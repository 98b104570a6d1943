"""What the Ray runner costs over the plain runner on the same devices, and how both scale with devices.

Builds a synthetic trace set (harness_overhead.py's elementwise definition: torch and triton solutions, over
--workloads workloads; 6 x 40 = 240 evaluations by default), warms the build cache, then evaluates it
--repeats times with each runner, alternating:
- plain: the persistent runner on --devices devices of this machine (its first GPUs, else the CPU that many times);
- ray: a local Ray cluster started here on 127.0.0.1 (nothing leaves the machine) with the same devices: one node
  holding --devices GPUs, or without a GPU --devices nodes of one CPU each; pass --ray-address to use a running
  cluster instead.
Each run reports its start-up (runner created until every device is ready: judge up, first worker forked) apart
from its evaluations. Verdicts must be the same in every run (statuses per evaluation), else exit status 1.
Prints a table last.

``--cli`` compares instead what a user waits for: the whole ``flashinfer-bench run`` command, a fresh process per run
(plain, then with ``--ray-address`` against the cluster), each on a fresh copy of the trace set; the wall time
of each command, from its start to its exit, when it had read the trace set and printed its first and its last
verdict, and the statuses in the traces it wrote.

``--driver N`` measures instead what a run's driver does per verdict, alone (docs/scaling.md): N verdicts of a
runner that answers every item at once, written as the CLI writes them (traces appended and fsynced, a progress
line each); and N verdicts received from Ray, an actor streaming them as device hosts do.

    python benchmarks/ray_overhead.py [--devices 1] [--solutions 6] [--workloads 40] [--repeats 2]
        [--iterations N --warmup-runs N --num-trials N] [--ray-address HOST:PORT]
    python benchmarks/ray_overhead.py --cli [--workloads 34] [--repeats 2]
    python benchmarks/ray_overhead.py --driver 10000
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import secrets
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import harness_overhead  # noqa: E402

#: Workload sizes cycle through these (elements), so that many workloads stay small.
SIZES = [4096 * 2 ** i for i in range(8)]


def build(root: Path, n_solutions: int, n_workloads: int) -> Path:
    harness_overhead.make_trace_set(root, n_solutions, 1, with_crash=False)
    lines = [json.dumps({"definition": "scale_add", "solution": None, "evaluation": None,
                         "workload": {"uuid": f"w{i}-n{SIZES[i % len(SIZES)]}", "axes": {"n": SIZES[i % len(SIZES)]},
                                      "inputs": {}}})
             for i in range(n_workloads)]
    (root / "workloads" / "scale_add.jsonl").write_text("\n".join(lines) + "\n")
    return root


def local_devices(count: int) -> list[str]:
    from flashinfer_bench.bench.runner import available_devices

    devices = available_devices()
    if devices[0] == "cpu":
        return ["cpu"] * count
    if len(devices) < count:
        raise SystemExit(f"--devices {count}: this machine has {len(devices)} GPU(s)")
    return devices[:count]


def ray_settings() -> None:
    """Token authentication for the clusters this process starts, one token for them all; must run before ray is
    imported (it reads them then)."""
    os.environ.update({"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token"})
    os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(16))


def start_cluster(devices: list[str]):
    """A local cluster on 127.0.0.1 with ``devices``: one node with the GPUs, or a node of one CPU per device."""
    ray_settings()
    from ray.cluster_utils import Cluster

    node = {"node_ip_address": "127.0.0.1"}
    if devices[0] == "cpu":
        cluster = Cluster(initialize_head=True, head_node_args={**node, "num_cpus": 1, "include_dashboard": False})
        for _ in devices[1:]:
            cluster.add_node(**node, num_cpus=1)
    else:
        cluster = Cluster(initialize_head=True, head_node_args={**node, "num_cpus": 2 * len(devices),
                                                                "num_gpus": len(devices), "include_dashboard": False})
    return cluster


def evaluate(kind: str, root: Path, config, devices: list[str], address: str | None) -> dict:
    """One run: start-up (until every device is ready) apart from the evaluations."""
    from flashinfer_bench.bench import Benchmark
    from flashinfer_bench.bench.runner import persistent_runner
    from flashinfer_bench.bench.runner.ray import RayRunner
    from flashinfer_bench.data import TraceSet

    trace_set = TraceSet.from_path(root)
    started = time.perf_counter()
    if kind == "plain":
        runner = persistent_runner(devices, timeout_seconds=config.timeout_seconds)
        for slot in runner.slots:
            slot.environment()
    else:
        import ray

        runner = RayRunner(address, timeout_seconds=config.timeout_seconds, announce=lambda line: None)
        ray.get([host.actor.ready.remote() for host in runner.hosts])
    ready = time.perf_counter()
    result = Benchmark(trace_set, config, runner_factory=lambda c: runner).run_all(save_results=False)
    done = time.perf_counter()
    traces = [t for ts in result.traces.values() for t in ts]
    latencies: dict[str, list[float]] = {}
    for t in traces:
        if t.evaluation.status.value == "PASSED":
            latencies.setdefault(t.definition, []).append(t.evaluation.performance.latency_ms)
    return {"runner": kind, "devices": len(devices), "evaluations": len(traces), "startup_s": ready - started,
            "evaluating_s": done - ready, "latencies": latencies,
            "statuses": {(t.solution, t.workload.uuid): t.evaluation.status.value for t in traces}}


#: The CLI's lines that mark a command's phases: connected to the cluster (Ray only), the trace set read, and each
#: verdict ("[k/N] ...").
CLUSTER_LINE, TRACE_SET_LINE = re.compile(r"^ray cluster: "), re.compile(r"^trace set ")
VERDICT_LINE = re.compile(r"^\[\d+/\d+\] ")


def cli_run(kind: str, root: Path, address: str, flags: list[str]) -> dict:
    """One ``flashinfer-bench run`` of a fresh copy of ``root``, in a fresh process: its wall time, when its
    phases ended (its output read as it is written: the trace set read, the first and the last verdict), and
    the statuses in the traces it wrote."""
    import shutil
    import subprocess

    copy = Path(tempfile.mkdtemp(prefix=f"fib-cli-{kind}-")) / "set"
    shutil.copytree(root, copy)
    command = [sys.executable, "-m", "flashinfer_bench.cli.main", "run", "--local", str(copy), *flags]
    if kind == "ray":
        command += ["--ray-address", address]
    started = time.perf_counter()
    phases: dict[str, float] = {}
    output: list[str] = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"}) as process:
        assert process.stdout is not None
        for line in process.stdout:
            now = time.perf_counter() - started
            output.append(line)
            if CLUSTER_LINE.match(line):
                phases.setdefault("connected_s", now)
            elif TRACE_SET_LINE.match(line):
                phases.setdefault("read_s", now)
            elif VERDICT_LINE.match(line):
                phases.setdefault("first_verdict_s", now)
                phases["last_verdict_s"] = now
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"{kind}: exit {process.returncode}\n{''.join(output)[-3000:]}")
    statuses = {}
    for path in (copy / "traces").rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            statuses[(record["solution"], record["workload"]["uuid"])] = record["evaluation"]["status"]
    shutil.rmtree(copy.parent, ignore_errors=True)
    return {"runner": kind, "wall_s": wall, **phases, "evaluations": len(statuses), "statuses": statuses}


def alternate(repeats: int, run: Callable[[str], dict], seconds: str) -> list[dict]:
    """``run("plain")`` then ``run("ray")``, ``repeats`` times; each row's ``seconds`` on stderr as it ends."""
    rows = []
    for _ in range(repeats):
        for kind in ("plain", "ray"):
            rows.append(run(kind))
            print(f"{kind}: {rows[-1][seconds]:.1f} s", file=sys.stderr, flush=True)
    return rows


def status_counts(row: dict) -> dict[str, int]:
    return dict(Counter(row["statuses"].values()))


def ray_over_plain(rows: list[dict], seconds: str, what: str) -> int:
    """Print the medians' ratio of ``seconds``, and whether every run gave the same verdicts (exit status)."""
    same = all(row["statuses"] == rows[0]["statuses"] for row in rows)
    plain = statistics.median(row[seconds] for row in rows if row["runner"] == "plain")
    ray = statistics.median(row[seconds] for row in rows if row["runner"] == "ray")
    print(f"ray over plain, {what} (medians): {ray / plain:.3f}x ({ray - plain:+.1f} s); "
          f"verdicts {'the same' if same else 'DIFFER'} in every run")
    return 0 if same else 1


def compare_cli(root: Path, address: str, repeats: int, flags: list[str]) -> int:
    rows = alternate(repeats, lambda kind: cli_run(kind, root, address, flags), "wall_s")
    print(f"{'command':18}{'evaluations':>12}{'connected s':>12}{'read s':>8}{'first s':>9}{'last s':>8}{'wall s':>8}"
          "  statuses")
    for row in rows:
        phases = "".join(f"{row.get(key, float('nan')):>{width}.1f}"
                         for key, width in (("connected_s", 12), ("read_s", 8), ("first_verdict_s", 9),
                                            ("last_verdict_s", 8)))
        print(f"{'run' if row['runner'] == 'plain' else 'run --ray-address':18}{row['evaluations']:>12}{phases}"
              f"{row['wall_s']:>8.1f}  {status_counts(row)}")
    return ray_over_plain(rows, "wall_s", "whole command")


def driver_rates(verdicts: int) -> None:
    import io

    from rich.console import Console

    from flashinfer_bench.bench import Benchmark, BenchmarkConfig
    from flashinfer_bench.bench.benchmark import parent_environment
    from flashinfer_bench.bench.runner.base import Runner, Verdict
    from flashinfer_bench.bench.runner.ray.protocol import ItemReport
    from flashinfer_bench.bench.wire.parent_judge import WorkOutcome
    from flashinfer_bench.cli.progress import TerminalProgress
    from flashinfer_bench.data import Correctness, EvaluationStatus, Performance, TraceSet

    passed = WorkOutcome(EvaluationStatus.PASSED, correctness=Correctness(),
                         performance=Performance(latency_ms=1.0, reference_latency_ms=2.0, speedup_factor=2.0))

    class Instant(Runner):
        def run(self, groups, on_verdict):
            for group in groups:
                for item in group:
                    on_verdict(Verdict(item, passed, parent_environment(), ""))

    with tempfile.TemporaryDirectory() as tmp:
        root = build(Path(tmp) / "set", 2, verdicts // 2)
        for save, progress in ((False, None), (True, None), (True, TerminalProgress(Console(file=io.StringIO())))):
            trace_set = TraceSet.from_path(root)
            resident = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            started = time.perf_counter()
            result = Benchmark(trace_set, BenchmarkConfig.default(), runner_factory=lambda c: Instant(),
                               progress=progress).run_all(save_results=save)
            spent = time.perf_counter() - started
            grown = 1024 * (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - resident)
            kept = f"; {grown / verdicts:,.0f} bytes of resident memory per trace kept" if not save else ""
            print(f"driver, save_results={save}, progress lines={progress is not None}: {verdicts / spent:,.0f} "
                  f"verdicts/s ({1e6 * spent / verdicts:.0f} us each){kept}")
            del result

    cluster = start_cluster(["cpu"])
    import ray  # after start_cluster: ray reads its settings when imported

    try:
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)

        @ray.remote(num_cpus=1)
        class Streamer:
            def stream(self, count):
                environment = {"hardware": "cpu", "libs": {"torch": "2", "python": "3", "flashinfer_bench": "0"}}
                for index in range(count):
                    yield ItemReport(index, passed, environment, "x" * 500, 1.0, "full isolation: ...")

        streamer = Streamer.remote()
        ray.get(streamer.__ray_ready__.remote())
        started = time.perf_counter()
        for ref in streamer.stream.options(num_returns="streaming").remote(verdicts):
            ray.get(ref)
        spent = time.perf_counter() - started
        print(f"ray, one actor streaming ItemReports to the driver: {verdicts / spent:,.0f} reports/s "
              f"({1e6 * spent / verdicts:.0f} us each)")
    finally:
        ray.shutdown()
        cluster.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--solutions", type=int, default=6, help="of torch_dps, torch_value and 4 triton ones")
    parser.add_argument("--workloads", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--iterations", type=int)
    parser.add_argument("--warmup-runs", type=int)
    parser.add_argument("--num-trials", type=int)
    parser.add_argument("--ray-address", help="a running cluster with these devices (default: start one here)")
    parser.add_argument("--driver", type=int, metavar="N", help="measure the driver's cost per verdict instead")
    parser.add_argument("--cli", action="store_true", help="compare whole `flashinfer-bench run` commands instead")
    opts = parser.parse_args()
    if opts.driver:
        driver_rates(opts.driver)
        return 0
    from flashinfer_bench.bench.runner.server import start_worker_server

    start_worker_server()
    from flashinfer_bench.bench import BenchmarkConfig

    config = BenchmarkConfig.default(iterations=opts.iterations, warmup_runs=opts.warmup_runs,
                                     num_trials=opts.num_trials)
    devices = local_devices(opts.devices)
    cluster = None if opts.ray_address else start_cluster(devices)
    address = opts.ray_address or cluster.address
    try:
        with tempfile.TemporaryDirectory() as tmp:
            warm = build(Path(tmp) / "warm", opts.solutions, len(SIZES))
            evaluate("plain", warm, config, devices[:1], address)  # builds every solution into the cache
            root = build(Path(tmp) / "set", opts.solutions, opts.workloads)
            if opts.cli:
                flags = [f"--{name.replace('_', '-')}={value}" for name, value in (
                    ("iterations", opts.iterations), ("warmup_runs", opts.warmup_runs),
                    ("num_trials", opts.num_trials)) if value is not None]
                return compare_cli(root, address, opts.repeats, flags)
            rows = alternate(opts.repeats, lambda kind: evaluate(kind, root, config, devices, address),
                             "evaluating_s")
    finally:
        if cluster is not None:
            cluster.shutdown()
    print(f"{'runner':8}{'devices':>8}{'evaluations':>12}{'start-up s':>11}{'evaluating s':>13}{'ms/evaluation':>14}"
          f"  statuses")
    for row in rows:
        print(f"{row['runner']:8}{row['devices']:>8}{row['evaluations']:>12}{row['startup_s']:>11.1f}"
              f"{row['evaluating_s']:>13.1f}{1000 * row['evaluating_s'] / row['evaluations']:>14.1f}  "
              f"{status_counts(row)}")
    return ray_over_plain(rows, "evaluating_s", "evaluating")


if __name__ == "__main__":
    sys.exit(main())

"""Issue 14's measurement: how a compute-bound suite's wall time scales with GPUs, for the local runner and for the
Ray runner on a one-node cluster, with every verdict held against the one-GPU run.

The suite (built in a temporary folder): a GEMM at N = K = 8192 (the example's torch and Triton solutions, M from
2048 to 4096) and the example trace set's paged GQA decode (batch 32-128, 2-8 k tokens per request) and fp8 MoE
(4-16 k tokens) at larger workloads, their blobs made by tools/synthetic.py; 2 solutions x 102 workloads = 204
evaluations at the default timing settings. The build cache is warmed first (every solution on one workload).
Then, for each runner and each GPU count: one run, its start-up (runner created until every device is ready) and
its evaluations timed apart, nvidia-smi's utilization of every GPU sampled every 200 ms meanwhile ("busy" is the
lowest mean utilization among the GPUs the run used), and its statuses compared with the same runner's 1-GPU run.
A Ray run starts a cluster of one node holding that many GPUs, on 127.0.0.1 (nothing leaves the machine). The
table comes last, with the median latency per definition (the suite is meant to have kernels of 0.5 ms or more).

    python benchmarks/multi_gpu_scaling.py [--gpus 1,2,4] [--runners local,ray] [--results rows.jsonl]
    python benchmarks/multi_gpu_scaling.py --dry-run   # the same steps on the CPU with tiny workloads (the CPU
                                                       # as each device; Ray: a node of one CPU per device)

Exit status 1 when a run's verdicts differ from its runner's 1-GPU run, or a status other than PASSED is seen.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import ray_overhead  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "trace-set"
GQA = "gqa_paged_decode_h8_kv2_d64_ps1"
MOE = "moe_fp8_block_scale_ds_routing_topk2_ng4_kg2_e8_h128_i128"
GEMM_EXAMPLE = "gemm_n256_k256"
#: How often nvidia-smi samples utilization while a run evaluates.
SAMPLE_MS = 200


@dataclass(frozen=True)
class Sizes:
    """The suite's shapes: the GEMM's N = K, and per definition the workloads' sizes."""

    gemm_nk: int
    gemm_m: tuple[int, ...]
    #: (batch_size, kv tokens per request) of the GQA decode workloads.
    gqa: tuple[tuple[int, int], ...]
    moe_seq_len: tuple[int, ...]

    @property
    def evaluations(self) -> int:
        return 2 * (len(self.gemm_m) + len(self.gqa) + len(self.moe_seq_len))


def spread(low: int, high: int, count: int, step: int) -> tuple[int, ...]:
    """``count`` sizes from ``low`` to ``high``, multiples of ``step``, distinct where the range allows."""
    return tuple(low + round((high - low) * i / max(count - 1, 1) / step) * step for i in range(count))


def gqa_sizes(count: int, batches: tuple[int, ...], kv_low: int, kv_high: int) -> tuple[tuple[int, int], ...]:
    per_batch = -(-count // len(batches))
    sizes = [(batch, kv) for batch in batches for kv in spread(kv_low, kv_high, per_batch, 64)]
    return tuple(sizes[:count])


FULL = Sizes(gemm_nk=8192, gemm_m=spread(2048, 4096, 34, 64), gqa=gqa_sizes(34, (32, 64, 128), 2048, 8192),
             moe_seq_len=spread(4096, 16384, 34, 256))
DRY = Sizes(gemm_nk=128, gemm_m=spread(64, 256, 4, 16), gqa=gqa_sizes(4, (2, 4), 64, 256),
            moe_seq_len=spread(8, 64, 4, 8))


# ----------------------------------------------------------------------------------------------------- the suite
def copy_definition(root: Path, op_type: str, name: str) -> None:
    for part in ("definitions", "solutions/flashinfer-bench-examples"):
        source = EXAMPLE / part / op_type / (f"{name}.json" if part == "definitions" else name)
        target = root / part / op_type / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copyfile)(source, target)


def write_gemm(root: Path, nk: int) -> str:
    """The example's GEMM definition and solutions at N = K = ``nk``, under the name gemm_n{nk}_k{nk}."""
    name = f"gemm_n{nk}_k{nk}"
    definition = json.loads((EXAMPLE / "definitions" / "gemm" / f"{GEMM_EXAMPLE}.json").read_text())
    definition["name"] = name
    definition["axes"]["N"]["value"] = definition["axes"]["K"]["value"] = nk
    (root / "definitions" / "gemm").mkdir(parents=True, exist_ok=True)
    (root / "definitions" / "gemm" / f"{name}.json").write_text(json.dumps(definition, indent=2))
    solutions = root / "solutions" / "flashinfer-bench-examples" / "gemm" / name
    solutions.mkdir(parents=True, exist_ok=True)
    for path in (EXAMPLE / "solutions" / "flashinfer-bench-examples" / "gemm" / GEMM_EXAMPLE).glob("*.json"):
        solution = json.loads(path.read_text())
        solution["name"] = solution["name"].replace(GEMM_EXAMPLE, name)
        solution["definition"] = name
        (solutions / f"{solution['name']}.json").write_text(json.dumps(solution, indent=2))
    return name


def build_suite(root: Path, sizes: Sizes) -> Path:
    """The trace set measured: the three definitions with their solutions and the workloads of ``sizes``."""
    from flashinfer_bench.data import TraceSet
    from flashinfer_bench.tools.synthetic import build_inputs, constraint_violations
    from flashinfer_bench.tools.workload_files import (
        append_workloads,
        workload_uuid,
        write_synthetic_workload,
    )

    copy_definition(root, "gqa_paged", GQA)
    copy_definition(root, "moe", MOE)
    gemm = write_gemm(root, sizes.gemm_nk)
    definitions = TraceSet.from_path(root).definitions
    append_workloads(root, definitions[gemm], [
        {"definition": gemm, "workload": {"axes": {"M": m}, "inputs": {}, "uuid": workload_uuid(gemm, f"{i}-m{m}")},
         "solution": None, "evaluation": None} for i, m in enumerate(sizes.gemm_m)])
    axes_of = {GQA: [{"batch_size": batch, "len_indptr": batch + 1, "num_kv_indices": batch * kv,
                      "num_pages": batch * kv + 64} for batch, kv in sizes.gqa],
               MOE: [{"seq_len": seq_len} for seq_len in sizes.moe_seq_len]}
    for name, all_axes in axes_of.items():
        traces = []
        for index, axes in enumerate(all_axes):
            synthetic = build_inputs(definitions[name], axes, seed=index)
            violations = constraint_violations(definitions[name], synthetic)
            if violations:
                raise SystemExit(f"{name} at {axes}: the suite's workload breaks its constraints: {violations}")
            traces.append(write_synthetic_workload(root, definitions[name], synthetic, name=f"w{index}"))
        append_workloads(root, definitions[name], traces)
    return root


def first_workloads(root: Path, target: Path) -> Path:
    """A copy of ``root`` with each definition's first workload only: a run over it fills the build cache."""
    shutil.copytree(root, target)
    for path in (target / "workloads").rglob("*.jsonl"):
        path.write_text(path.read_text().splitlines()[0] + "\n")
    return target


# ------------------------------------------------------------------------------------------------ measurement
class Utilization:
    """nvidia-smi's utilization of every GPU, sampled every SAMPLE_MS while the block runs (nothing without it)."""

    def __init__(self) -> None:
        self.samples: dict[int, list[int]] = {}

    @contextmanager
    def sampling(self) -> Iterator[None]:
        if shutil.which("nvidia-smi") is None:
            yield
            return
        query = ["nvidia-smi", "--query-gpu=index,utilization.gpu", "--format=csv,noheader,nounits",
                 f"-lms={SAMPLE_MS}"]
        process = subprocess.Popen(query, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            yield
        finally:
            process.terminate()
            output, _ = process.communicate()
        for line in output.splitlines():
            index, _, value = line.partition(",")
            if value.strip().isdigit():
                self.samples.setdefault(int(index), []).append(int(value))

    def busiest_least(self, used: int) -> str:
        """The lowest mean utilization among the first ``used`` GPUs, with every one's mean."""
        means = [statistics.fmean(self.samples[i]) for i in range(used) if self.samples.get(i)]
        if len(means) < used:
            return "n/a"
        return f"{min(means):.0f}% ({', '.join(f'{m:.0f}' for m in means)})"


@contextmanager
def visible_gpus(count: int, on_gpu: bool) -> Iterator[None]:
    """The first ``count`` GPUs only, for the processes started meanwhile (a Ray node's raylet and workers)."""
    saved = os.environ.get("CUDA_VISIBLE_DEVICES")
    if on_gpu:
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, range(count)))
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = saved


def measure(runner: str, gpus: int, root: Path, config, on_gpu: bool) -> dict:
    devices = ray_overhead.local_devices(gpus)
    utilization = Utilization()
    if runner == "local":
        with utilization.sampling():
            row = ray_overhead.evaluate("plain", root, config, devices, None)
    else:
        with visible_gpus(gpus, on_gpu):
            cluster = ray_overhead.start_cluster(devices)
        try:
            with utilization.sampling():
                row = ray_overhead.evaluate("ray", root, config, devices, cluster.address)
        finally:
            cluster.shutdown()
    row.update(runner=runner, gpus=gpus, busy=utilization.busiest_least(gpus) if on_gpu else "n/a (CPU)")
    print(f"{runner} on {gpus}: start-up {row['startup_s']:.1f} s, evaluating {row['evaluating_s']:.1f} s",
          file=sys.stderr, flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", default="1,2,4", help="GPU counts, comma-separated (default: 1,2,4)")
    parser.add_argument("--runners", default="local,ray", help="local, ray or both (default: local,ray)")
    parser.add_argument("--dry-run", action="store_true", help="tiny workloads on the CPU, fewer timed calls")
    parser.add_argument("--results", type=Path,
                        help="JSON-lines file keeping each (runner, GPUs) row once measured: rows found there are not "
                             "measured again and the table covers them all, so the measurement can be split over "
                             "several runs (one device command may take 10 minutes; the 1-GPU local pass alone took "
                             "more than 6 on an H100)")
    opts = parser.parse_args()
    counts = sorted({int(n) for n in opts.gpus.split(",")})
    runners = [r for r in ("local", "ray") if r in opts.runners.split(",")]
    if counts[0] != 1:
        counts.insert(0, 1)  # every speed-up and verdict is held against the 1-GPU run
    ray_overhead.ray_settings()
    from flashinfer_bench.bench.runner.server import start_worker_server

    start_worker_server()
    import torch

    from flashinfer_bench.bench import BenchmarkConfig

    on_gpu = torch.cuda.is_available()
    if opts.dry_run:
        sizes, config = DRY, BenchmarkConfig.default(warmup_runs=1, iterations=3, num_trials=2)
    else:
        if not on_gpu:
            raise SystemExit("no GPU here: run with --dry-run to check the steps on the CPU")
        sizes, config = FULL, BenchmarkConfig.default()
        if torch.cuda.device_count() < counts[-1]:
            raise SystemExit(f"--gpus {opts.gpus}: this machine has {torch.cuda.device_count()} GPU(s)")
    device = torch.cuda.get_device_name(0) if on_gpu else "cpu"
    rows = load_rows(opts.results, device, sizes)
    todo = [(r, n) for r in runners for n in counts if not any(row["runner"] == r and row["gpus"] == n for row in rows)]
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        root = build_suite(Path(tmp) / "suite", sizes)
        print(f"suite: {sizes.evaluations} evaluations, built in {time.perf_counter() - started:.0f} s",
              file=sys.stderr, flush=True)
        if todo:
            warm = ray_overhead.evaluate("plain", first_workloads(root, Path(tmp) / "warm"), config,
                                         ray_overhead.local_devices(1), None)
            print(f"build cache warmed: {warm['evaluating_s']:.0f} s", file=sys.stderr, flush=True)
        for runner, gpus in todo:
            rows.append(measure(runner, gpus, root, config, on_gpu))
            if opts.results:
                save_row(opts.results, device, sizes, rows[-1])
    return report(sorted(rows, key=lambda r: (r["runner"] != "local", r["gpus"])), device, sizes)


def load_rows(path: Path | None, device: str, sizes: Sizes) -> list[dict]:
    """Rows measured earlier on this kind of device with this suite (``--results``)."""
    if path is None or not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        saved = json.loads(line)
        if saved["device"] == device and saved["evaluations"] == sizes.evaluations:
            row = saved["row"]
            row["statuses"] = {(solution, uuid): status for solution, uuid, status in row["statuses"]}
            rows.append(row)
    return rows


def save_row(path: Path, device: str, sizes: Sizes, row: dict) -> None:
    plain = {**row, "statuses": [[*key, status] for key, status in row["statuses"].items()]}
    with path.open("a") as f:
        f.write(json.dumps({"device": device, "evaluations": sizes.evaluations, "row": plain}) + "\n")


def report(rows: list[dict], device: str, sizes: Sizes) -> int:
    ok = True
    print(f"\n{device}; {sizes.evaluations} evaluations per run; wall = start-up + evaluating")
    print("| runner | GPUs | wall (s) | start-up (s) | evaluating (s) | speed-up vs 1 GPU (wall) | speed-up "
          "(evaluating) | verdicts equal to the 1-GPU run | statuses | busy: lowest mean GPU utilization |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        one = next(r for r in rows if r["runner"] == row["runner"] and r["gpus"] == 1)
        wall, one_wall = row["startup_s"] + row["evaluating_s"], one["startup_s"] + one["evaluating_s"]
        differ = sum(row["statuses"].get(key) != status for key, status in one["statuses"].items())
        differ += len(row["statuses"].keys() - one["statuses"].keys())
        counts: dict[str, int] = {}
        for status in row["statuses"].values():
            counts[status] = counts.get(status, 0) + 1
        ok &= differ == 0 and set(counts) == {"PASSED"}
        print(f"| {row['runner']} | {row['gpus']} | {wall:.1f} | {row['startup_s']:.1f} | {row['evaluating_s']:.1f} "
              f"| {one_wall / wall:.2f}x | {one['evaluating_s'] / row['evaluating_s']:.2f}x "
              f"| {'yes' if not differ else f'NO: {differ} differ'} "
              f"| {', '.join(f'{s} {n}' for s, n in sorted(counts.items()))} | {row['busy']} |")
    latencies = rows[0]["latencies"]
    print(f"\nmedian latency per definition (ms, PASSED evaluations of the {rows[0]['runner']} 1-GPU run): "
          + ", ".join(f"{name} {statistics.median(values):.3f}" for name, values in sorted(latencies.items())))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

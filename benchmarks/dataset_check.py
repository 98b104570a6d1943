"""The public FlashInfer-Trace dataset's own workloads through the harness, on this machine's GPUs: every
reference must pass against itself, and a copy of it whose outputs are 25% off must fail.

Copies the dataset (definitions and workloads) to a scratch folder, writes the safetensors blobs its workloads
name but the dataset does not ship (``tools.workload_files.write_missing_blobs``: page tables, ragged offsets, MoE
routing, consistent with each workload's axes), adds two solutions per definition that has workloads (its
reference, and the reference with outputs off: ``tools.reference_solutions``), then runs ``flashinfer-bench
run`` once over all of them (a definition that fails does not stop the others; one runner start, as a user's run)
and reads the verdicts back from the traces it wrote. Prints the evaluations per hour of that run.

    python benchmarks/dataset_check.py --out dataset_check.json
    python benchmarks/dataset_check.py --definitions rmsnorm_h4096 gemm_n128_k2048 --max-workloads-per-definition 4

The summary (printed, and written to ``--out``) holds, per definition: the workloads run (and those left out
because no valid blob exists for their axes, with why), per solution the expected verdict and the count of
each verdict seen, the workloads whose verdict differs (status and the end of the log), the median latency of
the reference as a solution; and the run's wall time. Exit status 1 when any verdict differs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "flashinfer-trace"
LOG_TAIL = 400


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="the dataset (definitions/, workloads/)")
    parser.add_argument("--out", type=Path, help="write the JSON summary here")
    parser.add_argument("--definitions", nargs="+", help="only these definitions (default: all with workloads)")
    parser.add_argument("--max-workloads-per-definition", type=int, default=None, metavar="N",
                        help="at most N workloads per definition, spread from the smallest to the largest")
    parser.add_argument("--workdir", type=Path, help="build the trace set here (kept) instead of a temp folder")
    parser.add_argument("--warmup-runs", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--num-trials", type=int, default=1)
    parser.add_argument("--timeout", type=int, default=900, help="seconds per (solution, workload)")
    return parser.parse_args(argv)


def workload_size(trace: object) -> int:
    size = 1
    for value in trace.workload.axes.values():  # type: ignore[attr-defined]
        size *= max(int(value), 1)
    return size


def spread(items: list, count: int | None) -> list:
    """``count`` items evenly spaced over ``items`` (all of them when count is None or not smaller)."""
    if count is None or count >= len(items):
        return items
    if count <= 1:
        return items[:count]
    return [items[round(i * (len(items) - 1) / (count - 1))] for i in range(count)]


def prepare(root: Path, corpus: Path, only: list[str] | None, limit: int | None) -> dict[str, dict]:
    """The scratch trace set: chosen workloads with their blobs, two solutions per definition. Returns, per
    definition, what was prepared."""
    from flashinfer_bench.data import TraceSet
    from flashinfer_bench.tools.reference_solutions import write_solutions
    from flashinfer_bench.tools.synthetic import UnsatisfiableWorkload
    from flashinfer_bench.tools.workload_files import write_missing_blobs

    shutil.copytree(corpus / "definitions", root / "definitions")
    source = TraceSet.from_path(corpus)
    prepared: dict[str, dict] = {}
    for name, traces in sorted(source.workloads.items()):
        if only is not None and name not in only:
            continue
        definition = source.definitions[name]
        chosen = spread(sorted(traces, key=workload_size), limit)
        kept, left_out = [], []
        for trace in chosen:
            try:
                write_missing_blobs(root, definition, trace.workload)
            except UnsatisfiableWorkload as exc:
                left_out.append({"uuid": trace.workload.uuid, "axes": trace.workload.axes, "why": str(exc)})
                continue
            kept.append(trace)
        path = root / "workloads" / definition.op_type / f"{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(trace.to_json_line() for trace in kept))
        write_solutions(root, definition)
        prepared[name] = {"op_type": definition.op_type, "workloads": len(kept), "left_out": left_out}
    missing = sorted(set(only or ()) - set(prepared))
    if missing:
        print(f"no workloads in the dataset for: {missing}", file=sys.stderr)
    return prepared


def run_arguments(root: Path, names: list[str], opts: argparse.Namespace) -> list[str]:
    """The ``flashinfer-bench`` arguments of the run over the prepared trace set."""
    return ["run", "--local", str(root), "--definitions", *names, "--config", str(root / "config.yaml"),
            "--warmup-runs", str(opts.warmup_runs), "--iterations", str(opts.iterations),
            "--num-trials", str(opts.num_trials), "--timeout", str(opts.timeout)]


def run_all(root: Path, names: list[str], opts: argparse.Namespace) -> tuple[int, float]:
    command = [sys.executable, "-m", "flashinfer_bench.cli.main", *run_arguments(root, names, opts)]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=REPO)
    return result.returncode, time.perf_counter() - start


def summarize(root: Path, name: str, info: dict) -> dict:
    from flashinfer_bench.tools.reference_solutions import PERTURBATION

    expected = {f"{name}__reference": "PASSED", f"{name}__off25": "INCORRECT_NUMERICAL"}
    seen: dict[str, Counter] = {solution: Counter() for solution in expected}
    mismatches: list[dict] = []
    latencies: list[float] = []
    for path in sorted((root / "traces").rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            trace = json.loads(line)
            if trace["definition"] != name or trace["solution"] not in expected:
                continue
            evaluation = trace["evaluation"]
            status = evaluation["status"]
            seen[trace["solution"]][status] += 1
            if status != expected[trace["solution"]]:
                mismatches.append({"solution": trace["solution"], "uuid": trace["workload"]["uuid"],
                                   "axes": trace["workload"]["axes"], "status": status,
                                   "log": " ".join(evaluation.get("log", "").split())[-LOG_TAIL:]})
            elif status == "PASSED" and evaluation.get("performance"):
                latencies.append(evaluation["performance"]["latency_ms"])
    return {
        **info,
        "solutions": {solution: {"expected": expected[solution], "seen": dict(counts),
                                 "as_expected": counts.get(expected[solution], 0) == info["workloads"]
                                 and sum(counts.values()) == info["workloads"]}
                      for solution, counts in seen.items()},
        "perturbation": PERTURBATION,
        "mismatches": mismatches,
        "reference_median_latency_ms": statistics.median(latencies) if latencies else None,
    }


def as_expected(row: dict) -> bool:
    return row["exit_status"] == 0 and not row["mismatches"] and all(v["as_expected"] for v in row["solutions"].values())


def write_report(opts: argparse.Namespace, summary: dict[str, dict], wall: float, run_wall: float) -> dict:
    evaluations = sum(sum(v["seen"].values()) for row in summary.values() for v in row["solutions"].values())
    report = {
        "corpus": str(opts.corpus),
        "settings": {k: getattr(opts, k) for k in ("warmup_runs", "iterations", "num_trials", "timeout",
                                                   "max_workloads_per_definition")},
        "definitions": summary,
        "all_as_expected": all(as_expected(row) for row in summary.values()),
        "wall_s": round(wall, 1),
        "run_wall_s": round(run_wall, 1),
        "evaluations": evaluations,
        "evaluations_per_hour": round(evaluations * 3600 / run_wall) if run_wall > 0 else None,
    }
    if opts.out is not None:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(json.dumps(report, indent=2) + "\n")
    return report


CONFIG = """\
profile_baseline: false
op_type_config:
  moe:
    required_matched_ratio: 0.95
"""


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if not (opts.corpus / "definitions").is_dir():
        print(f"no dataset at {opts.corpus} (pass --corpus)", file=sys.stderr)
        return 2
    scratch = None
    if opts.workdir is None:
        scratch = tempfile.TemporaryDirectory(prefix="dataset-check-")
        root = Path(scratch.name) / "trace-set"
    else:
        root = opts.workdir
        shutil.rmtree(root, ignore_errors=True)
    try:
        start = time.perf_counter()
        prepared = prepare(root, opts.corpus, opts.definitions, opts.max_workloads_per_definition)
        (root / "config.yaml").write_text(CONFIG)
        print(f"prepared {sum(p['workloads'] for p in prepared.values())} workloads of {len(prepared)} "
              f"definitions in {time.perf_counter() - start:.1f} s under {root}", flush=True)
        code, run_wall = run_all(root, list(prepared), opts) if prepared else (0, 0.0)
        summary: dict[str, dict] = {}
        for name, info in prepared.items():
            summary[name] = {**summarize(root, name, info), "exit_status": code}
            row = summary[name]
            verdicts = "; ".join(f"{s.rsplit('__', 1)[1]}: {v['seen']}" for s, v in row["solutions"].items())
            print(f"[{'ok' if as_expected(row) else 'MISMATCH'}] {name}: {row['workloads']} workloads, {verdicts}",
                  flush=True)
        report = write_report(opts, summary, time.perf_counter() - start, run_wall)
        print(f"all as expected: {report['all_as_expected']}; {report['evaluations']} evaluations in "
              f"{report['run_wall_s']} s: {report['evaluations_per_hour']} per hour ({report['wall_s']} s in all)")
        return 0 if report["all_as_expected"] else 1
    finally:
        if scratch is not None:
            scratch.cleanup()


if __name__ == "__main__":
    sys.exit(main())

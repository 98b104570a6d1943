"""How much time the trace-set harness spends beyond the kernels it times, per runner.

Builds a synthetic trace set of small elementwise kernels (python and triton solutions, several workloads),
warms the build cache once, then runs each runner in a fresh process at default settings and reports:
- start-up: process start until the first worker is ready, minus the time to import torch and initialise the
  device in a bare process (measured here too);
- overhead per (solution, workload): wall time of the evaluations minus the time the kernels themselves account
  for (every timed, warm-up and correctness call of solutions and references, at their measured latency),
  divided by the number of evaluations;
- the wall time of a verdict for a solution that crashes (segfault) against one that passes;
- in each run, how many sessions' claims the judge did not believe (every solution here is honest, so any is a
  fault of the judge's clock).

    python benchmarks/harness_overhead.py [--solutions 4] [--workloads 8] [--runners persistent,isolated]
                                          [--repeat N] [--json out.json] [--profile DIR]

``--repeat N``: each runner is measured in N fresh processes one after another; the start-up and the overhead
are the medians, and every run's overhead is printed too: on one lent H100, five runs of the same code spread over
a fifth of their median (docs/measurements.md), so one run cannot tell a change of a few percent.

``--profile DIR``: the judge and worker processes of the persistent run write cProfile stats into DIR, and the
20 functions with most cumulative time in each are printed.
"""

from __future__ import annotations

import time

PROCESS_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

REFERENCE = "import torch\ndef run(x, y):\n    return x * 2 + y\n"
TORCH_DPS = "import torch\ndef run(x, y, out):\n    torch.add(y, x, alpha=2, out=out)\n"
TORCH_VALUE = "import torch\ndef run(x, y):\n    return torch.add(y, x, alpha=2)\n"
TRITON_TEMPLATE = '''import torch
import triton
import triton.language as tl


@triton.jit
def _scale_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * 2 + y, mask=mask)


def run(x, y, out):
    n = x.numel()
    _scale_add[(triton.cdiv(n, {block}),)](x, y, out, n, BLOCK={block})
'''
SEGFAULT = "import ctypes\ndef run(x, y):\n    ctypes.string_at(0)\n"
#: The definition the harness benchmarks time (here and in the scripts beside this one).
SCALE_ADD = {"name": "scale_add", "op_type": "elementwise", "axes": {"n": {"type": "var"}},
             "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "y": {"shape": ["n"], "dtype": "float32"}},
             "outputs": {"out": {"shape": ["n"], "dtype": "float32"}}, "reference": REFERENCE}
#: What a trace's log says of a claimed latency the judge did not believe (judge/schedule.py).
NOT_BELIEVED = "claim not believed"


def solution(name: str, language: str, source: str, dps: bool) -> dict:
    return {"name": name, "definition": "scale_add", "author": "bench",
            "spec": {"language": language, "target_hardware": ["cuda", "cpu"], "entry_point": "main.py::run",
                     "destination_passing_style": dps},
            "sources": [{"path": "main.py", "content": source}]}


def make_trace_set(root: Path, n_solutions: int, n_workloads: int, with_crash: bool) -> Path:
    pool = [solution("torch_dps", "python", TORCH_DPS, True), solution("torch_value", "python", TORCH_VALUE, False)]
    pool += [solution(f"triton_b{b}", "triton", TRITON_TEMPLATE.format(block=b), True) for b in (256, 512, 1024, 2048)]
    solutions = pool[:n_solutions]
    if with_crash:
        solutions.append(solution("segfault", "python", SEGFAULT, False))
    (root / "definitions").mkdir(parents=True)
    (root / "definitions" / "scale_add.json").write_text(json.dumps(SCALE_ADD))
    (root / "solutions").mkdir()
    for s in solutions:
        (root / "solutions" / f"{s['name']}.json").write_text(json.dumps(s))
    (root / "workloads").mkdir()
    lines = [json.dumps({"definition": "scale_add", "solution": None, "evaluation": None,
                         "workload": {"uuid": f"n{4096 * 2 ** i}", "axes": {"n": 4096 * 2 ** i}, "inputs": {}}})
             for i in range(n_workloads)]
    (root / "workloads" / "scale_add.jsonl").write_text("\n".join(lines) + "\n")
    return root


def torch_and_device_init_s() -> float:
    code = ("import time; t = time.perf_counter(); import torch\n"
            "if torch.cuda.is_available():\n    torch.zeros(1, device='cuda'); torch.cuda.synchronize()\n"
            "print(time.perf_counter() - t)")
    samples = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
               for _ in range(3)]
    return statistics.median(samples)


def child(runner_kind: str, root: str) -> None:
    """Runs in a fresh process: times start-up and every verdict."""
    from flashinfer_bench.bench.runner.server import start_worker_server

    start_worker_server()
    from flashinfer_bench.bench import Benchmark, BenchmarkConfig
    from flashinfer_bench.bench.runner import available_devices, isolated_runner, persistent_runner
    from flashinfer_bench.data import TraceSet

    trace_set = TraceSet.from_path(root)
    config = BenchmarkConfig.default()
    factory = isolated_runner if runner_kind == "isolated" else persistent_runner
    runner = factory(available_devices(), timeout_seconds=config.timeout_seconds)
    for slot in runner.slots:
        slot.environment()
    ready = time.perf_counter()
    stamps: list[tuple[float, str, str, float | None, float | None, int]] = []
    notes: list[str] = []

    class Stamp:
        def start(self, total: int) -> None: ...
        def finish(self) -> None: ...

        def advance(self, trace) -> None:
            perf = trace.evaluation.performance
            timed = (perf.extra or {}).get("timed_calls") if perf else None
            stamps.append((time.perf_counter(), trace.solution, trace.evaluation.status.value,
                           perf.latency_ms if perf else None, perf.reference_latency_ms if perf else None,
                           sum(timed) if timed else config.num_trials * config.iterations))
            notes.extend(line for line in trace.evaluation.log.splitlines() if line.startswith("timing:"))

    Benchmark(trace_set, config, runner_factory=lambda c: runner, progress=Stamp()).run_all(save_results=False)
    end = time.perf_counter()
    # Per evaluation: each trial's warm-up and correctness call, and the timed calls its trace says it made (more
    # than ``iterations`` where they were replayed).
    calls = config.num_trials * (config.warmup_runs + config.iterations + 1)
    kernel_ms = sum((config.num_trials * (config.warmup_runs + 1) + s[5]) * s[3] for s in stamps if s[3] is not None)
    references = {}
    for s in stamps:
        if s[4] is not None:
            references.setdefault(s[1], s[4])
    gaps, previous = [], ready
    for stamp in stamps:
        gaps.append((stamp[1], stamp[2], stamp[0] - previous))
        previous = stamp[0]
    by_solution: dict[str, list[float]] = {}
    for stamp in stamps:
        if stamp[3] is not None:
            by_solution.setdefault(stamp[1], []).append(stamp[3] * 1e3)
    print(json.dumps({"startup_s": ready - PROCESS_START, "evaluations": len(stamps), "wall_s": end - ready,
                      "latency_us_by_solution": {k: sorted(v) for k, v in by_solution.items()}, "notes": notes,
                      "solution_kernel_s": kernel_ms / 1e3, "gaps": gaps,
                      "reference_latency_ms": statistics.mean(references.values()) if references else None,
                      "calls_per_evaluation": calls}))


def gap_summary(gaps: list[list]) -> str:
    """The verdicts' wall times: all of them, and each solution's first (in the persistent runner, the first item of
    the solution's new worker: loading it, Triton's first launch) against its later ones."""
    first, later, seen = [], [], set()
    for name, gap in gaps:
        (later if name in seen else first).append(gap)
        seen.add(name)
    all_gaps = [gap for _, gap in gaps]
    line = (f"verdict wall (s): median {statistics.median(all_gaps):.3f}, mean {statistics.fmean(all_gaps):.3f}, "
            f"max {max(all_gaps):.3f}; each solution's first {' '.join(f'{g:.2f}' for g in first)}")
    return line + (f", its later ones median {statistics.median(later):.3f}" if later else "")


def overhead_per_evaluation_s(result: dict, workloads: int) -> float:
    """A run's wall time less what its kernels account for, per evaluation."""
    references = result["reference_latency_ms"] or 0.0
    # reference calls: once per workload for the baseline outputs and timing (the judge keeps baselines in both)
    reference_s = references * result["calls_per_evaluation"] / 1e3 * workloads
    return (result["wall_s"] - result["solution_kernel_s"] - reference_s) / result["evaluations"]


def run_child(kind: str, root: Path, profile_dir: str | None = None) -> dict:
    import os

    from flashinfer_bench.bench.process_setup import PROFILE_DIR_ENV

    env = {**os.environ, **({PROFILE_DIR_ENV: profile_dir} if profile_dir else {})}
    done = subprocess.run([sys.executable, __file__, "--child", kind, "--root", str(root)], capture_output=True,
                          text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{kind} run failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solutions", type=int, default=4)
    parser.add_argument("--workloads", type=int, default=8)
    parser.add_argument("--runners", default="persistent,isolated", help="comma-separated: persistent, isolated")
    parser.add_argument("--repeat", type=int, default=1, help="fresh runs per runner (medians are reported)")
    parser.add_argument("--json", help="write all numbers here")
    parser.add_argument("--profile", help="write the persistent run's judge and worker profiles here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.root)
        return
    base = Path(tempfile.mkdtemp(prefix="fib-overhead-"))
    clean = make_trace_set(base / "clean", args.solutions, args.workloads, with_crash=False)
    crashy = make_trace_set(base / "crashy", 1, args.workloads, with_crash=True)
    init_s = torch_and_device_init_s()
    run_child("persistent", clean)  # first compile of every solution, excluded from what follows
    report = {"torch_and_device_init_s": init_s}
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
        run_child("persistent", clean, args.profile)
        import pstats

        for path in sorted(Path(args.profile).glob("*.prof")):
            print(f"--- {path.name}")
            pstats.Stats(str(path)).sort_stats("cumulative").print_stats(20)
        return
    kinds = [kind for kind in ("persistent", "isolated") if kind in args.runners.split(",")]
    for kind in kinds:
        runs = [run_child(kind, clean) for _ in range(max(1, args.repeat))]
        overheads = [overhead_per_evaluation_s(run, args.workloads) for run in runs]
        result = runs[-1]
        report[kind] = {"startup_beyond_init_s": statistics.median(run["startup_s"] for run in runs) - init_s,
                        "overhead_per_evaluation_s": statistics.median(overheads),
                        "overhead_per_evaluation_s_each_run": overheads,
                        # every solution here is honest: each of these is an honest claim the judge did not believe
                        "claims_not_believed_each_run": [sum(NOT_BELIEVED in note for note in run["notes"])
                                                         for run in runs],
                        # the last run's details
                        **{k: result[k] for k in ("evaluations", "wall_s", "solution_kernel_s",
                                                  "latency_us_by_solution", "notes")},
                        "verdict_gaps_s": [[name, gap] for name, _, gap in result["gaps"]]}
        crash = run_child(kind, crashy)
        by_status: dict[str, list[float]] = {}
        for _, status, gap in crash["gaps"]:
            by_status.setdefault(status, []).append(gap)
        report[kind]["verdict_wall_s_by_status"] = {k: statistics.median(v) for k, v in by_status.items()}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    print(f"torch import + device init in a bare process: {init_s:.2f} s")
    print(f"{'runner':<11} {'start-up beyond init (s)':>25} {'overhead / evaluation (s)':>26} "
          f"{'pass verdict (s)':>17} {'crash verdict (s)':>18}")
    for kind in kinds:
        print(f"{kind}: latencies recorded (us), per solution over the workloads: " + "; ".join(
            f"{name} {' '.join(f'{v:.1f}' for v in values)}" for name, values in report[kind]["latency_us_by_solution"].items()))
        print(f"{kind}: {len(report[kind]['notes'])} timing notes" + "".join(f"\n  {n}" for n in report[kind]["notes"][:5]))
        print(f"{kind}: honest claims not believed, in each run: "
              + " ".join(str(n) for n in report[kind]["claims_not_believed_each_run"]))
        print(f"{kind}: {gap_summary(report[kind]['verdict_gaps_s'])}")
        each = report[kind]["overhead_per_evaluation_s_each_run"]
        if len(each) > 1:
            print(f"{kind}: overhead / evaluation (s) in each run: {' '.join(f'{v:.3f}' for v in each)} "
                  f"(median {statistics.median(each):.3f}, range {min(each):.3f}-{max(each):.3f})")
    for kind in kinds:
        r = report[kind]
        wall = r["verdict_wall_s_by_status"]
        print(f"{kind:<11} {r['startup_beyond_init_s']:>25.2f} {r['overhead_per_evaluation_s']:>26.3f} "
              f"{wall.get('PASSED', float('nan')):>17.3f} {wall.get('RUNTIME_ERROR', float('nan')):>18.3f}")


if __name__ == "__main__":
    main()

"""Does ``report compare`` tell a real 20% slow-down from run-to-run noise? (issue 13, on a GPU machine)

Runs the example trace set twice through the CLI at the default settings: once as it is (the base), once with
one solution made about 20% slower on purpose (the candidate). The slowed copy calls the original and then
queues a GPU spin sized, per workload, to a fifth of that workload's base latency (less the launch gap the
second kernel adds), so the slow-down is the GPU's and the same for every workload. Then
``flashinfer-bench report compare BASE CANDIDATE`` is run as a user would: every evaluation of the slowed
solution should be SLOWER, every other one SAME. Prints compare's table, then a line per verdict kind and the
slowed solution's measured ratios; exit status 1 when a verdict is not the expected one.

    python3 benchmarks/compare_check.py [--solution NAME] [--slowdown 0.2] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import torch

from flashinfer_bench.data import TraceSet
from flashinfer_bench.report.results import results

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "trace-set"
#: The GPU's own gap before a second, back-to-back kernel (launch processing), which the spin also adds.
LAUNCH_GAP_MS = 0.001

SLOWED = '''import torch

from {module} import {function} as _original

# GPU spin cycles per shape of the input {first!r}: a share of that workload's base latency (compare_check.py).
_CYCLES = {cycles!r}


def {function}(*args, **kwargs):
    out = _original(*args, **kwargs)
    first = kwargs[{first!r}] if {first!r} in kwargs else args[0]
    torch.cuda._sleep(_CYCLES[repr(tuple(first.shape))])
    return out
'''


def run_cli(*argv: str, log: Path) -> int:
    with log.open("w") as f:
        return subprocess.run([sys.executable, "-m", "flashinfer_bench.cli.main", *argv], stdout=f,
                              stderr=subprocess.STDOUT).returncode


def cycles_per_ms() -> float:
    """How many cycles torch.cuda._sleep spins per millisecond on this GPU, measured with CUDA events."""
    torch.cuda._sleep(1_000_000)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rates = []
    for cycles in (2_000_000, 4_000_000, 8_000_000):
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        rates.append(cycles / start.elapsed_time(end))
    return max(rates)


def slow_down(root: Path, solution_name: str, base: TraceSet, fraction: float) -> None:
    """Replace the solution's entry point in ``root`` with one that spins ``fraction`` of its base latency more."""
    trace_set = TraceSet.from_path(root, load_traces=False)
    solution = trace_set.solution(solution_name)
    if solution is None:
        raise SystemExit(f"--solution: no solution named {solution_name!r} in {root}")
    definition = trace_set.definitions[solution.definition]
    rate = cycles_per_ms()
    first, spec = next(iter(definition.inputs.items()))
    cycles: dict[str, int] = {}
    for trace in base.traces.get(solution.definition, []):
        if trace.solution != solution_name or trace.evaluation.status.value != "PASSED":
            continue
        shape = definition.shape_of(spec, definition.bind_axes(trace.workload.axes))
        extra_ms = max(0.0, fraction * trace.evaluation.performance.latency_ms - LAUNCH_GAP_MS)
        cycles[repr(shape)] = int(extra_ms * rate)
    file, function = solution.entry_file, solution.entry_function
    module = Path(file).stem
    sources = [s.model_copy(update={"path": f"{module}_original.py"}) if s.path == file else s
               for s in solution.sources]
    code = SLOWED.format(module=f"{module}_original", function=function, cycles=cycles, first=first)
    sources.append(solution.sources[0].model_copy(update={"path": file, "content": code}))
    slowed = solution.model_copy(update={"sources": sources})
    path = next(p for p in (root / "solutions").rglob("*.json") if json.loads(p.read_text())["name"] == solution_name)
    path.write_text(slowed.model_dump_json(indent=2) + "\n")
    print(f"{solution_name}: spin of {fraction:.0%} of the base latency per workload ({rate / 1e3:.0f} cycles/us): "
          f"{cycles}")


def explain(base_root: Path, candidate_root: Path, slowed: str) -> None:
    """Each solution's ratios (a shift shared by a solution's workloads shows here; † marks a latency the judge's
    clock set), and what each side recorded for every match whose verdict is not the expected one: latency,
    interval, trials."""
    from flashinfer_bench.report.compare import SAME, SLOWER, compare_runs
    from flashinfer_bench.report.sources import load_run

    base, candidate = load_run([base_root]), load_run([candidate_root])
    comparison = compare_runs(results(base.traces, {}), results(candidate.traces, {}))
    print(f"drift: sigma {comparison.drift_sigma:.4f} of log ratio; z {comparison.z:.2f}; {comparison.judge_bounded} "
          "match(es) with a latency the judge's clock set (†: SAME whatever the ratio, left out of the drift)")
    by_solution: dict[str, list[str]] = {}
    for match in comparison.matches:
        if match.ratio is not None:
            by_solution.setdefault(match.base.solution, []).append(
                f"{match.ratio:.3f}{'†' if match.judge_bounded else ''}")
    for solution, ratios in sorted(by_solution.items()):
        print(f"  {solution}: {' '.join(ratios)}")
    for match in comparison.matches:
        if match.verdict is None or match.verdict == (SLOWER if match.base.solution == slowed else SAME):
            continue
        print(f"{match.verdict} {match.base.solution} {dict(match.base.axes)} ratio {match.ratio:.3f} band "
              f"{match.band[0]:.3f}-{match.band[1]:.3f}")
        for side, result in (("base", match.base), ("candidate", match.candidate)):
            spread = result.spread
            print(f"  {side}: {result.latency_ms:.5f} ms, interval {spread.latency_ci95_ms}, trials "
                  f"{spread.trial_latencies_ms}, {spread.samples} samples, {spread.timing_method}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solution", default="moe_fp8_block_scale_ds_routing_topk2_ng4_kg2_e8_h128_i128_triton")
    parser.add_argument("--slowdown", type=float, default=0.2)
    parser.add_argument("--out", type=Path, default=None, help="folder for the two trace sets and the logs")
    opts = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("compare_check.py needs a CUDA GPU: its slow-down is a GPU spin")
    out = opts.out or Path(tempfile.mkdtemp(prefix="compare-check-"))
    out.mkdir(parents=True, exist_ok=True)
    base_root, candidate_root = out / "base", out / "candidate"
    for root in (base_root, candidate_root):
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns("traces"))
    status = run_cli("run", "--local", str(base_root), log=out / "base.log")
    print(f"base run: exit {status}")
    base = TraceSet.from_path(base_root)
    slow_down(candidate_root, opts.solution, base, opts.slowdown)
    status = run_cli("run", "--local", str(candidate_root), log=out / "candidate.log")
    print(f"candidate run: exit {status}")
    status = run_cli("report", "compare", str(base_root), str(candidate_root), log=out / "compare.log")
    report = (out / "compare.log").read_text()
    print(report)
    rows = [line for line in report.splitlines() if line.startswith("|") or "│" in line]
    verdicts: Counter[tuple[bool, str]] = Counter()
    for line in rows:
        for verdict in ("SAME", "FASTER", "SLOWER"):
            if verdict in line:
                verdicts[(opts.solution in line, verdict)] += 1
    for (slowed, verdict), n in sorted(verdicts.items()):
        print(f"{'slowed solution' if slowed else 'unchanged      '}: {verdict} {n}")
    expected = {(True, "SLOWER"), (False, "SAME")}
    wrong = sum(n for key, n in verdicts.items() if key not in expected)
    explain(base_root, candidate_root, opts.solution)
    print(f"report compare: exit {status}; {wrong} evaluation(s) not as expected")
    return 1 if wrong or not verdicts[(True, "SLOWER")] else 0


if __name__ == "__main__":
    sys.exit(main())

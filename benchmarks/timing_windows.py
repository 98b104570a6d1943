"""Per timing session of one solution, in-process: its claim, the judge's rounds, and the timer's lead-in.

Builds the named solution of a trace set (the example set by default) and times it on each of its definition's
workloads in turn (as one persistent worker runs them), in ``--sessions`` sessions each, as an evaluation does
(``LocalSolution``: the harness in this process, a fresh seed per call, the judge's clock), and prints for each
session the claimed median, each round's calls and wall time per call (warm-up rounds first), every lengthening
of the lead-in (host lateness and the extra lead-in it led to), and whether the judge believed the claim. For host-bound solutions, whose windows hold far more
than their kernels (docs/security.md).

    python3 benchmarks/timing_windows.py SOLUTION [--trace-set DIR] [--sessions 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile

import torch

from flashinfer_bench.bench.config import BenchmarkConfig
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.judge.local import LocalSolution
from flashinfer_bench.bench.judge.schedule import TimedSchedule
from flashinfer_bench.bench.seeds import new_run_secret
from flashinfer_bench.compile import build_solution
from flashinfer_bench.data import TraceSet
from flashinfer_bench.timing import api


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("solution")
    parser.add_argument("--trace-set", default="examples/trace-set")
    parser.add_argument("--sessions", type=int, default=3, help="per workload")
    args = parser.parse_args()

    lengthened: list[tuple[int, int]] = []
    lengthen = api._CudaSampler._lengthen_lead_in

    def recorded(sampler: api._CudaSampler, late_ns: int) -> None:
        lengthen(sampler, late_ns)
        lengthened.append((late_ns, sampler.extra_lead_in_ns))

    api._CudaSampler._lengthen_lead_in = recorded
    trace_set = TraceSet.from_path(args.trace_set)
    solution = trace_set.solution(args.solution)
    if solution is None:
        raise SystemExit(f"no solution named {args.solution!r} in {args.trace_set}")
    definition = trace_set.definitions[solution.definition]
    device = "cuda:0" if torch.cuda.is_available() else "cpu"
    cfg = BenchmarkConfig.default().resolve(definition)
    runnable = build_solution(solution, device=device, cache_dir=tempfile.mkdtemp(), scratch_dir=tempfile.mkdtemp())
    secret = new_run_secret()
    for entry in trace_set.workloads[solution.definition]:
        workload = entry.workload
        ctx = EvaluationContext(definition, workload, cfg, device, args.trace_set, secret)
        handle = LocalSolution(ctx, runnable)
        floor = handle.clock_floor()
        print(f"{args.solution} on {dict(workload.axes)}, {device}; clock floor {floor}")
        for session in range(args.sessions):
            lengthened.clear()
            schedule = TimedSchedule(ctx, ("timed", session), cfg.warmup_runs, cfg.iterations, 0.125,
                                     handle.host_watch())
            claim = handle.time(cfg.iterations, cfg.warmup_runs, schedule)
            for _ in schedule.picked_inputs():  # the judge's own draw times, as judge_picked takes them
                pass
            judged = schedule.latencies(claim, floor)[0]
            rounds = " ".join(f"{r.calls}x{r.wall_ms / r.calls:.3f}" for r in schedule.rounds)
            print(f"  session {session}: claim {statistics.median(claim.samples_ms):.4f} ms; rounds (calls x ms "
                  f"per call) {rounds}; lead-in lengthened (late "
                  f"us, extra us) {[(round(a / 1e3, 1), round(b / 1e3, 1)) for a, b in lengthened]}; recorded "
                  f"{judged.latency_ms:.4f} ms{'' if judged.samples_ms else ' (claim not believed)'}")

if __name__ == "__main__":
    main()

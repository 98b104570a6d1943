"""Where the time of one evaluation goes: in-process, and across the judge/worker boundary.

Runs the default evaluator's correctness check and timing sessions for ``scale_add`` on the first device (the
GPU when there is one) at the default settings (the reference timed once, at the first evaluation, as a run times it
once per workload), and prints the wall time per evaluation:
- in-process: the harness run here by ``LocalSolution`` (then the functions that took most of it, cProfile: by
  cumulative and by own time);
- remote: this process as the judge, a real worker process (forked from the forkserver, sandboxed) running the
  solution, through ``RemoteSolution`` exactly as a run does, with the judge's time split by step;
- remote with an unsandboxed worker, which prints where its own time went when it stops;
and the round trip of the judge-worker channel between two bare processes. ``--ship-only`` ships the picked
calls' outputs without judging them.

    python benchmarks/timed_call_costs.py [--n 65536] [--evaluations 5] [--top 30] [--check-probability P]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from collections.abc import Callable

from harness_overhead import SCALE_ADD

from flashinfer_bench.bench.calling import ValueReturning, reference_callee
from flashinfer_bench.bench.config import BenchmarkConfig
from flashinfer_bench.bench.evaluators import DefaultEvaluator
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.judge.local import LocalSolution
from flashinfer_bench.bench.judge.solution import SolutionHandle
from flashinfer_bench.bench.runner import available_devices
from flashinfer_bench.bench.seeds import new_run_secret
from flashinfer_bench.bench.wire.parent_judge import ReferenceTiming
from flashinfer_bench.data import Definition, Workload

#: The reference's timing by workload, taken at a workload's first evaluation: a run times the reference once per
#: workload, for all its solutions (and sizes a replayed session's first round on it, judge/replayed.py).
REFERENCE_TIMINGS: dict[str, ReferenceTiming | None] = {}


def evaluate(ctx: EvaluationContext, solution: SolutionHandle | None = None) -> None:
    reference = reference_callee(ctx.definition)
    if ctx.workload.uuid not in REFERENCE_TIMINGS:
        REFERENCE_TIMINGS[ctx.workload.uuid] = DefaultEvaluator.build_baseline(ctx, reference).reference_timing
    baseline = DefaultEvaluator.build_baseline(ctx, reference, profile=False)
    baseline.reference_timing = REFERENCE_TIMINGS[ctx.workload.uuid]
    solution = solution or LocalSolution(ctx, ValueReturning(lambda x, y: x * 2 + y))
    assert DefaultEvaluator.check_correctness(ctx, solution, baseline).passed
    DefaultEvaluator.eval_performance(ctx, solution, baseline)


SPENT: dict[str, float] = {}


def clocked(owner: object, name: str, record: Callable[[int, int], None]) -> None:
    """Replace ``owner.name`` by a wrapper that hands ``record`` the start and end (``perf_counter_ns``) of
    every call."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter_ns()
        try:
            return original(*args, **kwargs)
        finally:
            record(start, time.perf_counter_ns())

    setattr(owner, name, wrapper)


def timed_method(owner: type, name: str) -> None:
    """Add the wall time of every call of ``owner.name`` to SPENT[name]."""

    def add(start: int, end: int) -> None:
        SPENT[name] = SPENT.get(name, 0.0) + (end - start) / 1e9

    clocked(owner, name, add)


def unsandboxed_worker(conn, device: str, scratch) -> None:
    """A worker as worker/main.py's, without entering the sandbox (to see what the sandbox costs), that
    prints where its time went when it stops."""
    from flashinfer_bench.bench.harness import Harness
    from flashinfer_bench.bench.slot import Slot
    from flashinfer_bench.bench.wire.judge_worker import JudgeChannel
    from flashinfer_bench.bench.worker.main import WireExchange, Worker

    for owner, name in ((Harness, "_ship"), (Harness, "inputs"), (Harness, "call"), (Slot, "write"),
                        (WireExchange, "more"), (WireExchange, "ran"), (WireExchange, "shipped")):
        timed_method(owner, name)
    try:
        Worker(JudgeChannel(conn), device, scratch, scratch).serve("none (benchmark)")
    except EOFError:
        pass
    print("  worker (not sandboxed), in all: " + ", ".join(f"{name} {seconds * 1e3:.1f} ms"
                                                     for name, seconds in SPENT.items()), flush=True)


class UnsandboxedWorkerProcess:
    def __init__(self, device: str) -> None:
        import tempfile
        from pathlib import Path

        from flashinfer_bench.bench.runner.server import process_context

        context = process_context()
        self.judge_end, worker_end = context.Pipe()
        scratch = Path(tempfile.mkdtemp(prefix="fib-bench-scratch-"))
        self.process = context.Process(target=unsandboxed_worker, args=(worker_end, device, scratch), daemon=True)
        self.process.start()
        worker_end.close()

    def handover(self):
        return self.judge_end

    def kill(self) -> None:
        self.process.join(timeout=5)
        self.process.kill()
        self.process.join()


def remote_ms_per_evaluation(ctx: EvaluationContext, evaluations: int, sandboxed: bool = True,
                             reload: bool = False) -> float:
    """This process judges; a real worker (sandboxed, or not) runs the solution: the definition's reference, its
    ``run`` returning its outputs. ``reload``: the solution is loaded again before each evaluation, as a run loads it
    for each item (the worker's harness, its graphs among them, is made again); else once, and the later
    evaluations reuse the first's graphs."""
    import tempfile
    from pathlib import Path

    from flashinfer_bench.bench.judge.calibration import calibrate
    from flashinfer_bench.bench.judge.remote import RemoteSolution
    from flashinfer_bench.bench.judge.slots import SlotKeeper
    from flashinfer_bench.bench.runner.process import WorkerProcess
    from flashinfer_bench.bench.runner.process_pool import worker_policy
    from flashinfer_bench.bench.wire.judge_worker import Built, Load, Ready, Stop, WorkerChannel
    from flashinfer_bench.data import Solution

    solution = Solution.model_validate({
        "name": "s", "definition": ctx.definition.name, "author": "bench",
        "spec": {"language": "python", "target_hardware": ["cpu", "cuda"], "entry_point": "main.py::run",
                 "destination_passing_style": False},
        "sources": [{"path": "main.py", "content": ctx.definition.reference}],
    })
    cache = Path(tempfile.mkdtemp(prefix="fib-bench-cache-"))
    worker = (WorkerProcess(ctx.device, cache, worker_policy(())) if sandboxed
              else UnsandboxedWorkerProcess(ctx.device))
    channel = WorkerChannel(worker.handover())
    slots = SlotKeeper(channel)

    def load(calibration: bool) -> None:
        log = os.open(os.devnull, os.O_WRONLY)
        channel.send(Load(calibration=calibration, definition=ctx.definition.model_dump_json(),
                          solution=solution.model_dump_json(), workload=ctx.workload.model_dump_json(),
                          trace_set_root=None))
        channel.send_fd(log)
        os.close(log)
        channel.receive(Built)

    try:
        print(f"worker: {channel.receive(Ready).isolation}")
        load(calibration=True)
        floor = calibrate(ctx, RemoteSolution(ctx, channel, slots))
        print(f"  clock floor: {floor}")
        load(calibration=False)
        remote = RemoteSolution(ctx, channel, slots, floor)
        evaluate(ctx, remote)  # first calls
        start = time.perf_counter()
        for _ in range(evaluations):
            if reload:
                load(calibration=False)
                remote = RemoteSolution(ctx, channel, slots, floor)
            evaluate(ctx, remote)
        return (time.perf_counter() - start) / evaluations * 1e3
    finally:
        channel.send(Stop())
        worker.kill()


def _echo(conn) -> None:
    from flashinfer_bench.bench.wire.judge_worker import JudgeChannel, Next, Ran

    channel = JudgeChannel(conn)
    while isinstance(channel.receive(), Next):
        channel.send(Ran(count=1))


def channel_round_trip_us(trips: int = 2000) -> float:
    """One request and answer over the judge-worker channel (wire/judge_worker.py) between two processes."""
    import multiprocessing

    from flashinfer_bench.bench.wire.judge_worker import Next, Ran, Stop, WorkerChannel

    context = multiprocessing.get_context("fork")
    mine, theirs = context.Pipe()
    echo = context.Process(target=_echo, args=(theirs,))
    echo.start()
    channel = WorkerChannel(mine)
    start = time.perf_counter()
    for _ in range(trips):
        channel.send(Next(seeds=[12345678901234]))
        channel.receive(Ran)
    elapsed = time.perf_counter() - start
    channel.send(Stop())
    echo.join()
    return elapsed / trips * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=65536)
    parser.add_argument("--evaluations", type=int, default=5)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--check-probability", type=float, help="extra.timed_check_probability (default: its default)")
    parser.add_argument("--ship-only", action="store_true",
                        help="picked calls' outputs are shipped to the judge but not judged (what shipping costs)")
    args = parser.parse_args()
    if args.ship_only:
        from flashinfer_bench.bench.evaluators.evaluator import TimedCheck

        TimedCheck.check = lambda self, inputs, outputs: None
    definition = Definition.model_validate(SCALE_ADD)
    extra = {} if args.check_probability is None else {"timed_check_probability": args.check_probability}
    config = BenchmarkConfig.default(extra=extra).resolve(definition)
    ctx = EvaluationContext(definition, Workload(uuid="w", axes={"n": args.n}, inputs={}), config,
                            available_devices()[0], None, new_run_secret())
    evaluate(ctx)  # first calls, CUPTI set-up
    start = time.perf_counter()
    for _ in range(args.evaluations):
        evaluate(ctx)
    calls = config.num_trials * (config.warmup_runs + config.iterations + 1)
    print(f"device {ctx.device}: {(time.perf_counter() - start) / args.evaluations * 1e3:.1f} ms per evaluation "
          f"({calls} solution calls)")
    print(f"judge-worker channel: {channel_round_trip_us():.1f} us per round trip")
    from flashinfer_bench.bench.judge.remote import RemoteSolution
    from flashinfer_bench.bench.judge.schedule import TimedSchedule

    for owner, name in ((TimedSchedule, "judge_picked"), (RemoteSolution, "time"), (RemoteSolution, "call")):
        timed_method(owner, name)
    print(f"remote: {remote_ms_per_evaluation(ctx, args.evaluations):.1f} ms per evaluation")
    print("  of which, per evaluation: " + ", ".join(
        f"{name} {seconds / (args.evaluations + 1) * 1e3:.1f} ms" for name, seconds in SPENT.items()))
    print(f"remote, worker not sandboxed: {remote_ms_per_evaluation(ctx, args.evaluations, False):.1f} ms per evaluation")
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    for _ in range(args.evaluations):
        evaluate(ctx)
    profile.disable()
    per = (time.perf_counter() - start) / args.evaluations
    print(f"device {ctx.device}: {per * 1e3:.1f} ms per evaluation under the profiler")
    pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)
    pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()

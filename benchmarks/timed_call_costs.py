"""Where the time of one evaluation goes when the harness runs in-process (no judge/worker channel).

Runs the default evaluator's correctness check and timing sessions for ``scale_add`` through ``LocalSolution``
on the first device (the GPU when there is one) at the default settings, and prints the wall time per
evaluation and the functions that took most of it (cProfile, cumulative). Compare its per-evaluation time
with ``harness_overhead.py``'s to see what the process boundary costs.

    python benchmarks/timed_call_costs.py [--n 65536] [--evaluations 5] [--top 30] [--check-probability P]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from flashinfer_bench.bench.config import BenchmarkConfig
from flashinfer_bench.bench.evaluators import DefaultEvaluator
from flashinfer_bench.bench.evaluators.calling import ValueReturning, reference_callee
from flashinfer_bench.bench.evaluators.context import EvaluationContext, new_run_secret
from flashinfer_bench.bench.evaluators.solution import LocalSolution
from flashinfer_bench.bench.runner import available_devices
from flashinfer_bench.data import Definition, Workload

SCALE_ADD = {
    "name": "scale_add", "op_type": "elementwise", "axes": {"n": {"type": "var"}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "y": {"shape": ["n"], "dtype": "float32"}},
    "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
    "reference": "import torch\ndef run(x, y):\n    return x * 2 + y\n",
}


def evaluate(ctx: EvaluationContext) -> None:
    reference = reference_callee(ctx.definition)
    baseline = DefaultEvaluator.build_baseline(ctx, reference, profile=False)
    solution = LocalSolution(ctx, ValueReturning(lambda x, y: x * 2 + y))
    assert DefaultEvaluator.check_correctness(ctx, solution, baseline).passed
    DefaultEvaluator.eval_performance(ctx, solution, baseline)


def _echo(conn) -> None:
    from flashinfer_bench.bench.runner.wire import JudgeChannel

    channel = JudgeChannel(conn)
    while channel.receive()["op"] == "next":
        channel.send(op="done", index=0)


def channel_round_trip_us(trips: int = 2000) -> float:
    """One request and answer over the judge-worker channel (runner/wire.py) between two processes."""
    import multiprocessing

    from flashinfer_bench.bench.runner.wire import WorkerChannel

    context = multiprocessing.get_context("fork")
    mine, theirs = context.Pipe()
    echo = context.Process(target=_echo, args=(theirs,))
    echo.start()
    channel = WorkerChannel(mine)
    start = time.perf_counter()
    for _ in range(trips):
        channel.send(op="next", seed=12345678901234)
        channel.receive("done")
    elapsed = time.perf_counter() - start
    channel.send(op="stop")
    echo.join()
    return elapsed / trips * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=65536)
    parser.add_argument("--evaluations", type=int, default=5)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--check-probability", type=float, help="extra.timed_check_probability (default: its default)")
    args = parser.parse_args()
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
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    for _ in range(args.evaluations):
        evaluate(ctx)
    profile.disable()
    per = (time.perf_counter() - start) / args.evaluations
    print(f"device {ctx.device}: {per * 1e3:.1f} ms per evaluation under the profiler")
    pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()

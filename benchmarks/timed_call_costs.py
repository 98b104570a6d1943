"""Where the time of one evaluation goes when the harness runs in-process (no judge/worker channel).

Runs the default evaluator's correctness check and timing sessions for ``scale_add`` through ``LocalSolution``
on the first device (the GPU when there is one) at the default settings, and prints the wall time per
evaluation and the functions that took most of it (cProfile, cumulative). Compare its per-evaluation time
with ``harness_overhead.py``'s to see what the process boundary costs.

    python benchmarks/timed_call_costs.py [--n 65536] [--evaluations 5] [--top 30]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=65536)
    parser.add_argument("--evaluations", type=int, default=5)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    definition = Definition.model_validate(SCALE_ADD)
    config = BenchmarkConfig.default().resolve(definition)
    ctx = EvaluationContext(definition, Workload(uuid="w", axes={"n": args.n}, inputs={}), config,
                            available_devices()[0], None, new_run_secret())
    evaluate(ctx)  # first calls, CUPTI set-up
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    for _ in range(args.evaluations):
        evaluate(ctx)
    profile.disable()
    per = (time.perf_counter() - start) / args.evaluations
    calls = config.num_trials * (config.warmup_runs + config.iterations + 1)
    print(f"device {ctx.device}: {per * 1e3:.1f} ms per evaluation ({calls} solution calls), profiled")
    pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()

"""The harness's own CPU time per evaluation, in one process: the judge's evaluator and the worker's timing loop
(``LocalSolution``: the same harness, without the channel), on tiny CPU kernels at the default settings.

Process CPU time, not wall time: on a host shared with other work it still compares two versions of the code
taken one after the other (run each a few times). What it leaves out: the channel between the judge and the
worker, the GPU's own costs (launches, synchronisations, CUPTI), the reference's timing, the clock floor's
calibration. ``harness_overhead.py`` measures the whole on a GPU.

    python benchmarks/harness_cpu_costs.py [--workloads 4] [--repeat 3] [--profile out.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import statistics
import time


def scale_add(x, y, out):
    import torch

    torch.add(y, x, alpha=2, out=out)


def scale_add_value(x, y):
    import torch

    return torch.add(y, x, alpha=2)


DEFINITION = {"name": "scale_add", "op_type": "elementwise", "axes": {"n": {"type": "var"}},
              "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "y": {"shape": ["n"], "dtype": "float32"}},
              "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
              "reference": "import torch\ndef run(x, y):\n    return x * 2 + y\n"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=4, help="n = 256, 512, ... (one baseline each)")
    parser.add_argument("--repeat", type=int, default=3, help="evaluations of each solution per workload")
    parser.add_argument("--profile", help="write cProfile stats of the evaluations here")
    args = parser.parse_args()

    import torch

    from flashinfer_bench.bench.calling import ValueReturning, reference_callee
    from flashinfer_bench.bench.config import BenchmarkConfig
    from flashinfer_bench.bench.evaluators import resolve_evaluator
    from flashinfer_bench.bench.judge.clock import ClockFloor
    from flashinfer_bench.bench.judge.context import EvaluationContext
    from flashinfer_bench.bench.judge.local import LocalSolution
    from flashinfer_bench.data import Definition, Workload

    torch.set_num_threads(1)
    definition = Definition.model_validate(DEFINITION)
    config = BenchmarkConfig.default().resolve(definition)
    evaluator = resolve_evaluator(definition)
    profile = cProfile.Profile() if args.profile else None
    cpu_ms, wall_ms = [], []
    for index in range(args.workloads):
        n = 256 * (index + 1)
        workload = Workload(uuid=f"n{n}", axes={"n": n}, inputs={})
        ctx = EvaluationContext(definition, workload, config, "cpu", None, secret=12345)
        baseline = evaluator.build_baseline(ctx, reference_callee(definition), profile=False)
        for _ in range(args.repeat):
            for fn, dps in ((scale_add, True), (scale_add_value, False)):
                solution = LocalSolution(ctx, ValueReturning(fn, destination_passing_style=dps))
                solution._floor = ClockFloor(0.0, 0.0)  # calibration left out: once per device in a run
                cpu, wall = time.process_time(), time.perf_counter()
                if profile is not None:
                    profile.enable()
                if not evaluator.check_correctness(ctx, solution, baseline).passed:
                    raise SystemExit(f"{fn.__name__} failed its correctness check on {workload.uuid}")
                evaluator.eval_performance(ctx, solution, baseline)
                if profile is not None:
                    profile.disable()
                cpu_ms.append((time.process_time() - cpu) * 1e3)
                wall_ms.append((time.perf_counter() - wall) * 1e3)
    calls = config.num_trials * (1 + config.warmup_runs + config.iterations)
    print(f"{len(cpu_ms)} evaluations, {calls} calls each: CPU time per evaluation median "
          f"{statistics.median(cpu_ms):.2f} ms (min {min(cpu_ms):.2f}); wall median {statistics.median(wall_ms):.2f} ms")
    if profile is not None:
        profile.dump_stats(args.profile)


if __name__ == "__main__":
    main()

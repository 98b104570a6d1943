"""What tracing a long call of many launches with CUPTI costs: a definition's reference at its largest workload,
called untraced (host clock, its work waited for), then timed by ``bench_gpu_time_detailed`` one dry run and two
samples at a time, with CUPTI (its dry run traced to count the call's GPU activities, as the harness's calls made
one at a time once were) and with CUDA events, each followed by an untraced call.

The default is the real dataset's mla_paged_prefill reference, a Python loop of about 200,000 launches a call at
its largest workload (bench/harness.py ``EVENTS_FROM_CALL_MS`` says why such calls are timed with events). Needs a
trace set whose workloads have their blobs, such as the one ``dataset_check.py --workdir`` keeps, and a GPU.

    python3 benchmarks/dataset_check.py --max-workloads-per-definition 2 --workdir /tmp/dsw \
        --definitions mla_paged_prefill_causal_h16_ckv512_kpe64_ps1
    python3 benchmarks/traced_call_costs.py /tmp/dsw
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

DEFAULT_DEFINITION = "mla_paged_prefill_causal_h16_ckv512_kpe64_ps1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace_set", type=Path, help="a trace set with the definition's workloads and their blobs")
    parser.add_argument("--definition", default=DEFAULT_DEFINITION)
    args = parser.parse_args()

    import torch

    from flashinfer_bench.bench.calling import invoke, reference_callee
    from flashinfer_bench.bench.inputs import InputPlan
    from flashinfer_bench.data import TraceSet
    from flashinfer_bench.testing import bench_gpu_time_detailed

    trace_set = TraceSet.from_path(args.trace_set)
    definition = trace_set.definitions[args.definition]
    workload = max(trace_set.workloads[args.definition],
                   key=lambda trace: math.prod(max(int(v), 1) for v in trace.workload.axes.values())).workload
    device = "cuda:0"
    inputs = InputPlan(definition, workload, device, str(args.trace_set)).draw(1)
    reference = reference_callee(definition)

    def call() -> None:
        invoke(reference, definition, workload, inputs, device)

    def untraced(label: str) -> None:
        start = time.perf_counter()
        call()
        torch.cuda.synchronize(device)
        print(f"{label}: {time.perf_counter() - start:.3f} s", flush=True)

    print(f"{args.definition}, workload axes {workload.axes}")
    untraced("first call, untraced")
    untraced("untraced")
    for label, options in (("CUPTI", {"cupti_most_activities": 16}), ("CUDA events", {"enable_cupti": False}),
                           ("CUPTI", {"cupti_most_activities": 16})):
        start = time.perf_counter()
        result = bench_gpu_time_detailed(call, num_iters=2, dry_run_iters=1, device=device, **options)
        print(f"timer asked for {label}, 1 dry run and 2 samples: {time.perf_counter() - start:.3f} s, timed with "
              f"{result.method}, samples {', '.join(f'{s / 1e3:.3f}' for s in result.samples_ms)} s", flush=True)
        untraced("untraced, after")


if __name__ == "__main__":
    main()

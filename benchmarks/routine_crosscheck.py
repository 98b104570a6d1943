"""GPU cross-check (not a pytest module): time the very callables the routine CLI builds with FlashInfer's own
``flashinfer.testing.bench_gpu_time`` and with ours, in one process, for the reference cases of
shared/device/README.md. Usage: python3 benchmarks/routine_crosscheck.py
"""

from __future__ import annotations

import statistics

import flashinfer
import flashinfer.testing
import torch

from flashinfer_bench.routines import attention
from flashinfer_bench.routines.args import parse_case
from flashinfer_bench.testing import bench_gpu_time_detailed

CASES = [
    ("decode", "--routine BatchDecodeWithPagedKVCacheWrapper --page_size 16 --batch_size 32 --s_kv 8192 "
               "--num_qo_heads 64 --num_kv_heads 8 --head_dim_qk 128 --head_dim_vo 128", ("fa2", "fa2_tc"), True),
    ("prefill", "--routine BatchPrefillWithRaggedKVCacheWrapper --batch_size 16 --s_qo 1024 --s_kv 1024 "
                "--num_qo_heads 32 --num_kv_heads 32 --head_dim_qk 128 --head_dim_vo 128 --causal",
     ("fa2", "fa3"), False),
]


def main() -> None:
    dev = torch.device("cuda:0")
    print(f"{'case':8} {'backend':7} {'flashinfer_ms':>13} {'ours_ms':>9} {'diff_%':>7} method")
    for name, line, backends, graph in CASES:
        args = parse_case(line.split())
        inp = attention.make_inputs(args, dev)
        for backend in backends:
            fn = attention.flashinfer_backend(flashinfer, backend, inp, args, use_cuda_graph=graph)
            fn()
            theirs = statistics.median(flashinfer.testing.bench_gpu_time(
                fn, enable_cupti=True, dry_run_iters=5, repeat_iters=30, cold_l2_cache=True, use_cuda_graph=graph))
            ours = bench_gpu_time_detailed(fn, num_iters=30, dry_run_iters=5, cold_l2_cache=True,
                                           use_cuda_graph=graph, device=dev)
            diff = 100 * (ours.median_ms - theirs) / theirs
            print(f"{name:8} {backend:7} {theirs:13.4f} {ours.median_ms:9.4f} {diff:7.2f} {ours.method}")


if __name__ == "__main__":
    main()

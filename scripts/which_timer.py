"""Prints the timer flashinfer-bench uses on this machine, found by timing a tiny kernel the way the evaluators
time solutions: CUPTI's kernel records when cupti-python is installed and works, CUDA events otherwise, the host
clock on the CPU."""

from __future__ import annotations

import logging
import sys

import torch

from flashinfer_bench.testing import bench_gpu_time_detailed
from flashinfer_bench.timing.cupti_timer import load_cupti
from flashinfer_bench.timing.notices import LOGGER_NAME

DESCRIPTIONS = {"cupti": "CUPTI kernel records", "cuda_events": "CUDA events", "host_clock": "the host clock"}


def main() -> int:
    logging.getLogger(LOGGER_NAME).setLevel(logging.ERROR)  # a 3-sample timing is noisy; only its method matters
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.zeros(1024, device=device)
    result = bench_gpu_time_detailed(x.add_, args=(1,), num_iters=3, dry_run_iters=1, device=device)
    print(f"timer: {result.method} ({DESCRIPTIONS.get(result.method, result.method)}) on {result.device}")
    if device == "cuda" and result.method != "cupti":
        why = "cupti-python is not installed" if load_cupti() is None else "CUPTI could not trace"
        print(f"  {why}: kernel times include launch gaps; `pip install -e '.[cupti]'` (or its wheel through "
              "PIP_FIND_LINKS) makes them CUPTI's", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

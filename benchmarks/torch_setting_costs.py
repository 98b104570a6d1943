"""What each torch setting a worker restores after an item costs to read and to write, first and second time
in a fresh process (see flashinfer_bench/bench/worker/torch_state.py).

    python benchmarks/torch_setting_costs.py
"""

from __future__ import annotations

import time

import torch

from flashinfer_bench.bench.worker.torch_state import SETTINGS

NAMES = ["default dtype", "grad mode", "deterministic algorithms", "matmul TF32", "cuDNN TF32"]


def ms(action, *args) -> float:
    start = time.perf_counter()
    action(*args)
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    if torch.cuda.is_available():
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
    print(f"{'setting':26}{'read ms':>9}{'write ms (1st)':>16}{'write ms (2nd)':>16}")
    for name, (read, write) in zip(NAMES, SETTINGS, strict=True):
        value = read()
        read_ms = ms(read)
        first, second = ms(write, value), ms(write, value)
        print(f"{name:26}{read_ms:9.3f}{first:16.3f}{second:16.3f}")


if __name__ == "__main__":
    main()

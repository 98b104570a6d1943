"""What the judge's read of a correctness call's outputs costs (judge/solution.py ``read_call_result``): the outputs
a worker wrote into a fresh buffer of the judge's stock (its pages allocated, judge/slots.py, but not yet mapped in
the judge's own view of it), read onto the device straight from that shared, pageable memory, or through the
judge's page-locked arena (judge/arena.py: a threaded host copy, then a copy the link serves at its own rate).

    python benchmarks/output_reads.py [--sizes-mb 1 16 128 448] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from flashinfer_bench.bench.judge.arena import give_back, lease
from flashinfer_bench.bench.slot import Slot, TensorLayout


def read_ms(nbytes: int, through_arena: bool) -> float:
    """One read of ``nbytes`` the worker's view wrote, by a fresh judge's view, onto the device."""
    judge = Slot.create(nbytes, populate=True)
    worker = Slot.open(os.dup(judge.fd), nbytes)
    try:
        worker.write(0, [torch.full((nbytes,), 7, dtype=torch.uint8, device="cuda")])
        torch.cuda.synchronize()
        layouts = [TensorLayout("outputs", torch.uint8, (nbytes,))]
        start = time.perf_counter()
        arena = lease() if through_arena else None
        try:
            [read], _ = judge.read(0, layouts, "cuda", arena.take if arena is not None else None)
        finally:
            if arena is not None:
                give_back(arena)
        torch.cuda.synchronize()
        elapsed = (time.perf_counter() - start) * 1e3
        assert int(read[-1]) == 7
        return elapsed
    finally:
        worker.close()
        judge.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=[1, 16, 128, 448])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("output_reads.py needs a GPU")
    read_ms(1 << 20, True)  # the context, the arena's first chunk, the copy kernels
    read_ms(1 << 20, False)
    for size_mb in args.sizes_mb:
        for through_arena in (False, True, False, True):
            samples = [read_ms(size_mb << 20, through_arena) for _ in range(args.repeat)]
            print(f"{size_mb:5d} MB  {'through the arena' if through_arena else 'straight from the buffer':25s} "
                  f"median {statistics.median(samples):8.2f} ms ({' '.join(f'{s:.2f}' for s in samples)})")


if __name__ == "__main__":
    main()

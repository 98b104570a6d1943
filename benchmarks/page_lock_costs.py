"""What page-locked host memory costs on this machine: the worker's output buffer is shared memory it page-locks
(``bench/slot.py``), the judge's kept shipments are torch's page-locked allocations (``bench/judge/arena.py``).

For each size: locking fresh shared memory (``cudaHostRegister``: its pages are faulted in too), locking the same
pages again once resident, faulting fresh pages in alone (``MAP_POPULATE``), a second mapping of resident shared
memory locked; copying that many bytes from the device into locked, resident pageable and fresh pageable memory;
copying them back to the device from resident pageable and locked memory (as a judge reads a worker's outputs);
and ``torch.empty(pin_memory=True)`` twice (the second from torch's cache, unless something emptied it).

    python benchmarks/page_lock_costs.py [--sizes-mb 64 256 512]
"""

from __future__ import annotations

import argparse
import mmap
import os
import time
from collections.abc import Callable

import torch


def ms(step: Callable[[], object]) -> float:
    begun = time.perf_counter()
    step()
    return (time.perf_counter() - begun) * 1e3


def locked_ms(view: torch.Tensor) -> float:
    """Locking ``view``'s pages (unlocked again after)."""
    cudart = torch.cuda.cudart()
    elapsed = ms(lambda: cudart.cudaHostRegister(view.data_ptr(), view.numel(), 0))
    cudart.cudaHostUnregister(view.data_ptr())
    return elapsed


def measure(size: int) -> dict[str, float]:
    cudart = torch.cuda.cudart()
    figures: dict[str, float] = {}
    fresh = torch.frombuffer(mmap.mmap(-1, size), dtype=torch.uint8)
    figures["lock fresh shared memory"] = locked_ms(fresh)
    figures["lock it again, resident"] = locked_ms(fresh)
    figures["fault fresh pages in (MAP_POPULATE)"] = ms(
        lambda: mmap.mmap(-1, size, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE))
    fd = os.memfd_create("page-lock-costs")
    os.ftruncate(fd, size)
    torch.frombuffer(mmap.mmap(fd, size), dtype=torch.uint8).fill_(0)
    second = torch.frombuffer(mmap.mmap(fd, size), dtype=torch.uint8)
    os.close(fd)
    figures["lock a second mapping of resident shared memory"] = locked_ms(second)
    source = torch.empty(size, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    cudart.cudaHostRegister(fresh.data_ptr(), size, 0)
    figures["copy from the device into locked memory"] = ms(lambda: fresh.copy_(source))
    cudart.cudaHostUnregister(fresh.data_ptr())
    figures["copy into resident pageable memory"] = ms(lambda: fresh.copy_(source))
    figures["copy to the device from resident pageable memory"] = ms(lambda: source.copy_(fresh))
    cudart.cudaHostRegister(fresh.data_ptr(), size, 0)
    figures["copy to the device from locked memory"] = ms(lambda: source.copy_(fresh))
    cudart.cudaHostUnregister(fresh.data_ptr())
    figures["copy into fresh pageable memory"] = ms(
        lambda: torch.frombuffer(mmap.mmap(-1, size), dtype=torch.uint8).copy_(source))
    figures["torch.empty(pin_memory=True)"] = ms(lambda: torch.empty(size, dtype=torch.uint8, pin_memory=True))
    figures["torch.empty(pin_memory=True) again"] = ms(lambda: torch.empty(size, dtype=torch.uint8, pin_memory=True))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=[64, 256, 512])
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("page_lock_costs.py needs a GPU")
    torch.zeros(1, device="cuda")  # the context, not in the first figure
    for size_mb in args.sizes_mb:
        for what, figure in measure(size_mb << 20).items():
            print(f"{size_mb:5d} MB  {what:50s} {figure:8.1f} ms")


if __name__ == "__main__":
    main()

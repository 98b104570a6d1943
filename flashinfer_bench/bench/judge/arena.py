"""Host memory the judge keeps a session's shipped outputs in until it has judged them (judge/schedule.py), reused
from one session to the next.

A copy into memory no one has touched yet pays a page fault per page. Whether a fresh allocation is such memory
depends on what the allocator kept of earlier ones: on this project's 2-core virtual machine, copying a session's
8 picked outputs of 4 MB took 23-32 ms in some processes and 3.8-4.7 ms in others, into an arena 4.1-6.3 ms in
all (benchmarks/shipment_copies.py, docs/measurements.md). Copying shipped outputs out took the judge 5.8 s of CPU
over the real dataset on an H100 host.

On a GPU host its memory is page-locked, so that the judge's copies of picked outputs to the device (judge/picked.py)
are queued without waiting and go straight from it, not through a staging buffer of the driver's; a correctness
call's outputs go to the device through it too (judge/solution.py ``read_call_result``).

An arena is leased for a session (``lease``) and handed back once its outputs are judged (``give_back``); nothing
may hold a view of it after that, as the next session writes over it (nor may a copy from it still be queued).
"""

from __future__ import annotations

import threading

import torch

#: Every take starts at a multiple of this (a view of any dtype needs its element size).
ALIGN = 64
#: An arena grows by chunks of at least this many bytes.
CHUNK_BYTES = 64 << 20
#: What the arenas handed back keep in all, at most; the rest goes back to the system. Enough for a session's picks
#: of the real dataset's largest outputs (448 MB a call): page-locking them afresh for every session cost a judge
#: about as much as copying into them (0.71 s against 1.0 s under cProfile, docs/measurements.md).
KEPT_BYTES_MOST = 1 << 30
#: A correctness call's outputs and returned inputs go through an arena up to this many bytes (judge/solution.py
#: ``read_call_result``): a larger read would page-lock fresh memory the arena could not keep, read after read.
READ_MOST_BYTES = KEPT_BYTES_MOST // 2


class HostArena:
    """Bytes handed out one after the other (``take``) from chunks kept across sessions (``reset``)."""

    def __init__(self) -> None:
        self.chunks: list[torch.Tensor] = []
        self.chunk = self.used = 0

    def take(self, nbytes: int) -> torch.Tensor:
        """``nbytes`` of uint8, valid until the arena is reset."""
        size = -(-nbytes // ALIGN) * ALIGN
        while self.chunk < len(self.chunks) and self.used + size > self.chunks[self.chunk].numel():
            self.chunk, self.used = self.chunk + 1, 0
        if self.chunk == len(self.chunks):
            self.chunks.append(torch.empty(max(CHUNK_BYTES, size), dtype=torch.uint8,
                                           pin_memory=torch.cuda.is_available()))
        taken = self.chunks[self.chunk][self.used:self.used + nbytes]
        self.used += size
        return taken

    @property
    def nbytes(self) -> int:
        return sum(chunk.numel() for chunk in self.chunks)

    def reset(self, keep_bytes: int) -> None:
        """Everything taken is free again; chunks beyond ``keep_bytes`` in all go back to the system."""
        kept, total = [], 0
        for chunk in self.chunks:
            if total + chunk.numel() <= keep_bytes:
                kept.append(chunk)
                total += chunk.numel()
        self.chunks, self.chunk, self.used = kept, 0, 0


_free: list[HostArena] = []
_lock = threading.Lock()


def lease() -> HostArena:
    """An arena no session is using (one handed back, with its memory already touched, where there is one)."""
    with _lock:
        return _free.pop() if _free else HostArena()


def give_back(arena: HostArena) -> None:
    """The session's outputs are judged: the arena serves the next session."""
    with _lock:
        arena.reset(max(KEPT_BYTES_MOST - sum(a.nbytes for a in _free), 0))
        if arena.chunks:
            _free.append(arena)

"""The buffers a worker's outputs come through (slot.py): one per worker at a time, replaced by a larger one when a
call needs more room (``SlotKeeper``), each made ahead in the background on a GPU's judge (``SlotStock``).

A fresh buffer's pages cost whoever touches them first, and a worker page-locks its buffer as far as its copies
from the device reach (locking 512 MB of fresh shared memory took 230-259 ms on an H100 host, the same pages once
resident 24 ms). Over the public dataset, 31 of its workers spent 5.6 s in ``cudaHostRegister``
(benchmarks/dataset_profile.py). A buffer is never handed to a second worker (a retired worker may still run, and
could write into it or read what the judge picked), so the judge allocates the next one's pages while the current
worker runs: the dataset's items other than mla_paged_prefill took 1.3, 1.7, 3.2 and 2.7 s less in all (of 28-37 s)
than with buffers made when asked for, and once 0.2 s more, in five alternated runs on two H100s
(docs/measurements.md).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from flashinfer_bench.bench.slot import Slot
from flashinfer_bench.bench.wire.judge_worker import NewSlot, WorkerChannel

#: The stock holds one buffer, as large as the largest handed out so far, at most this many bytes.
STOCKED_MOST_BYTES = 1 << 30
#: The smallest buffer a worker is given.
LEAST_SLOT_BYTES = 4096


class SlotStock:
    """One buffer made ahead, in a thread of its own, for the next worker (or the next larger buffer of this one).
    Disabled, every buffer is made when it is asked for (a CPU's judge: its workers lock no pages, and the
    thread would take one of a small host's cores from the calls it times)."""

    def __init__(self, enabled: bool) -> None:
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fib-slot-stock") if enabled else None
        #: The largest buffer handed out so far, in bytes.
        self.largest = 0
        self.stocked: Future[Slot] | None = None
        self.stocked_size = 0

    def take(self, size: int) -> Slot:
        """A buffer of at least ``size`` bytes that no worker has mapped: the stocked one where it is that large
        (once it is made), else a new one; then the stock is made again, as large as the largest taken so far
        (``STOCKED_MOST_BYTES`` at most)."""
        slot = None
        if self.stocked is not None and self.stocked_size >= size:
            stocked, self.stocked = self.stocked, None
            try:
                slot = stocked.result()
            except Exception:  # noqa: BLE001 - the stock could not be made: a new buffer instead (or its error)
                pass
        if slot is None:
            slot = Slot.create(size)
        self.largest = max(self.largest, slot.size)
        self._restock()
        return slot

    def _restock(self) -> None:
        if self.executor is None:
            return
        size = min(self.largest, STOCKED_MOST_BYTES)
        if self.stocked is not None:
            if self.stocked_size >= size:
                return
            self._discard(self.stocked)
        self.stocked, self.stocked_size = self.executor.submit(Slot.create, size, populate=True), size

    @staticmethod
    def _discard(stocked: Future[Slot]) -> None:
        def close(done: Future[Slot]) -> None:
            if done.exception() is None:
                done.result().close()

        stocked.add_done_callback(close)

    def close(self) -> None:
        if self.stocked is not None:
            self._discard(self.stocked)
            self.stocked = None
        if self.executor is not None:
            self.executor.shutdown(wait=True)
            self.executor = None


class SlotKeeper:
    """The output buffer a worker maps, replaced by a larger one (at least twice the size) when a call needs more
    room; new buffers come from ``stock``."""

    def __init__(self, channel: WorkerChannel, stock: SlotStock | None = None) -> None:
        self.channel = channel
        self.stock = stock or SlotStock(enabled=False)
        self.slot: Slot | None = None

    def at_least(self, size: int) -> Slot:
        if self.slot is None or self.slot.size < size:
            previous = 0
            if self.slot is not None:
                previous = self.slot.size
                self.slot.close()
            self.slot = self.stock.take(max(size, 2 * previous, LEAST_SLOT_BYTES))
            assert self.slot.fd is not None
            self.channel.send(NewSlot(size=self.slot.size))
            self.channel.send_fd(self.slot.fd)
        return self.slot

    def close(self) -> None:
        if self.slot is not None:
            self.slot.close()
            self.slot = None

"""The workers' output buffers (judge/slots.py): made ahead in the background, never handed to a second worker,
grown when a call needs more room; real memfds, mapped by a real second process where sharing is checked."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from flashinfer_bench.bench.judge import slots as slots_module
from flashinfer_bench.bench.judge.slots import LEAST_SLOT_BYTES, SlotKeeper, SlotStock
from flashinfer_bench.bench.slot import Slot
from flashinfer_bench.bench.wire.judge_worker import NewSlot


def inode(slot: Slot) -> int:
    assert slot.fd is not None
    return os.fstat(slot.fd).st_ino


def test_a_populated_buffer_is_all_zeros_and_is_sealed_at_its_size():
    slot = Slot.create(1 << 20, populate=True)
    try:
        assert slot.size == 1 << 20
        assert not any(slot.buffer[:])
        assert slot.fd is not None
        if hasattr(os, "memfd_create"):
            with pytest.raises(OSError):
                os.ftruncate(slot.fd, 2 << 20)
    finally:
        slot.close()


def test_the_stocked_buffer_is_the_next_one_taken_and_is_never_one_handed_out_before():
    stock = SlotStock(enabled=True)
    try:
        first = stock.take(3 << 20)
        assert first.size == 3 << 20 and stock.stocked is not None and stock.stocked_size == 3 << 20
        stocked = stock.stocked.result()
        second = stock.take(1 << 20)  # smaller than the stock: the stock, as large as the largest so far
        assert second is stocked and second.size == 3 << 20
        assert inode(second) != inode(first)
        assert stock.stocked is not None and stock.stocked.result() is not second  # made again, a new one
        third = stock.take(5 << 20)  # larger than the stock: made now, and the stock made again that large
        assert third.size == 5 << 20 and inode(third) not in (inode(first), inode(second))
        assert stock.stocked_size == 5 << 20
        for slot in (first, second, third):
            slot.close()
    finally:
        stock.close()


def test_the_stock_is_at_most_its_cap_and_a_disabled_stock_makes_each_buffer_when_asked(monkeypatch):
    monkeypatch.setattr(slots_module, "STOCKED_MOST_BYTES", 1 << 20)
    stock = SlotStock(enabled=True)
    try:
        stock.take(4 << 20).close()
        assert stock.stocked_size == 1 << 20
        assert stock.take(2 << 20).size == 2 << 20  # the capped stock is too small for it
    finally:
        stock.close()
    disabled = SlotStock(enabled=False)
    taken = disabled.take(1 << 20)
    assert taken.size == 1 << 20 and disabled.stocked is None
    taken.close()
    disabled.close()


class Channel:
    """What SlotKeeper sends a worker: the messages and the buffers' descriptors, in order."""

    def __init__(self) -> None:
        self.sent: list[object] = []

    def send(self, message: object) -> None:
        self.sent.append(message)

    def send_fd(self, fd: int) -> None:
        self.sent.append(os.fstat(fd).st_ino)


def test_the_keeper_hands_each_worker_its_own_buffer_and_a_larger_one_only_when_a_call_needs_it():
    stock = SlotStock(enabled=True)
    try:
        first_worker, second_worker = Channel(), Channel()
        keeper = SlotKeeper(first_worker, stock)
        small = keeper.at_least(100)
        assert small.size == LEAST_SLOT_BYTES
        assert keeper.at_least(LEAST_SLOT_BYTES) is small
        large = keeper.at_least(LEAST_SLOT_BYTES + 1)
        assert large.size == 2 * LEAST_SLOT_BYTES
        assert first_worker.sent == [NewSlot(size=LEAST_SLOT_BYTES), first_worker.sent[1],
                                     NewSlot(size=2 * LEAST_SLOT_BYTES), inode(large)]
        keeper.close()
        next_keeper = SlotKeeper(second_worker, stock)
        taken = next_keeper.at_least(100)  # the stock, as large as the first worker's largest
        assert taken.size == 2 * LEAST_SLOT_BYTES
        assert second_worker.sent[1] not in first_worker.sent
        next_keeper.close()
    finally:
        stock.close()


#: A second process maps the buffer it is given, reads what the judge wrote and answers in it.
READ_BACK = """
import mmap, sys
fd, size = int(sys.argv[1]), int(sys.argv[2])
buffer = mmap.mmap(fd, size)
sys.stdout.write(bytes(buffer[:8]).decode())
buffer[:8] = b"answered"
"""


def test_a_stocked_buffer_is_shared_with_the_process_that_maps_it():
    stock = SlotStock(enabled=True)
    try:
        stock.take(LEAST_SLOT_BYTES).close()
        slot = stock.take(LEAST_SLOT_BYTES)
        slot.buffer[:8] = b"question"
        assert slot.fd is not None
        done = subprocess.run([sys.executable, "-c", READ_BACK, str(slot.fd), str(slot.size)], pass_fds=(slot.fd,),
                              capture_output=True, text=True, timeout=60, check=True)
        assert done.stdout == "question"
        assert bytes(slot.buffer[:8]) == b"answered"
        slot.close()
    finally:
        stock.close()

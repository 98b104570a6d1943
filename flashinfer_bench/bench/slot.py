"""The only way tensors leave a solution's process: raw bytes in a buffer, read back by the judge as the types
and shapes the definition declares.

The judge creates the buffer (a sealed memfd on Linux: the other side can neither shrink nor grow it, so reading
it never faults) and decides how to interpret every byte. Nothing the solution's process sends is unpickled or
taken as a tensor object: a lying ``torch.Tensor`` subclass, a patched comparison or a forged header cannot
reach the judge, only bytes, which are then compared with the reference's outputs.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import torch

from flashinfer_bench.data import Definition, DType, EvaluationStatus, Workload


@dataclass(frozen=True)
class TensorLayout:
    name: str
    dtype: torch.dtype
    shape: tuple[int, ...]

    @property
    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        count = 1
        for extent in self.shape:
            count *= extent
        return count * self.element_size


def output_layouts(definition: Definition, workload: Workload) -> list[TensorLayout]:
    """The outputs a call must return, in definition order."""
    return _layouts(definition, workload, definition.outputs.items())


def input_layouts(definition: Definition, workload: Workload, names: Iterable[str]) -> list[TensorLayout]:
    wanted = set(names)
    return _layouts(definition, workload, [(n, s) for n, s in definition.inputs.items() if n in wanted])


def _layouts(definition: Definition, workload: Workload, specs: Iterable) -> list[TensorLayout]:
    """Raises ValueError for a tensor whose dtype FlashInfer left open (``unknown``): its bytes have no type to be
    read as (the parent refuses such outputs as a workload problem before any run)."""
    specs = list(specs)
    open_types = [f"'{name}' ({spec.dtype.value})" for name, spec in specs if spec.is_open]
    if open_types:
        raise ValueError(f"{definition.name}: {', '.join(open_types)} name no element type, so the judge cannot "
                         "read their bytes")
    axes = definition.bind_axes(workload.axes)
    return [TensorLayout(name, DType(spec.dtype).to_torch(), definition.shape_of(spec, axes) or ())
            for name, spec in specs]


def total_bytes(layouts: Sequence[TensorLayout]) -> int:
    return sum(layout.nbytes for layout in layouts)


def raw_bytes(tensor: torch.Tensor) -> torch.Tensor:
    """A tensor's bytes, flat (a copy only where it is not contiguous)."""
    return tensor.detach().contiguous().reshape(-1).view(torch.uint8)


def from_bytes(raw: torch.Tensor, layouts: Sequence[TensorLayout]) -> list[torch.Tensor]:
    """The tensors ``layouts`` describe, one after the other in the flat bytes ``raw``: views of them, or copies
    where a tensor does not start at a multiple of its element size (after an output of an odd number of bytes, or
    in a ring's later rows), which a view of another type needs."""
    tensors, offset = [], 0
    for layout in layouts:
        piece = raw[offset:offset + layout.nbytes]
        if piece.storage_offset() % layout.element_size:
            piece = piece.clone()
        tensors.append(piece.view(layout.dtype).reshape(layout.shape))
        offset += layout.nbytes
    return tensors


#: A host copy of at least this many bytes (``host_copy``) is split among up to ``COPY_THREADS`` threads (at most four,
#: a quarter of the cores the process may run on), pieces of at least ``SPLIT_COPY_BYTES`` each. On an H100 host one
#: thread read a shipment of 16 outputs of 2 MB in 4.5 ms (7 GB/s), four in 1.3 ms (benchmarks/shipment_copies.py);
#: a worker timing 2 MB outputs then waited 8-10 ms a session for the judge's answers, against 12-18 ms
#: (benchmarks/worker_phases.py, docs/measurements.md).
SPLIT_COPY_BYTES = 1 << 20
COPY_THREADS = max(1, min(4, (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                              else os.cpu_count() or 1) // 4))
#: The threads that copy pieces beside the caller, by the process that made them (a forked child has none of them).
_copiers: dict[int, ThreadPoolExecutor] = {}
_copiers_lock = threading.Lock()


def host_copy(dst: int, src: int, count: int, threads: int | None = None) -> None:
    """``memmove`` of ``count`` bytes between host addresses; a large copy in pieces on ``threads`` threads at once
    (``COPY_THREADS``; ctypes lets go of the GIL around each piece). Threads, not torch's copy: no OpenMP pool is
    woken, whose threads spin on after their work while a solution's calls are being timed; these sleep."""
    threads = min(threads or COPY_THREADS, max(1, count // SPLIT_COPY_BYTES))
    if threads <= 1:
        ctypes.memmove(dst, src, count)
        return
    with _copiers_lock:
        pool = _copiers.get(os.getpid())
        if pool is None:
            pool = _copiers[os.getpid()] = ThreadPoolExecutor(max_workers=max(threads, COPY_THREADS) - 1,
                                                              thread_name_prefix="fib-copy")
    piece = -(-count // threads)
    pieces = [(start, min(piece, count - start)) for start in range(0, count, piece)]
    running = [pool.submit(ctypes.memmove, dst + start, src + start, size) for start, size in pieces[1:]]
    start, size = pieces[0]
    ctypes.memmove(dst + start, src + start, size)
    for future in running:
        future.result()


#: A worker page-locks its buffer from the start as far as copies from the device reach into it, this much at
#: once and then in steps that at least double (``Slot.pin``): locking a whole buffer, sized for a round's worth of
#: outputs, cost a worker 14 ms per buffer on an H100 (0.13 s over one solution's 8 workloads), while its
#: shipments fill only the few calls the judge picks.
FIRST_PINNED_BYTES = 1 << 20


class Slot:
    """A byte buffer of fixed size; both processes map the same pages.

    Bytes move in and out by ``memmove`` on the host (no torch kernel, so no OpenMP threads are woken; the judge's
    large reads in pieces on threads of its own, ``host_copy``), and from a GPU by one copy straight into the pages
    once the worker has page-locked them (``pin``)."""

    def __init__(self, buffer: mmap.mmap | bytearray, fd: int | None = None) -> None:
        self.buffer = buffer
        self.fd = fd
        #: Every byte of the buffer as a tensor (holds an export of the buffer until ``close``).
        self.bytes = torch.frombuffer(buffer, dtype=torch.uint8) if len(buffer) else torch.empty(0, dtype=torch.uint8)
        #: The bytes from the start that are page-locked (``pin``).
        self.pinned_bytes = 0

    @property
    def size(self) -> int:
        return len(self.buffer)

    @classmethod
    def create(cls, size: int, *, populate: bool = False) -> Slot:
        """A new shared buffer (its fd is what the other process maps). ``populate``: its pages are allocated here
        and now (zeroed, as any fresh page), not by whoever touches them first (judge/slots.py). They are not mapped
        in advance (``MAP_POPULATE``): that holds the process's memory map while it runs, and a judge making a
        stock of 0.5-1 GB that way stalled its own allocations, 14 s over the public dataset against 1.2 s."""
        size = max(size, 1)
        if hasattr(os, "memfd_create"):
            import fcntl

            fd = os.memfd_create("fib-slot", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(fd, size)
            if populate:
                with contextlib.suppress(OSError):  # out of shared memory: the pages come as they are touched
                    os.posix_fallocate(fd, 0, size)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        else:  # no memfd: an unlinked temporary file serves, without the seals
            import tempfile

            handle = tempfile.TemporaryFile()
            fd = os.dup(handle.fileno())
            handle.close()
            os.ftruncate(fd, size)
        return cls(mmap.mmap(fd, size), fd)

    @classmethod
    def open(cls, fd: int, size: int) -> Slot:
        """Map a buffer received from the judge (the fd is closed: the mapping keeps the pages)."""
        try:
            return cls(mmap.mmap(fd, size))
        finally:
            os.close(fd)

    def pin(self) -> bool:
        """Page-lock the buffer for the CUDA driver, so that device-to-host copies land in it directly: its first
        ``FIRST_PINNED_BYTES`` now, and further as copies reach beyond them (``write``). False where that is not
        possible (no CUDA, or the driver refused), and copies then go through pageable memory."""
        if self.pinned_bytes or not self.size or not torch.cuda.is_available():
            return self.pinned_bytes > 0
        return self._pin_through(min(self.size, FIRST_PINNED_BYTES))

    def reserve(self, nbytes: int) -> None:
        """Where the buffer is being page-locked (``pin``), lock its first ``nbytes`` now, ahead of the copies that
        will need them (the timing loop does so before its first call: not while a shipment is clocked)."""
        if 0 < self.pinned_bytes < min(nbytes, self.size):
            self._pin_through(nbytes)

    def _pin_through(self, end: int) -> bool:
        """Page-locked from the start through ``end`` at least, and at least twice what was (one registration: a
        copy must not span two); False, and nothing locked, where the driver refuses."""
        size = min(self.size, max(end, 2 * self.pinned_bytes))
        cudart = torch.cuda.cudart()
        if self.pinned_bytes:
            cudart.cudaHostUnregister(self.bytes.data_ptr())
        self.pinned_bytes = size if int(cudart.cudaHostRegister(self.bytes.data_ptr(), size, 0)) == 0 else 0
        return self.pinned_bytes > 0

    def close(self) -> None:
        if self.pinned_bytes:
            torch.cuda.cudart().cudaHostUnregister(self.bytes.data_ptr())
            self.pinned_bytes = 0
        self.bytes = torch.empty(0, dtype=torch.uint8)  # lets go of the buffer's export
        if isinstance(self.buffer, mmap.mmap):
            self.buffer.close()
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def write(self, offset: int, tensors: Sequence[torch.Tensor]) -> int:
        """Raw bytes of ``tensors`` from ``offset`` on; returns the offset after them."""
        for tensor in tensors:
            raw = raw_bytes(tensor)
            count = raw.numel()
            if count:
                if offset + count > self.size:
                    raise ValueError("the outputs do not fit the judge's buffer")
                if raw.device.type == "cpu":
                    ctypes.memmove(self.bytes.data_ptr() + offset, raw.data_ptr(), count)
                else:
                    if 0 < self.pinned_bytes < offset + count:
                        self._pin_through(offset + count)
                    self.bytes[offset:offset + count].copy_(raw)
            offset += count
        return offset

    def read(self, offset: int, layouts: Sequence[TensorLayout], device: str,
             into: Callable[[int], torch.Tensor] | None = None) -> tuple[list[torch.Tensor], int]:
        """Private copies of the tensors ``layouts`` describe, from ``offset`` on, and the offset after them;
        ``into``: where the bytes go on the host (given their count, host uint8). Without ``into``, copies on a
        GPU ``device`` go straight from the buffer (no host copy first: a 448 MB output of the real dataset, copied
        into fresh memory, cost the judge its page faults as well as the copy), on the CPU into fresh memory."""
        count = total_bytes(layouts)
        if offset + count > self.size:
            raise ValueError("the judge's buffer is smaller than the outputs it should hold")
        if into is None and torch.device(device).type != "cpu":
            raw = self.bytes[offset:offset + count]
        else:
            raw = into(count) if into is not None else torch.empty(count, dtype=torch.uint8)
            if count:
                host_copy(raw.data_ptr(), self.bytes.data_ptr() + offset, count)
        return [tensor.to(device) for tensor in from_bytes(raw, layouts)], offset + count


def output_mismatch(outputs: Sequence[Any], expected: Sequence[TensorLayout],
                    device: str) -> tuple[EvaluationStatus, str] | None:
    """INCORRECT_SHAPE or INCORRECT_DTYPE with a message, or None when every output is a tensor of the
    definition's shape and dtype on the evaluation's device (the device is part of an output's type: a CPU
    result in a CUDA run is not the kernel's result)."""
    where = torch.device(device)
    for out, spec in zip(outputs, expected, strict=True):
        if not isinstance(out, torch.Tensor):
            return EvaluationStatus.INCORRECT_SHAPE, f"output '{spec.name}' is {type(out).__name__}, expected a tensor"
        if tuple(out.shape) != spec.shape:
            return EvaluationStatus.INCORRECT_SHAPE, f"output '{spec.name}' has shape {list(out.shape)}, expected {list(spec.shape)}"
        if out.dtype != spec.dtype:
            return EvaluationStatus.INCORRECT_DTYPE, f"output '{spec.name}' has dtype {out.dtype}, expected {spec.dtype}"
        if out.device.type != where.type or (where.index is not None and out.device.index != where.index):
            return EvaluationStatus.INCORRECT_DTYPE, f"output '{spec.name}' is on {out.device}, expected {where}"
    return None

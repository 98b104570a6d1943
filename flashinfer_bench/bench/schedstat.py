"""A thread's scheduler times from /proc (``/proc/<pid>/task/<tid>/schedstat``: ns running, ns ready to run but
waiting for a CPU): how the judge tells a busy host's delays from a call's work (judge/clock.py HostWatch), and
what the worker reports of its own calling thread as it answers (wire/judge_worker.py ``Sent``)."""

from __future__ import annotations

import os
import weakref


def read_schedstat(path: str) -> tuple[int, int] | None:
    """(running, waiting) ns of one thread; None where the kernel does not keep it."""
    try:
        with open(path) as handle:
            return _fields(handle.read())
    except OSError:
        return None


def _fields(text: str | bytes) -> tuple[int, int] | None:
    try:
        fields = text.split()
        return int(fields[0]), int(fields[1])
    except (ValueError, IndexError):
        return None


class KeptSchedstat:
    """One thread's schedstat read again and again through one descriptor (``os.pread`` at offset 0 makes the
    kernel write the file afresh): a few microseconds a reading, where opening the file costs ~20 (the judge
    reads two at every window's end). The descriptor is closed when this object goes."""

    def __init__(self, path: str) -> None:
        try:
            self.fd: int | None = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self.fd = None
        else:
            weakref.finalize(self, os.close, self.fd)

    def read(self) -> tuple[int, int] | None:
        """(running, waiting) ns; None where the kernel does not keep it or the thread is gone."""
        if self.fd is None:
            return None
        try:
            return _fields(os.pread(self.fd, 256, 0))
        except OSError:
            return None

"""The judge's own clock: what the harness costs per call (``ClockFloor``) and what copying outputs costs here.

These are the known costs the judge subtracts from a call's wall time before comparing what is left with a timing
claim (judge/schedule.py), and what a busy host adds to it (``HostWatch``).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from dataclasses import dataclass

import torch

from flashinfer_bench.bench.schedstat import KeptSchedstat, read_schedstat
from flashinfer_bench.bench.wire.judge_worker import Sent


@dataclass(frozen=True)
class ClockFloor:
    """What the harness costs per call when the call does nothing (see ``calibrate``), in ms."""

    per_call_ms: float
    """A call's share of its round's window, less the judge's time to draw its inputs."""
    ship_ms: float
    """Outputs asked for to outputs shipped, per shipment, less the judge's time to copy the calls' bytes: mostly
    the exchange itself, which a shipment of one call pays as much as one of many."""
    replay_round_ms: float | None = None
    """A replayed round's window less its replay (judge/replayed.py ``exchange_floor``): the exchange with the judge
    and the waits around it; None where no round was replayed."""


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


#: ``copy_out_ms`` times a copy of at most this many bytes and scales it to larger ones: a copy from the device
#: this large goes at the link's full rate already, while timing copies of the real dataset's outputs whole (up to
#: 448 MB, three times, into fresh page-locked memory) cost a judge 42 ms per size under cProfile.
COPY_TIMED_BYTES = 16 << 20


def copy_out_ms(nbytes: int, device: str) -> float:
    """This process's time to copy ``nbytes`` from ``device`` into page-locked host memory, as a worker ships
    outputs (on the CPU: a memory copy): the copy of ``COPY_TIMED_BYTES`` at most timed (``_timed_copy_ms``),
    scaled to ``nbytes``."""
    if nbytes == 0:
        return 0.0
    timed = min(nbytes, COPY_TIMED_BYTES)
    return _timed_copy_ms(timed, device) * nbytes / timed


@functools.cache
def _timed_copy_ms(nbytes: int, device: str) -> float:
    """The best of three copies of ``nbytes`` from ``device`` into page-locked host memory; timed once per size and
    device (every output of ``COPY_TIMED_BYTES`` or more shares one)."""
    source = torch.empty(nbytes, dtype=torch.uint8, device=device)
    target = torch.empty(nbytes, dtype=torch.uint8, pin_memory=device.startswith("cuda"))
    best = float("inf")
    for _ in range(3):
        synchronize(device)
        start = time.perf_counter()
        target.copy_(source)
        synchronize(device)
        best = min(best, (time.perf_counter() - start) * 1e3)
    return best


#: The share of a session's wall time the judge's correction for a busy host may take out at most: beyond it the
#: host is so busy that what is left of the clock means little, and the correction stops.
MAX_BUSY_FRACTION = 0.9


@dataclass(frozen=True)
class HostReading:
    """Cumulative scheduler times (ns) at one moment (``at``, ``time.perf_counter``)."""

    at: float
    #: The worker's calling thread (its main thread), ready to run but waiting for a CPU.
    worker_waiting_ns: int
    #: The worker's process, running: the larger of its live threads' times (schedstat, ns) and its own CPU time
    #: (/proc/<pid>/stat, which keeps the threads that have ended, in clock ticks).
    worker_running_ns: int
    #: The judge's own thread, ready to run but waiting for a CPU.
    judge_waiting_ns: int


def _cpu_time_ns(pid: int) -> int:
    """The user and system time of ``pid``'s whole process, threads that have ended included (0 if unreadable)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0


class HostWatch:
    """How much a busy host held up a timing session: the time the thread that makes the solution's calls, and the
    judge's own thread, were ready to run but waited for a CPU (run-queue delay, /proc/<pid>/task/<tid>/schedstat).

    Such waits lengthen every window the judge clocks without being any call's work, so an honest solution on a busy
    host would look like one that claims less than it does. Only the waits during which the worker's threads
    together were not running count: a solution that keeps its calling thread waiting while its other threads
    work gains nothing. (Processes a solution forks are not counted as running: a solution that keeps the CPUs
    busy from a child to make its own calling thread wait could hide that much of its work; docs/security.md.)
    ``worker_pid`` is the worker's pid as this process sees it; None: the calls run in this thread (LocalSolution).
    """

    def __init__(self, worker_pid: int | None) -> None:
        self.worker_pid = worker_pid
        self.judge_thread = KeptSchedstat(f"/proc/self/task/{threading.get_native_id()}/schedstat")
        self.calling_thread = (KeptSchedstat(f"/proc/{worker_pid}/task/{worker_pid}/schedstat")
                               if worker_pid is not None else None)

    def read(self) -> HostReading | None:
        judge = self.judge_thread.read()
        if judge is None:
            return None
        if self.worker_pid is None or self.calling_thread is None:
            return HostReading(time.perf_counter(), 0, 0, judge[1])
        worker = self.calling_thread.read()
        if worker is None:
            return None
        running = 0
        try:
            threads = os.listdir(f"/proc/{self.worker_pid}/task")
        except OSError:
            return None
        for tid in threads:
            stat = read_schedstat(f"/proc/{self.worker_pid}/task/{tid}/schedstat")
            running += stat[0] if stat is not None else 0
        return HostReading(time.perf_counter(), worker[1], max(running, _cpu_time_ns(self.worker_pid)), judge[1])

    def waits_ms(self) -> tuple[float, float]:
        """The calling thread's and the judge's thread's waits for a CPU so far (ms), cheap enough to read at
        every window's end. What comes out of a window is the two together, each only while the window waited on
        it (``held_up``). A window never gives up more than its length, and a session no more than the time the
        worker's threads were not running or, where that is less, the judge's own waits (``busy_fraction``)."""
        judge = self.judge_thread.read()
        if judge is None:
            return 0.0, 0.0
        if self.calling_thread is None:
            return 0.0, judge[1] / 1e6
        worker = self.calling_thread.read()
        return (worker[1] / 1e6 if worker is not None else 0.0), judge[1] / 1e6

    @staticmethod
    def held_up(before: tuple[float, float], after: tuple[float, float], sent: Sent | None = None,
                closed_at: float = 0.0) -> float:
        """What a window gives up to a busy host: the calling thread's and the judge's waits for a CPU from
        ``before`` to ``after`` (``waits_ms``), where the worker said when it sent its answer (``sent``), only
        those that could have held the window up: the calling thread's until then, the judge's from then to
        ``closed_at`` (``time.perf_counter``). Either thread may wait while the other works (the judge just after
        sending, the calling thread just after answering), and summed such waits took most of a 4 ms call's work
        out of its rounds on a busy 2-core host (docs/measurements.md). What the worker says only
        counts less: saying more than the judge measured changes nothing."""
        worker, judge = after[0] - before[0], after[1] - before[1]
        if sent is not None:
            if sent.waited_ns is not None:
                worker = min(worker, sent.waited_ns / 1e6 - before[0])
            judge = min(judge, (closed_at - sent.at) * 1e3)
        return max(worker, 0.0) + max(judge, 0.0)

    def judge_waiting_ms(self) -> float:
        stat = self.judge_thread.read()
        return stat[1] / 1e6 if stat is not None else 0.0

    @staticmethod
    def busy_fraction(start: HostReading | None, end: HostReading | None) -> float:
        """The share of the time from ``start`` to ``end`` that the host held up the calls or the judge."""
        if start is None or end is None or end.at <= start.at:
            return 0.0
        wall = (end.at - start.at) * 1e9
        worker_waiting = end.worker_waiting_ns - start.worker_waiting_ns
        not_running = wall - (end.worker_running_ns - start.worker_running_ns)
        judge_waiting = max(end.judge_waiting_ns - start.judge_waiting_ns, 0)
        # The judge's own waits count whatever the worker did (its threads may run in parallel: torch's on the CPU).
        held_up = max(min(max(worker_waiting, 0) + judge_waiting, max(not_running, 0.0)), judge_waiting)
        return min(max(held_up / wall, 0.0), MAX_BUSY_FRACTION)


def calling_process(waiter_pid: int | None) -> int | None:
    """The process that makes a worker's calls, given the pid its parent knows (the sandbox's waiter): the waiter's
    one child (pid 1 of the sandbox's namespace), or the waiter itself where no namespace was made. None where
    neither can be read."""
    if waiter_pid is None:
        return None
    try:
        with open(f"/proc/{waiter_pid}/task/{waiter_pid}/children") as handle:
            children = handle.read().split()
    except OSError:
        return None
    return int(children[0]) if len(children) == 1 else waiter_pid

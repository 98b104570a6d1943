"""The judge's correction for a busy host (judge/clock.py HostWatch): the time the calling thread waited for a CPU
while the worker's threads were not running is the host's, not the call's."""

import os
import threading
import time
from multiprocessing import Pipe

import pytest

from flashinfer_bench.bench.judge.clock import HostReading, HostWatch, calling_process
from flashinfer_bench.bench.wire.judge_worker import Ran, Sent, WorkerChannel, WorkerGone

MS = 1_000_000  # ns


def reading(at_ms: float, waiting_ms: float, running_ms: float, judge_ms: float = 0.0) -> HostReading:
    return HostReading(at_ms / 1e3, int(waiting_ms * MS), int(running_ms * MS), int(judge_ms * MS))


def test_a_calling_thread_that_waited_for_a_cpu_is_the_hosts_share():
    start = reading(0, 0, 0)
    # 100 ms: the calls ran 40 ms and waited 60 ms for a CPU.
    assert HostWatch.busy_fraction(start, reading(100, 60, 40)) == 0.6
    # The judge's own waits count too (in a window each thread mostly waits on the other), but never more than
    # the time the worker's threads were not running (waits while they ran overlap work), unless the judge's own
    # waits alone were more (threads of the worker may run side by side).
    assert HostWatch.busy_fraction(start, reading(100, 20, 60, judge_ms=15)) == 0.35
    assert HostWatch.busy_fraction(start, reading(100, 20, 70, judge_ms=15)) == 0.3
    assert HostWatch.busy_fraction(start, reading(100, 20, 80, judge_ms=30)) == 0.3
    assert HostWatch.busy_fraction(start, reading(100, 0, 180, judge_ms=10)) == 0.1
    assert HostWatch.held_up((1.0, 5.0), (4.0, 6.0)) == 4.0 and HostWatch.held_up((1.0, 5.0), (1.0, 5.0)) == 0.0


def test_only_the_waits_that_could_hold_a_window_up_come_out_of_it():
    """Where the worker said when it answered: the calling thread's waits after that overlap the judge's, and the
    judge's before it overlap the calls; neither lengthened the window."""
    # Opened at waits of 1 ms (calling thread) and 5 ms (judge); closed at 4 and 16 ms, at 20 ms on the clock; the
    # worker answered at 12 ms, its thread having waited 2 ms by then.
    assert HostWatch.held_up((1.0, 5.0), (4.0, 16.0), Sent(at=0.012, waited_ns=2 * MS), 0.020) == pytest.approx(9.0)
    # Saying more than the judge measured, or an earlier answer, counts no more than the waits measured.
    assert HostWatch.held_up((1.0, 5.0), (4.0, 16.0), Sent(at=0.0, waited_ns=90 * MS), 0.020) == pytest.approx(14.0)
    # Where the worker could not read its waits, all the calling thread's measured ones count.
    assert HostWatch.held_up((1.0, 5.0), (4.0, 16.0), Sent(at=0.019), 0.020) == pytest.approx(4.0)


@pytest.mark.parametrize("sent", ['{"at": 1e999}', '{"at": -1.0}', '{"at": 1.0, "waited_ns": 1' + "0" * 400 + "}",
                                  '{"at": 1.0, "waited_ns": -5}', '{"at": "soon"}'])
def test_what_the_worker_says_of_its_answer_is_parsed_strictly(sent):
    """A time or a wait no clock reads is a broken protocol, not a figure the judge computes with."""
    judge_end, worker_end = Pipe()
    worker_end.send_bytes(b'{"op": "ran", "count": 1, "sent": ' + sent.encode() + b"}")
    with pytest.raises(WorkerGone, match="broke the protocol"):
        WorkerChannel(judge_end).receive(Ran)


def test_waiting_while_other_threads_of_the_worker_run_is_no_ones_share_but_the_solutions():
    """A solution that keeps its calling thread waiting while its other threads do the work: they ran for the
    whole window, so nothing is taken out."""
    assert HostWatch.busy_fraction(reading(0, 0, 0), reading(100, 90, 190)) == 0.0
    assert HostWatch.busy_fraction(reading(0, 0, 0), reading(100, 90, 70)) == 0.3


def test_the_correction_is_bounded_and_missing_readings_correct_nothing():
    assert HostWatch.busy_fraction(reading(0, 0, 0), reading(100, 100, 0, judge_ms=50)) == 0.9
    assert HostWatch.busy_fraction(None, reading(100, 60, 40)) == 0.0
    assert HostWatch.busy_fraction(reading(0, 0, 0), None) == 0.0


def spin(seconds: float) -> None:
    """Run on a CPU for ``seconds`` of this thread's CPU time (however long a busy host makes that take)."""
    stop = time.thread_time() + seconds
    while time.thread_time() < stop:
        pass


def test_readings_count_the_cpu_time_of_threads_that_have_ended():
    """Real readings of this process: a thread that spun and ended still counts as running (a solution cannot hide
    work in short-lived threads), and waits never decrease."""
    watch = HostWatch(os.getpid())
    first = watch.read()
    if first is None:  # the kernel keeps no schedstat (CONFIG_SCHED_INFO off): nothing to correct with
        assert HostWatch.busy_fraction(first, watch.read()) == 0.0
        return
    spinner = threading.Thread(target=spin, args=(0.3,))
    spinner.start()
    spinner.join()
    second = watch.read()
    assert second.worker_running_ns - first.worker_running_ns >= 200 * MS
    assert second.worker_waiting_ns >= first.worker_waiting_ns and second.judge_waiting_ns >= first.judge_waiting_ns


def test_the_calling_process_is_the_waiters_one_child_or_the_waiter(tmp_path):
    import subprocess
    import sys

    waiter = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; "
                               "subprocess.run([sys.executable, '-c', 'import time; time.sleep(60)'])"])
    try:
        deadline = time.monotonic() + 60
        while calling_process(waiter.pid) == waiter.pid and time.monotonic() < deadline:
            time.sleep(0.02)
        child = calling_process(waiter.pid)
        assert child != waiter.pid
        with open(f"/proc/{child}/stat") as handle:
            assert int(handle.read().rsplit(")", 1)[1].split()[1]) == waiter.pid  # its parent is the waiter
    finally:
        waiter.kill()
        waiter.wait()
    lone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert calling_process(lone.pid) == lone.pid
    finally:
        lone.kill()
        lone.wait()
    assert calling_process(None) is None


def test_kept_readings_are_fresh_and_end_with_their_thread():
    """The judge reads a thread's schedstat again and again through one descriptor: each reading is the kernel's
    current figure, and a thread that has ended reads as nothing (not as its last figure, nor another's)."""
    watch = HostWatch(os.getpid())  # the calling thread: this process's main thread, which runs the tests
    before = watch.calling_thread.read()
    if before is None:  # the kernel keeps no schedstat
        return
    spin(0.05)
    after = watch.calling_thread.read()
    assert after[0] - before[0] >= 40 * MS and after[1] >= before[1]
    kept = []

    def keeps_its_own() -> None:
        kept.append(HostWatch(None).judge_thread)
        assert kept[0].read() is not None

    thread = threading.Thread(target=keeps_its_own)
    thread.start()
    thread.join()
    deadline = time.monotonic() + 10  # the thread's task ends a moment after join returns
    while kept[0].read() is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert kept[0].read() is None

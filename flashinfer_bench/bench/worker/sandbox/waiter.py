"""The waiter: the process the parent knows, which lives and dies with the namespace's pid 1."""

from __future__ import annotations

import errno
import fcntl
import gc
import os
import select
import signal
from typing import NoReturn

from flashinfer_bench.bench.worker.sandbox.syscalls import PR_SET_DUMPABLE, PR_SET_PDEATHSIG, _error, _prctl

#: The waiter blocks every signal it can and takes them with sigwaitinfo (no handler runs in it, none races).
WAITER_WATCHED_SIGNALS = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}
#: Those it shrugs off: SIGINT (the terminal sends it to the worker too), and those that by default are
#: ignored or stop a process. Any other ends the waiter: it kills the namespace first, then dies by it.
WAITER_IGNORED_SIGNALS = frozenset({signal.SIGINT, signal.SIGCHLD, signal.SIGCONT, signal.SIGURG,
                                    signal.SIGWINCH, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU})


#: Exit status of a waiter that failed itself (after killing its child), and of a child whose waiter was gone
#: before it could arm its own PR_SET_PDEATHSIG.
WAITER_FAILED_STATUS = 125
ORPHANED_STATUS = 126
#: The waiter keeps its end of this pipe open; fd 3 is where it ends up.
WAITER_KEPT_FD = 3
MAX_FD = 2**31 - 1
POLL_INTERVAL_S = 0.01
#: The kernel enforces RLIMIT_CPU on CPU time counted in ticks; wait4's rusage reports the precise run time,
#: which is lower (0.98 s for a 1 s limit here, and on a loaded virtual machine, where ticks run ahead, less:
#: 0.9 of the limit was not always reached). A SIGKILL after this fraction of the limit is taken as the
#: limit's: nothing else inside the namespace can SIGKILL its pid 1 (an OOM kill is told apart by the
#: parent, from its cgroup).
CPU_ACCOUNTED_FRACTION = 0.5


def _die_with_waiter(alive: int) -> None:
    """Arm PR_SET_PDEATHSIG=SIGKILL; exit at once if the waiter (the parent) is gone already."""
    try:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "prctl(PR_SET_PDEATHSIG)")
        # getppid() is 0 in a new pid namespace, so the waiter's pipe tells whether it still runs.
        waiter = select.poll()
        waiter.register(alive, select.POLLIN)
        if waiter.poll(0):  # EOF (POLLHUP): its end is closed
            os._exit(ORPHANED_STATUS)
    finally:
        os.close(alive)


def _die_with_parent(parent: int) -> None:
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:  # the parent is gone already: the signal was never armed
        os.kill(os.getpid(), signal.SIGKILL)


def _own_session() -> None:
    try:
        os.setsid()
    except OSError as error:
        raise _error("setsid", error.errno or errno.EPERM) from None


def _keep_only(fd: int, null: int) -> None:
    """Close every descriptor but ``fd``, which becomes WAITER_KEPT_FD; 0, 1 and 2 point at ``null`` (an open
    /dev/null: the waiter opens no path, its root may be anywhere while the child builds its view)."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, WAITER_KEPT_FD)  # out of the way of the dup2s onto 0-2
    for std in (0, 1, 2):
        os.dup2(null, std)
    os.dup2(high, WAITER_KEPT_FD)
    os.closerange(WAITER_KEPT_FD + 1, MAX_FD)


def _wait_for_child(child: int, cpu_seconds: int | None) -> tuple[int, int | None]:
    """Wait for the child to exit, or for a signal that ends the waiter (WAITER_WATCHED_SIGNALS are blocked).

    Returns the child's wait status and the fatal signal received, if any. A child SIGKILLed once it had used
    its CPU time limit (the kernel's SIGXCPU is lost on a namespace's pid 1, its SIGKILL at the hard limit
    is not) counts as killed by SIGXCPU, so that its parent can tell which limit ended it."""
    while True:
        pid, status, usage = os.wait4(child, os.WNOHANG)
        if pid:
            used = usage.ru_utime + usage.ru_stime
            if cpu_seconds is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL \
                    and used >= CPU_ACCOUNTED_FRACTION * cpu_seconds:
                return status, signal.SIGXCPU
            return status, None
        received = signal.sigwaitinfo(WAITER_WATCHED_SIGNALS).si_signo
        if received not in WAITER_IGNORED_SIGNALS:
            os.kill(child, signal.SIGKILL)  # not reaped yet, so the pid is still the child's
            return os.waitpid(child, 0)[1], received


def _die_by(signum: int) -> NoReturn:
    """Die by ``signum`` so the parent sees the same death as the child's; without a core dump of its own."""
    _prctl(PR_SET_DUMPABLE, 0)
    if signum not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # a signal that does not kill by default


def _end_like(status: int, received: int | None) -> NoReturn:
    """Exit the way the child did, or die by the fatal signal the waiter received."""
    try:
        if received is not None:
            _die_by(received)
        if os.WIFSIGNALED(status):
            _die_by(os.WTERMSIG(status))
        os._exit(os.waitstatus_to_exitcode(status))
    finally:
        os._exit(WAITER_FAILED_STATUS)


def _serve_as_waiter(child: int, alive: int, null: int, cpu_seconds: int | None = None) -> NoReturn:
    """What the calling process does after the fork, until it exits like its child (never returns)."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # SIG_IGN would reap the child behind our back
        signal.set_wakeup_fd(-1)
        gc.disable()  # no finalizer of the worker's objects may run here (they could close reused fds)
        _keep_only(alive, null)
        status, received = _wait_for_child(child, cpu_seconds)
    except BaseException:  # nothing may propagate: the caller would go on as a second worker
        try:
            os.kill(child, signal.SIGKILL)  # not reaped, so the pid is still the child's
        finally:
            os._exit(WAITER_FAILED_STATUS)
    _end_like(status, received)

"""Running an attack in the sandbox from a test: a forked child enters it, attacks, and reports what happened as
JSON lines over a pipe (used by test_sandbox.py and test_sandbox_escapes.py)."""

import ctypes
import errno
import faulthandler
import json
import os
import select
import signal
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import replace

import pytest

from flashinfer_bench.bench.worker.sandbox import Isolation, SandboxPolicy, enter_sandbox

LIBC = ctypes.CDLL(None, use_errno=True)
REPORT_TIMEOUT_S = 10.0
GONE_TIMEOUT_S = 5.0
#: Exit status of a forked child whose attack raised (the traceback is reported).
ATTACK_FAILED = 99


class Reporter:
    """The sandboxed side of the pipe: ``report(value)`` sends one JSON line to the test."""

    def __init__(self, fd: int):
        self.fd = fd

    def __call__(self, value: object) -> None:
        os.write(self.fd, (json.dumps(value) + "\n").encode())


Attack = Callable[[Isolation, Reporter], None]


def fork() -> int:
    """fork(), without Python 3.12's warning about the threads of pytest's process (torch starts some):
    the children only make system calls, sleep and write to pipes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def reap(pid: int, timeout: float = GONE_TIMEOUT_S) -> int:
    """Wait for our child ``pid`` and return its exit code as multiprocessing gives it; SIGKILL it and fail the
    test if it does not end in time."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"process {pid} still ran after {timeout} s")
        time.sleep(0.01)


def enter_and_attack(policy: SandboxPolicy, attack: Attack, report: Reporter,
                     before: Callable[[], None] | None = None) -> None:
    """Body of a forked child: never returns into pytest."""
    status = 0
    try:
        faulthandler.disable()  # a deliberate crash should not print pytest's fault traceback
        if before is not None:
            before()
        attack(enter_sandbox(policy), report)
    except BaseException:
        report({"error": traceback.format_exc()})
        status = ATTACK_FAILED
    finally:
        os._exit(status)


def start(policy: SandboxPolicy, attack: Attack, before: Callable[[], None] | None = None,
          keep_report: bool = False) -> tuple[int, int]:
    """Fork a child that runs ``attack`` in the sandbox; returns its pid (the waiter) and the reports' read end.
    ``keep_report``: the report pipe is added to the policy's ``keep_fds`` (the only descriptor it keeps)."""
    read_fd, write_fd = os.pipe()
    if keep_report:
        policy = replace(policy, keep_fds=(*(policy.keep_fds or ()), write_fd))
    pid = fork()
    if pid == 0:
        os.close(read_fd)
        enter_and_attack(policy, attack, Reporter(write_fd), before)
    os.close(write_fd)
    return pid, read_fd


def read_reports(fd: int, count: int | None = None, timeout: float = REPORT_TIMEOUT_S) -> list:
    """Reports until ``count`` of them (or EOF when None) have arrived; fails on a timeout or a reported error."""
    reports: list = []
    buffer = b""
    deadline = time.monotonic() + timeout
    while count is None or len(reports) < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            pytest.fail(f"no report within {timeout} s; got {reports}")
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        *lines, buffer = (buffer + chunk).split(b"\n")
        reports.extend(json.loads(line) for line in lines)
    for report in reports:
        if isinstance(report, dict) and "error" in report:
            pytest.fail(f"the sandboxed child failed:\n{report['error']}")
    if count is not None and len(reports) < count:
        pytest.fail(f"EOF after {len(reports)} of {count} reports: {reports}")
    return reports


def run(policy: SandboxPolicy, attack: Attack, before: Callable[[], None] | None = None,
        keep_report: bool = False) -> tuple[list, int]:
    """Run ``attack`` to its end; returns the reports and the waiter's exit code as multiprocessing gives it."""
    pid, fd = start(policy, attack, before, keep_report)
    try:
        reports = read_reports(fd)
    finally:
        os.close(fd)
    return reports, reap(pid)


def outcome(action: Callable[[], object]) -> str:
    """"ok", or the errno name of the OSError ``action`` raised."""
    try:
        action()
    except OSError as error:
        return errno.errorcode[error.errno]
    return "ok"


def libc_call(result: int) -> None:
    """Raise the OSError a failed libc call (made with LIBC) left in errno."""
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))

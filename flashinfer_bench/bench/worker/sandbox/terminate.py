"""Stopping a sandboxed worker and every process its namespace holds."""

from __future__ import annotations

import os
import signal
import time

from flashinfer_bench.bench.worker.sandbox.waiter import POLL_INTERVAL_S


def _stat_fields(pid: int) -> list[bytes] | None:
    """/proc/<pid>/stat after the command name (state, ppid, ...), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None


def _exited(pid: int) -> bool:
    """Gone, or a zombie: its parent reaps it (``Process.join``), not us."""
    if not os.path.isdir("/proc/self"):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    fields = _stat_fields(pid)
    return fields is None or fields[0] in (b"Z", b"X")


def _descendants(root: int) -> set[int]:
    """Every process below ``root``, from the parent pids in /proc (works without CONFIG_PROC_CHILDREN)."""
    try:
        entries = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except FileNotFoundError:
        return set()
    children: dict[int, list[int]] = {}
    for pid in entries:
        fields = _stat_fields(pid)
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _kill_below(root: int) -> None:
    """SIGSTOP ``root`` and everything below it until no new process turns up, then SIGKILL all but ``root``.

    Stopped processes cannot fork, so a detached process started while we look is found on the next pass;
    this is what kills the descendants of a fallback worker (its subreaper keeps them below it)."""
    _signal(root, signal.SIGSTOP)
    stopped: set[int] = set()
    while new := _descendants(root) - stopped:
        for pid in new:
            _signal(pid, signal.SIGSTOP)
        stopped |= new
    for pid in stopped:
        _signal(pid, signal.SIGKILL)


def _wait_exited(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not _exited(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_INTERVAL_S)
    return True


def terminate_sandboxed(pid: int, grace_s: float = 2.0) -> None:
    """Stop the worker whose waiter (or, in fallback mode, the worker itself) is ``pid``, with all it started.

    Kills every process below ``pid`` first, then sends SIGTERM to ``pid`` (a waiter takes its namespace down
    and dies by SIGTERM), and SIGKILL if it is still running after ``grace_s``. Does not reap ``pid``: the
    caller joins its ``Process`` as usual."""
    try:
        _kill_below(pid)
    finally:  # never leave it stopped
        _signal(pid, signal.SIGTERM)
        _signal(pid, signal.SIGCONT)
    if not _wait_exited(pid, grace_s):
        try:
            _kill_below(pid)
        finally:
            _signal(pid, signal.SIGKILL)

"""Entering the sandbox: unshare, fork, confine the child; or, where namespaces cannot be made, a fallback."""

from __future__ import annotations

import errno
import os
import signal
import sys

from flashinfer_bench.bench.worker.sandbox.descriptors import _close_inherited
from flashinfer_bench.bench.worker.sandbox.limits import _join_cgroups, _set_rlimits
from flashinfer_bench.bench.worker.sandbox.mounts import (
    _bind_read_only,
    _hide,
    _make_mounts_private,
    _mount_proc,
    _reenter_cwd,
)
from flashinfer_bench.bench.worker.sandbox.network import _bring_up_loopback
from flashinfer_bench.bench.worker.sandbox.policy import (
    FILE_SYSTEM_VIEW,
    MINIMAL_DEV,
    NETWORK_NAMESPACE,
    NO_INHERITED_FDS,
    PRIVATE_SHM,
    PROTECTED_PROC,
    READ_ONLY_SYS,
    WRITABLE_SCRATCH,
    Isolation,
    SandboxError,
    SandboxPolicy,
    _Report,
)
from flashinfer_bench.bench.worker.sandbox.privileges import _drop_capabilities, _map_ids, _set_no_new_privs
from flashinfer_bench.bench.worker.sandbox.syscalls import (
    PR_SET_CHILD_SUBREAPER,
    PR_SET_PDEATHSIG,
    SANDBOX_NAMESPACES,
    _error,
    _prctl,
    _reason,
    _unshare,
)
from flashinfer_bench.bench.worker.sandbox.view import _build_view
from flashinfer_bench.bench.worker.sandbox.waiter import (
    WAITER_WATCHED_SIGNALS,
    _die_with_parent,
    _die_with_waiter,
    _own_session,
    _serve_as_waiter,
)


def _thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def _split(policy: SandboxPolicy, parent: int, report: _Report) -> Isolation:
    """Fork inside the new namespaces: the caller becomes the waiter, the child (pid 1) returns confined."""
    # Blocked from now on in the waiter (restored in the child): no signal is lost or acted on too early.
    original_mask = signal.pthread_sigmask(signal.SIG_BLOCK, WAITER_WATCHED_SIGNALS)
    try:
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM, "prctl(PR_SET_PDEATHSIG)")  # the waiter's; the child's is reset
        if os.getppid() != parent:  # the parent died before the signal was armed: act as if it had come
            os.kill(os.getpid(), signal.SIGTERM)
        alive_read, alive_write = os.pipe()
        # Opened now: the child's pivot_root moves the waiter's root too, for a while to one without /dev/null.
        null = os.open(os.devnull, os.O_RDWR)
        child = os.fork()
    except OSError as error:
        signal.pthread_sigmask(signal.SIG_SETMASK, original_mask)
        raise _error("fork into the new pid namespace", error.errno or errno.EAGAIN) from None
    if child:
        os.close(alive_read)
        _serve_as_waiter(child, alive_write, null, policy.limits.cpu_seconds)
    os.close(alive_write)
    os.close(null)
    signal.pthread_sigmask(signal.SIG_SETMASK, original_mask)
    return _confine(policy, alive_read, report)


def _current_directory() -> str | None:
    try:
        return os.getcwd()
    except FileNotFoundError:  # deleted: nothing can be created in it anyway
        return None


def _confine(policy: SandboxPolicy, alive: int, report: _Report) -> Isolation:
    """pid 1 of the new namespace: the mounts, then give up every privilege that could undo them."""
    report.applied += ["user namespace", "pid namespace", "ipc namespace"]
    report.step("dies with its parent", lambda: _die_with_waiter(alive))
    # A new pid namespace keeps the caller's process group, which lies outside it: kill(0, sig) would still
    # reach the CLI, the forkserver and the judges. Leaving it is not optional.
    try:
        _own_session()
    except OSError as error:
        raise SandboxError(f"leaving the caller's process group failed: {_reason(error)}") from None
    report.applied.append("own session")
    cwd = _current_directory()
    report.step("mount namespace", _make_mounts_private)
    if policy.confine_writes:
        try:
            _build_view(policy, report)
        except OSError as error:  # the root was not switched: the host's tree is in view, claim nothing
            raise SandboxError(f"switching to the new root failed: {_reason(error)}") from None
    else:
        if policy.read_only:
            report.each("read-only paths", policy.read_only, _bind_read_only)
        if policy.hidden:
            report.each("hidden paths", policy.hidden, _hide)
        report.step("private /proc", _mount_proc)  # last: see the module docstring
    _reenter_cwd(cwd, policy.writable[0] if policy.confine_writes and policy.writable else "/")
    report.step(f"{NETWORK_NAMESPACE} (loopback only)", _bring_up_loopback)
    report.step("no new privileges", _set_no_new_privs)
    try:
        _drop_capabilities()
    except OSError as error:  # with capabilities left, the mounts above could be undone: claim nothing
        raise SandboxError(f"dropping capabilities failed: {_reason(error)}") from None
    report.applied.append("no capabilities")
    if policy.keep_fds is not None:
        report.step(NO_INHERITED_FDS, lambda: _close_inherited(policy.keep_fds))
    _limit(policy, report)  # last: a low limit on open files must not stop the steps above from opening theirs
    return report.isolation()


def _limit(policy: SandboxPolicy, report: _Report) -> None:
    rlimits = policy.limits.rlimits()
    if rlimits:
        report.step(f"resource limits: {rlimits}", lambda: _set_rlimits(policy.limits))


def _join(policy: SandboxPolicy) -> _Report:
    """Into the cgroups the caller made (before unsharing: a process and all it starts stay in them)."""
    report = _Report()
    if policy.cgroups:
        report.step(f"cgroup: {policy.limits.cgroup()}", lambda: _join_cgroups(policy.cgroups))
    elif policy.limits.wants_cgroup():
        report.missing.append(f"cgroup: {policy.limits.cgroup()}: no cgroup could be made for the worker")
    return report


def _fallback(policy: SandboxPolicy, parent: int, reason: str, report: _Report) -> Isolation:
    """No namespaces: what a plain process can do to itself."""
    names = ["user namespace", "pid namespace", "mount namespace", "ipc namespace", "private /proc",
             NETWORK_NAMESPACE]
    if policy.confine_writes:
        names += [FILE_SYSTEM_VIEW, WRITABLE_SCRATCH, MINIMAL_DEV, PRIVATE_SHM, PROTECTED_PROC, READ_ONLY_SYS]
    elif policy.read_only:
        names.append("read-only paths")
    if policy.hidden:
        names.append("hidden paths")
    report.missing += [f"{name}: {reason}" for name in names]
    report.step("dies with its parent", lambda: _die_with_parent(parent))
    report.step("subreaper", lambda: _prctl(PR_SET_CHILD_SUBREAPER, 1, "prctl(PR_SET_CHILD_SUBREAPER)"))
    report.step("own session", _own_session)
    report.step("no new privileges", _set_no_new_privs)
    _limit(policy, report)
    report.step("no capabilities", _drop_capabilities)
    if policy.keep_fds is not None:
        report.step(NO_INHERITED_FDS, lambda: _close_inherited(policy.keep_fds))
    _limit(policy, report)  # last: a low limit on open files must not stop the steps above from opening theirs
    return report.isolation()


def enter_sandbox(policy: SandboxPolicy) -> Isolation:
    """Confine the calling process as described in the module docstring; returns what is in force.

    In full mode the caller's pid becomes the waiter and never returns from this call: the value is returned
    in a new child, pid 1 of the new pid namespace, which goes on as the worker. Raises SandboxError when the
    namespaces were entered but could not be completed (the caller must then exit)."""
    parent = os.getppid()
    report = _join(policy)
    if not sys.platform.startswith("linux"):
        return _fallback(policy, parent, f"not available on {sys.platform}", report)
    threads = _thread_count()
    if threads > 1:
        reason = f"unshare needs a single-threaded process, this one has {threads} threads"
        return _fallback(policy, parent, reason, report)
    uid, gid = os.geteuid(), os.getegid()
    try:
        _unshare(SANDBOX_NAMESPACES)
    except OSError as error:
        return _fallback(policy, parent, _reason(error), report)
    try:
        _map_ids(uid, gid)
        return _split(policy, parent, report)
    except OSError as error:
        raise SandboxError(f"setting up the new namespaces failed: {_reason(error)}") from None

"""Confine a worker process that runs untrusted solution code, with Linux namespaces.

A worker calls :func:`enter_sandbox` first thing, before it builds or imports any solution code. The call
creates a user, mount, pid and IPC namespace (``unshare``) and forks once:

* The calling process becomes the *waiter*. It never returns: it closes every file descriptor it holds
  (0-2 point at /dev/null afterwards) and waits. When the child exits, the waiter exits the same way (same
  status, or killed by the same signal). On any signal that would end it (SIGTERM, SIGHUP, SIGUSR1, ...: all
  but SIGINT, whose Ctrl-C reaches the worker itself, and those that stop or are ignored by default), and
  when its own parent dies (PR_SET_PDEATHSIG=SIGTERM), it SIGKILLs the child, reaps it and dies by that
  signal. The parent's ``multiprocessing.Process`` refers to the waiter, so ``exitcode``, ``join`` and
  ``sentinel`` behave as for any worker (fork and forkserver start methods).
* The child is pid 1 of the new pid namespace and goes on as the worker. When it dies, the kernel kills
  every process of the namespace, however detached (double fork, ``setsid``, cleared PDEATHSIG).

The mounts are made in this order: the mount namespace is made private; with ``confine_writes``, the whole
filesystem read-only, the ``writable`` directories, the private /dev/shm; the ``read_only`` paths; the
``hidden`` ones; last the fresh /proc (mounted before, it would be made read-only with the rest; the old
/proc, though read-only now, still lets it be mounted, as only a mount made read-only in a more privileged
namespace would not). Every mount that could not be made as asked is named in ``Isolation.missing``.

Guaranteed once :func:`enter_sandbox` returns an :class:`Isolation` that is ``complete``:

* no process outside the namespace can be seen (a fresh /proc) or signalled (the worker leads its own
  session, so not even ``kill(0, sig)`` reaches the process group it came from);
* with ``confine_writes``, nothing but the ``writable`` directories can be written, created in, renamed or
  unlinked (EROFS): every mount of the namespace ("/" and all below it) is remounted read-only in place,
  then each ``writable`` directory is bound writable over itself (mounts below it stay read-only). Device
  nodes stay usable (a read-only mount does not stop writes to /dev/null or /dev/nvidia*: they go to the
  driver). /dev/shm becomes an empty tmpfs of the namespace's own (nosuid, nodev), so the worker's POSIX
  shared memory and semaphores are invisible outside and vanish with it;
* the ``read_only`` paths (recursively, with the mounts below them) cannot be written, created in, renamed
  or unlinked (EROFS), also through the current directory when it lies below one of them (they also make a
  path inside a ``writable`` directory read-only);
* the ``hidden`` directories show an empty read-only tmpfs: their files and unix sockets cannot be reached
  (a ``writable`` directory at or below a ``read_only`` or ``hidden`` path is refused by ``SandboxPolicy``);
* the worker has no capabilities left (bounding, ambient, permitted, effective and inheritable sets are
  empty) and no_new_privs is set, so neither it nor what it runs can undo the mounts, and execve cannot
  gain privileges (setuid binaries, file capabilities);
* the whole namespace dies when the waiter is terminated (:func:`terminate_sandboxed`) or its parent dies.

Not guaranteed:

* SIGKILL sent straight to the waiter: it cannot take the namespace down then. The worker holds
  PR_SET_PDEATHSIG=SIGKILL as a second line, but solution code can clear that. Stop a worker with
  :func:`terminate_sandboxed`, not ``Process.kill()``.
* File descriptors opened before the call keep the access they had: a pipe to the parent stays open, and a
  directory fd opened below a read-only path still writes through the old, writable mount.
* Without ``confine_writes``, everything not listed stays writable and shared (/tmp, /dev/shm, the home
  directory, the build cache unless listed); a read-only *file* protects its content, and the directory
  that holds it stays writable unless listed. With it, the ``writable`` directories are shared with
  whatever else can write them outside, and a mount point the process could not even look up while it was
  set up (EACCES: a tracefs below the host's 0700 debugfs, for a user who is not root) is left as it is,
  since the process never gains the access to reach it later.
* There is no network namespace (abstract unix sockets and the network are reachable); there are no
  resource limits (memory, processes, CPU time; a writable directory or the private /dev/shm can be filled).
* pid 1 of a namespace ignores signals with a default disposition that come from inside the namespace:
  ``os.kill(os.getpid(), SIGTERM)`` or ``abort()`` in the worker does not kill it the usual way (abort ends
  in SIGSEGV); faults (SIGSEGV, SIGBUS, SIGFPE) and signals from outside behave as usual. Orphans inside the
  namespace are re-parented to the worker, which reaps only its own children.

When the namespaces cannot be created (unprivileged user namespaces disabled, a seccomp filter such as
Docker's default one, a multi-threaded caller, not Linux), :func:`enter_sandbox` falls back to what a plain
process can do (PR_SET_PDEATHSIG=SIGKILL, PR_SET_CHILD_SUBREAPER, ``setsid``, no_new_privs, dropping
capabilities) and says in ``Isolation.missing`` what is not in force and why.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import functools
import gc
import json
import os
import re
import select
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NoReturn

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
SANDBOX_NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOSYMFOLLOW = 0x100
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

LINUX_CAPABILITY_VERSION_3 = 0x20080522

#: Per-mount flags a read-only remount must pass again: a mount inherited from a more privileged namespace has
#: them locked, and a remount that would clear one fails with EPERM. (Atime flags are kept by the kernel.)
KEPT_MOUNT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "nosymfollow": MS_NOSYMFOLLOW}
HIDING_MOUNT_FLAGS = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
PROC_MOUNT_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC

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

#: Names of the ``confine_writes`` steps in ``Isolation.applied`` / ``missing``.
READ_ONLY_FILESYSTEM = "read-only filesystem"
WRITABLE_SCRATCH = "writable: scratch only"
PRIVATE_SHM = "private /dev/shm"
SHM_DIR = "/dev/shm"

UNSHARE_HINTS = {
    errno.EPERM: "unprivileged user namespaces disabled?",
    errno.ENOSPC: "user.max_user_namespaces is 0 or reached?",
    errno.EINVAL: "multi-threaded process?",
}


def _at_or_below(path: str, top: str) -> bool:
    path, top = os.path.realpath(path), os.path.realpath(top)
    return path == top or path.startswith(top.rstrip("/") + "/")


class SandboxError(RuntimeError):
    """The namespaces were entered but could not be completed; the process must not run solution code."""


@dataclass(frozen=True)
class SandboxPolicy:
    #: Existing paths (files or directories) the sandboxed process must not be able to write.
    read_only: tuple[str, ...] = ()
    #: Existing directories whose contents it must not see or reach; an empty read-only tmpfs covers them.
    hidden: tuple[str, ...] = ()
    #: Existing directories that stay writable under ``confine_writes`` (mounts below them stay read-only).
    writable: tuple[str, ...] = ()
    #: Make every mount read-only but the ``writable`` directories, and give the process a private /dev/shm.
    confine_writes: bool = False

    def __post_init__(self) -> None:
        """A writable directory must be writable and reachable once the steps have run: reject the policy when
        no directory could be (no ``confine_writes``), or when a later step would cover one (it lies at or
        below a ``read_only`` or ``hidden`` path)."""
        if self.writable and not self.confine_writes:
            raise ValueError("SandboxPolicy.writable needs confine_writes=True (without, all is writable)")
        for directory in self.writable:
            for kind, paths in (("read-only", self.read_only), ("hidden", self.hidden)):
                covering = [path for path in paths if _at_or_below(directory, path)]
                if covering:
                    raise ValueError(f"writable directory {directory} lies at or below {kind} {covering[0]}: "
                                     "it would not stay writable")


@dataclass(frozen=True)
class Isolation:
    #: Short names of what is in force ("pid namespace", "read-only paths", "no capabilities", ...).
    applied: tuple[str, ...]
    #: What could not be set up, each as "name: reason".
    missing: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return not self.missing

    def describe(self) -> str:
        """One line for a start-up message."""
        applied = ", ".join(self.applied) or "nothing"
        if self.complete:
            return f"full isolation: {applied}"
        return f"weaker isolation: missing {'; '.join(self.missing)}; in force: {applied}"


@dataclass
class _Report:
    applied: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def step(self, name: str, action: Callable[[], None]) -> None:
        """Run ``action``; record ``name`` as applied, or as missing with the OSError's message."""
        try:
            action()
        except OSError as error:
            self.missing.append(f"{name}: {_reason(error)}")
        else:
            self.applied.append(name)

    def each(self, name: str, paths: Iterable[str], action: Callable[[str], None]) -> None:
        """``step`` for one action per path; every path is tried, the failures are listed together."""
        failures = []
        for path in paths:
            try:
                action(path)
            except OSError as error:
                failures.append(f"{path}: {_reason(error)}")
        if failures:
            self.missing.append(f"{name}: {'; '.join(failures)}")
        else:
            self.applied.append(name)

    def isolation(self) -> Isolation:
        return Isolation(tuple(self.applied), tuple(self.missing))


# --- system calls --------------------------------------------------------------------------------------------


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    if sys.platform.startswith("linux"):
        libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
        libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
        libc.unshare.argtypes = [ctypes.c_int]
        libc.capset.argtypes = [ctypes.POINTER(_CapHeader), ctypes.POINTER(_CapData)]
    return libc


class _SyscallError(OSError):
    """An OSError whose ``strerror`` names the call and the errno: "mount(/x) failed: ENOENT (...)"."""


def _error(call: str, code: int, explanation: str | None = None) -> OSError:
    name = errno.errorcode.get(code, str(code))
    return _SyscallError(code, f"{call} failed: {name} ({explanation or os.strerror(code)})")


def _reason(error: OSError) -> str:
    """The message of an error made by ``_error``, or a comparable one for an OSError raised by Python."""
    if isinstance(error, _SyscallError):
        return error.strerror
    name = errno.errorcode.get(error.errno, str(error.errno)) if error.errno else type(error).__name__
    where = f" {error.filename}" if error.filename else ""
    return f"{name} ({error.strerror}){where}"


def _check(result: int, call: str) -> None:
    if result != 0:
        raise _error(call, ctypes.get_errno())


def _require_linux(call: str) -> None:
    if not sys.platform.startswith("linux"):
        raise _error(call, errno.ENOSYS, f"not available on {sys.platform}")


def _prctl(option: int, arg: int = 0, name: str = "prctl") -> None:
    _require_linux(name)
    _check(_libc().prctl(option, arg, 0, 0, 0), name)


def _unshare(flags: int) -> None:
    result = _libc().unshare(flags)
    if result != 0:
        code = ctypes.get_errno()
        raise _error("unshare", code, UNSHARE_HINTS.get(code))


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def encoded(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    result = _libc().mount(encoded(source), encoded(target), encoded(fstype), flags, encoded(data))
    _check(result, f"mount({target})")


def _write_proc_file(path: str, text: str) -> None:
    try:
        with open(path, "w") as handle:
            handle.write(text)
    except OSError as error:
        raise _error(f"write {path}", error.errno or errno.EIO) from None


# --- the steps -----------------------------------------------------------------------------------------------


def _thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def _map_ids(uid: int, gid: int) -> None:
    """Map the caller's uid and gid to themselves in the new user namespace (setgroups must be denied first)."""
    _write_proc_file("/proc/self/setgroups", "deny")
    _write_proc_file("/proc/self/uid_map", f"{uid} {uid} 1")
    _write_proc_file("/proc/self/gid_map", f"{gid} {gid} 1")


def _make_mounts_private() -> None:
    _mount(None, "/", None, MS_REC | MS_PRIVATE)


def _mount_proc() -> None:
    _mount("proc", "/proc", "proc", PROC_MOUNT_FLAGS)


def _unescape_mount_point(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (\\040, ...)."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), text)


def _mounts_at_or_below(path: str) -> dict[str, int]:
    """Each mount point at or below ``path`` (the topmost mount wins), with the flags it must keep."""
    prefix = path.rstrip("/") + "/"
    mounts: dict[str, int] = {}
    with open("/proc/self/mountinfo", errors="surrogateescape") as handle:
        for line in handle:
            fields = line.split()
            point = _unescape_mount_point(fields[4])
            if point == path or point.startswith(prefix):
                options = fields[5].split(",")
                mounts[point] = sum(flag for option, flag in KEPT_MOUNT_FLAGS.items() if option in options)
    return mounts


def _remount_read_only(point: str, kept: int) -> None:
    _mount(None, point, None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept)


def _bind_read_only(path: str) -> None:
    """Bind ``path`` (and every mount below it) onto itself, then remount each of those read-only."""
    path = os.path.realpath(path)
    _mount(path, path, None, MS_BIND | MS_REC)
    for point, kept in _mounts_at_or_below(path).items():
        _remount_read_only(point, kept)


def _make_everything_read_only(report: _Report) -> None:
    """Remount every mount of the namespace read-only, in place (the copies unshare made, not the originals).

    A mount point the process may not even look up (EACCES: a tracefs below the host's 0700 debugfs, for a
    user who is not root) is left as it is: the process keeps no more access than it had here, so it cannot
    reach that mount later either. Every other failure is reported: that mount stays writable."""
    try:
        mounts = _mounts_at_or_below("/")
    except OSError as error:
        report.missing.append(f"{READ_ONLY_FILESYSTEM}: {_reason(error)}")
        return

    def remount(point: str) -> None:
        try:
            _remount_read_only(point, mounts[point])
        except OSError as error:
            if error.errno != errno.EACCES:
                raise

    report.each(READ_ONLY_FILESYSTEM, mounts, remount)


def _bind_writable(path: str) -> None:
    """Bind ``path`` onto itself (a copy of the now read-only mount), then make that new mount writable."""
    path = os.path.realpath(path)
    _mount(path, path, None, MS_BIND | MS_REC)
    _mount(None, path, None, MS_BIND | MS_REMOUNT | _mounts_at_or_below(path)[path])


def _mount_private_shm() -> None:
    """An empty tmpfs of the namespace's own on /dev/shm: POSIX shared memory and semaphores stay inside."""
    _mount("tmpfs", SHM_DIR, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")


def _confine_writes(policy: SandboxPolicy, report: _Report) -> None:
    _make_everything_read_only(report)
    report.each(WRITABLE_SCRATCH, policy.writable, _bind_writable)
    if os.path.isdir(SHM_DIR):
        report.step(PRIVATE_SHM, _mount_private_shm)


def _hide(path: str) -> None:
    _mount("tmpfs", os.path.realpath(path), "tmpfs", HIDING_MOUNT_FLAGS, "mode=0555")


def _reenter_cwd() -> None:
    """The current directory still points into the mount it was on; look it up again through the new ones."""
    try:
        cwd = os.getcwd()
    except FileNotFoundError:  # deleted: nothing can be created in it anyway
        return
    try:
        os.chdir(cwd)
    except OSError as error:
        raise SandboxError(f"chdir({cwd}) after the mounts failed: {_reason(error)}") from None


def _set_no_new_privs() -> None:
    _prctl(PR_SET_NO_NEW_PRIVS, 1, "prctl(PR_SET_NO_NEW_PRIVS)")


def _last_capability() -> int:
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        return int(handle.read())


def _drop_capabilities() -> None:
    """Empty the ambient, bounding, permitted, effective and inheritable sets.

    The bounding set needs CAP_SETPCAP; a plain user outside any namespace lacks it and keeps the set as it is,
    which no_new_privs (set before this) makes harmless: execve can no longer raise capabilities."""
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, "prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
    for capability in range(_last_capability() + 1):
        try:
            _prctl(PR_CAPBSET_DROP, capability, "prctl(PR_CAPBSET_DROP)")
        except OSError as error:  # _error's OSErrors are never PermissionError: compare the errno
            if error.errno != errno.EPERM:
                raise
            break
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc().capset(ctypes.byref(header), data), "capset")


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


# --- the waiter ----------------------------------------------------------------------------------------------


def _keep_only(fd: int) -> None:
    """Close every descriptor but ``fd``, which becomes WAITER_KEPT_FD; 0, 1 and 2 point at /dev/null."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, WAITER_KEPT_FD)  # out of the way of the dup2s onto 0-2
    null = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):
        os.dup2(null, std)
    os.dup2(high, WAITER_KEPT_FD)
    os.closerange(WAITER_KEPT_FD + 1, MAX_FD)


def _wait_for_child(child: int) -> tuple[int, int | None]:
    """Wait for the child to exit, or for a signal that ends the waiter (WAITER_WATCHED_SIGNALS are blocked).

    Returns the child's wait status and the fatal signal received, if any."""
    while True:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
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


def _serve_as_waiter(child: int, alive: int) -> NoReturn:
    """What the calling process does after the fork, until it exits like its child (never returns)."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # SIG_IGN would reap the child behind our back
        signal.set_wakeup_fd(-1)
        gc.disable()  # no finalizer of the worker's objects may run here (they could close reused fds)
        _keep_only(alive)
        status, received = _wait_for_child(child)
    except BaseException:  # nothing may propagate: the caller would go on as a second worker
        try:
            os.kill(child, signal.SIGKILL)  # not reaped, so the pid is still the child's
        finally:
            os._exit(WAITER_FAILED_STATUS)
    _end_like(status, received)


# --- entering the sandbox ------------------------------------------------------------------------------------


def _split(policy: SandboxPolicy, parent: int) -> Isolation:
    """Fork inside the new namespaces: the caller becomes the waiter, the child (pid 1) returns confined."""
    # Blocked from now on in the waiter (restored in the child): no signal is lost or acted on too early.
    original_mask = signal.pthread_sigmask(signal.SIG_BLOCK, WAITER_WATCHED_SIGNALS)
    try:
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM, "prctl(PR_SET_PDEATHSIG)")  # the waiter's; the child's is reset
        if os.getppid() != parent:  # the parent died before the signal was armed: act as if it had come
            os.kill(os.getpid(), signal.SIGTERM)
        alive_read, alive_write = os.pipe()
        child = os.fork()
    except OSError as error:
        signal.pthread_sigmask(signal.SIG_SETMASK, original_mask)
        raise _error("fork into the new pid namespace", error.errno or errno.EAGAIN) from None
    if child:
        os.close(alive_read)
        _serve_as_waiter(child, alive_write)
    os.close(alive_write)
    signal.pthread_sigmask(signal.SIG_SETMASK, original_mask)
    return _confine(policy, alive_read)


def _confine(policy: SandboxPolicy, alive: int) -> Isolation:
    """pid 1 of the new namespace: the mounts, then give up every privilege that could undo them."""
    report = _Report(["user namespace", "pid namespace", "ipc namespace"])
    report.step("dies with its parent", lambda: _die_with_waiter(alive))
    # A new pid namespace keeps the caller's process group, which lies outside it: kill(0, sig) would still
    # reach the CLI, the forkserver and the judges. Leaving it is not optional.
    try:
        _own_session()
    except OSError as error:
        raise SandboxError(f"leaving the caller's process group failed: {_reason(error)}") from None
    report.applied.append("own session")
    report.step("mount namespace", _make_mounts_private)
    if policy.confine_writes:
        _confine_writes(policy, report)
    if policy.read_only:
        report.each("read-only paths", policy.read_only, _bind_read_only)
    if policy.hidden:
        report.each("hidden paths", policy.hidden, _hide)
    report.step("private /proc", _mount_proc)  # last: see the module docstring
    _reenter_cwd()
    report.step("no new privileges", _set_no_new_privs)
    try:
        _drop_capabilities()
    except OSError as error:  # with capabilities left, the mounts above could be undone: claim nothing
        raise SandboxError(f"dropping capabilities failed: {_reason(error)}") from None
    report.applied.append("no capabilities")
    return report.isolation()


def _fallback(policy: SandboxPolicy, parent: int, reason: str) -> Isolation:
    """No namespaces: what a plain process can do to itself."""
    names = ["user namespace", "pid namespace", "mount namespace", "ipc namespace", "private /proc"]
    if policy.confine_writes:
        names += [READ_ONLY_FILESYSTEM, WRITABLE_SCRATCH, PRIVATE_SHM]
    if policy.read_only:
        names.append("read-only paths")
    if policy.hidden:
        names.append("hidden paths")
    report = _Report(missing=[f"{name}: {reason}" for name in names])
    report.step("dies with its parent", lambda: _die_with_parent(parent))
    report.step("subreaper", lambda: _prctl(PR_SET_CHILD_SUBREAPER, 1, "prctl(PR_SET_CHILD_SUBREAPER)"))
    report.step("own session", _own_session)
    report.step("no new privileges", _set_no_new_privs)
    report.step("no capabilities", _drop_capabilities)
    return report.isolation()


def enter_sandbox(policy: SandboxPolicy) -> Isolation:
    """Confine the calling process as described in the module docstring; returns what is in force.

    In full mode the caller's pid becomes the waiter and never returns from this call: the value is returned
    in a new child, pid 1 of the new pid namespace, which goes on as the worker. Raises SandboxError when the
    namespaces were entered but could not be completed (the caller must then exit)."""
    parent = os.getppid()
    if not sys.platform.startswith("linux"):
        return _fallback(policy, parent, f"not available on {sys.platform}")
    threads = _thread_count()
    if threads > 1:
        return _fallback(policy, parent, f"unshare needs a single-threaded process, this one has {threads} threads")
    uid, gid = os.geteuid(), os.getegid()
    try:
        _unshare(SANDBOX_NAMESPACES)
    except OSError as error:
        return _fallback(policy, parent, _reason(error))
    try:
        _map_ids(uid, gid)
        return _split(policy, parent)
    except OSError as error:
        raise SandboxError(f"setting up the new namespaces failed: {_reason(error)}") from None


# --- probing -------------------------------------------------------------------------------------------------

NO_PATHS = SandboxPolicy()


def _report_probe(policy: SandboxPolicy, report_fd: int) -> NoReturn:
    """The probe's child: enter the sandbox and write what is in force, as JSON, to ``report_fd``."""
    try:
        try:
            isolation = enter_sandbox(policy)
            report = {"applied": list(isolation.applied), "missing": list(isolation.missing)}
        except BaseException as error:  # reported to the parent
            report = {"error": f"{type(error).__name__}: {error}"}
        os.write(report_fd, json.dumps(report).encode())
    finally:
        os._exit(0)


def _parse_probe(data: bytes, status: int) -> Isolation:
    try:
        report = json.loads(data)
    except ValueError:
        report = {"error": f"no report (probe exited with status {os.waitstatus_to_exitcode(status)})"}
    if "error" in report:
        return Isolation((), (f"sandbox: {report['error']}",))
    return Isolation(tuple(report["applied"]), tuple(report["missing"]))


@functools.cache
def probe_isolation(policy: SandboxPolicy = NO_PATHS) -> Isolation:
    """What this machine allows: a throwaway child enters the sandbox and reports back. Cached per policy."""
    _libc()  # loaded before the fork: no dlopen in a child of a multi-threaded process
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():  # Python >= 3.12 warns about fork() in a threaded process; the child
        warnings.simplefilter("ignore", DeprecationWarning)  # only makes system calls and writes to a pipe
        pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _report_probe(policy, write_fd)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    return _parse_probe(data, status)


# --- terminating ---------------------------------------------------------------------------------------------


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

"""The file system a confined worker sees: a new root that shows what a solution needs and nothing else.

Built the way container runtimes build one, in the worker's own mount namespace: a tmpfs mounted over /tmp
becomes the root for a while (``pivot_root``), with the host's root below it at /oldroot; a second tmpfs,
/newroot, receives bind mounts of the paths to show (from /oldroot); then /newroot becomes the root and the
host's tree is detached. What is not bound does not exist for the worker: no other directory, no host socket,
FIFO or device node (a unix socket on a read-only mount can still be connected to, so hiding is the only
protection that holds for them).

Shown, read-only (every mount below each included): the system directories (``SYSTEM_PATHS``, symlinks such as
/bin -> usr/bin recreated), the policy's ``read_only`` paths. Shown writable (nosuid, nodev): the ``writable``
directories. Made for the worker: a minimal /dev (tmpfs, read-only, with the character devices in ``DEV_NODES``
and the GPU's nodes bound from the host, a private /dev/shm), a fresh /proc of its pid namespace with the
kernel's settings read-only and its secrets masked (``READ_ONLY_PROC``, ``MASKED_PROC``), /sys read-only. The
root itself is a read-only tmpfs: nothing can be created outside the writable directories and /dev/shm.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

from flashinfer_bench.bench.worker.sandbox.mounts import (
    HIDING_MOUNT_FLAGS,
    PROC_MOUNT_FLAGS,
    _mounts_at_or_below,
    _remount_read_only,
)
from flashinfer_bench.bench.worker.sandbox.policy import (
    FILE_SYSTEM_VIEW,
    MINIMAL_DEV,
    PRIVATE_SHM,
    PROTECTED_PROC,
    READ_ONLY_SYS,
    WRITABLE_SCRATCH,
    SandboxPolicy,
    _at_or_below,
    _Report,
)
from flashinfer_bench.bench.worker.sandbox.syscalls import (
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    _mount,
    _pivot_root,
    _umount,
)

#: Shown read-only to every confined worker when they exist (the libraries, compilers and settings any program
#: needs); Python's and CUDA's installs elsewhere come through the policy's ``read_only`` paths.
SYSTEM_PATHS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
#: Character devices every program may open; the GPU's nodes (``GPU_NODES``) when the host has them.
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
GPU_NODES = ("/dev/nvidia*", "/dev/nvidia-caps")
DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
             "stderr": "/proc/self/fd/2"}
#: In the fresh /proc, what container runtimes protect: kernel settings and triggers read-only, kernel memory,
#: keys and timers masked (files by /dev/null, folders by an empty tmpfs).
READ_ONLY_PROC = ("sys", "sysrq-trigger", "irq", "bus", "fs")
MASKED_PROC = ("kcore", "keys", "timer_list", "timer_stats", "sched_debug", "latency_stats", "kallsyms", "acpi",
               "asound", "scsi")
#: A mount point every Linux has, where the first, temporary root goes.
STAGING = "/tmp"
OLD_ROOT = "/oldroot"
NEW_ROOT = "/newroot"
SYSFS_FLAGS = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC


@dataclass(frozen=True)
class _Bind:
    path: str  #: the real path on the host, shown at the same path
    writable: bool


@dataclass(frozen=True)
class _Plan:
    binds: tuple[_Bind, ...]
    links: tuple[tuple[str, str], ...]  #: (path, target) symlinks the host has at shown paths
    devices: tuple[str, ...]  #: host device nodes (and folders of them) to show under /dev
    missing: tuple[str, ...]  #: policy paths that do not exist


def _plan(policy: SandboxPolicy) -> _Plan:
    """What to show, worked out on the host's tree (before any mount): real paths, and the symlinks to them."""
    binds: dict[str, bool] = {}
    links: list[tuple[str, str]] = []
    missing: list[str] = []
    wanted = [(path, False, True) for path in SYSTEM_PATHS]
    wanted += [(path, False, False) for path in policy.read_only]
    wanted += [(path, True, False) for path in policy.writable]
    for path, writable, optional in wanted:
        path = os.path.abspath(path)
        if not os.path.exists(path):
            if not optional:
                missing.append(path)
            continue
        if os.path.islink(path):
            links.append((path, os.readlink(path)))
        real = os.path.realpath(path)
        binds[real] = binds.get(real, False) or writable
    devices = [f"/dev/{name}" for name in DEV_NODES if os.path.exists(f"/dev/{name}")]
    devices += sorted({path for pattern in GPU_NODES for path in glob.glob(pattern)})
    return _Plan(_needed(binds), tuple(links), tuple(devices), tuple(missing))


def _needed(binds: dict[str, bool]) -> tuple[_Bind, ...]:
    """Parents first; a path already shown the same way by a shown folder above it is left out."""
    kept: list[_Bind] = []
    for path in sorted(binds, key=lambda p: (p.count("/"), p)):
        covering = [bind for bind in kept if _at_or_below(path, bind.path)]
        if covering and covering[-1].writable == binds[path]:
            continue
        kept.append(_Bind(path, binds[path]))
    return tuple(kept)


def _mount_point(target: str, like: str) -> None:
    """An empty folder or file at ``target`` (in the new root's tmpfs), as ``like`` (a host path) is."""
    if os.path.lexists(target):
        return
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.isdir(like):
        os.mkdir(target)
    else:
        with open(target, "x"):
            pass


def _bind(source: str, target: str, writable: bool) -> None:
    """Bind ``source`` (and the mounts below it) at ``target``: read-only throughout, or writable at its top
    (nosuid, nodev) with the mounts below it read-only."""
    _mount_point(target, source)
    _mount(source, target, None, MS_BIND | MS_REC)
    for point, kept in _mounts_at_or_below(target, OLD_ROOT + "/proc").items():
        if writable and point == target:
            _mount(None, point, None, MS_BIND | MS_REMOUNT | kept | MS_NOSUID | MS_NODEV)
        else:
            _remount_read_only(point, kept)


def _enter_staging() -> None:
    """A tmpfs over /tmp becomes the root; the host's root goes to /oldroot, the new root's tmpfs to /newroot."""
    _mount("tmpfs", STAGING, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    os.mkdir(STAGING + OLD_ROOT)
    _pivot_root(STAGING, STAGING + OLD_ROOT)
    os.chdir("/")
    os.mkdir(NEW_ROOT)
    _mount("tmpfs", NEW_ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")


def _make_dev(devices: tuple[str, ...]) -> None:
    dev = NEW_ROOT + "/dev"
    os.mkdir(dev)
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755")
    for device in devices:
        _bind(OLD_ROOT + device, NEW_ROOT + device, writable=False)
    for name, target in DEV_LINKS.items():
        os.symlink(target, f"{dev}/{name}")
    os.mkdir(f"{dev}/shm")
    _remount_read_only(dev, MS_NOSUID | MS_NOEXEC)


def _mount_private_shm() -> None:
    """An empty tmpfs of the namespace's own: POSIX shared memory and semaphores stay inside."""
    _mount("tmpfs", NEW_ROOT + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")


def _protect_proc() -> None:
    proc = NEW_ROOT + "/proc"
    for name in READ_ONLY_PROC:
        path = f"{proc}/{name}"
        if os.path.exists(path):
            _mount(path, path, None, MS_BIND | MS_REC)
            for point, kept in _mounts_at_or_below(path, OLD_ROOT + "/proc").items():
                _remount_read_only(point, kept)
    for name in MASKED_PROC:
        path = f"{proc}/{name}"
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", HIDING_MOUNT_FLAGS, "mode=0555")
        elif os.path.exists(path):
            _mount(NEW_ROOT + "/dev/null", path, None, MS_BIND)


def _mount_proc_and_sys(report: _Report) -> None:
    """A fresh /proc of the pid namespace (else nothing: the host's would show every process), then /sys:
    a fresh sysfs of the network namespace, read-only (else the host's, bound read-only)."""
    os.mkdir(NEW_ROOT + "/proc")
    report.step("private /proc", lambda: _mount("proc", NEW_ROOT + "/proc", "proc", PROC_MOUNT_FLAGS))
    if "private /proc" in report.applied:
        report.step(PROTECTED_PROC, _protect_proc)

    def mount_sys() -> None:
        try:
            _mount("sysfs", NEW_ROOT + "/sys", "sysfs", SYSFS_FLAGS)
        except OSError:
            _bind(OLD_ROOT + "/sys", NEW_ROOT + "/sys", writable=False)

    os.mkdir(NEW_ROOT + "/sys")
    report.step(READ_ONLY_SYS, mount_sys)


def _hide_in_view(path: str) -> None:
    """An empty read-only tmpfs over ``path`` where the view shows it (through a shown folder above it)."""
    target = NEW_ROOT + os.path.realpath(path)
    if os.path.isdir(target):
        _mount("tmpfs", target, "tmpfs", HIDING_MOUNT_FLAGS, "mode=0555")


def _switch_root() -> None:
    """Make /newroot the root and detach everything else (the host's tree and the staging tmpfs)."""
    _remount_read_only(NEW_ROOT, MS_NOSUID | MS_NODEV)
    _umount(OLD_ROOT)
    staging = os.open("/", os.O_DIRECTORY | os.O_RDONLY)
    try:
        os.chdir(NEW_ROOT)
        _pivot_root(".", ".")  # the staging root now lies over the new one, at "/"
        os.fchdir(staging)
        _umount(".")
    finally:
        os.close(staging)
    os.chdir("/")


def _build_view(policy: SandboxPolicy, report: _Report) -> None:
    """The new root, as the module docstring describes; each step's success or failure goes to ``report``.
    Raises OSError when the root itself could not be switched (nothing of the view is then in force)."""
    plan = _plan(policy)
    hidden = [os.path.realpath(path) for path in policy.hidden]
    _enter_staging()
    failures = [f"{path}: does not exist" for path in plan.missing]
    writable_failed = any(_at_or_below(path, writable) for path in plan.missing for writable in policy.writable)
    for bind in plan.binds:
        try:
            _bind(OLD_ROOT + bind.path, NEW_ROOT + bind.path, bind.writable)
        except OSError as error:
            failures.append(f"{bind.path}: {error.strerror or error}")
            writable_failed = writable_failed or bind.writable
    for path, target in plan.links:
        if not os.path.lexists(NEW_ROOT + path):
            os.makedirs(os.path.dirname(NEW_ROOT + path), exist_ok=True)
            os.symlink(target, NEW_ROOT + path)
    if failures:
        report.missing.append(f"{FILE_SYSTEM_VIEW}: {'; '.join(failures)}")
    else:
        report.applied.append(FILE_SYSTEM_VIEW)
    if policy.writable and not writable_failed:
        report.applied.append(WRITABLE_SCRATCH)
    report.step(MINIMAL_DEV, lambda: _make_dev(plan.devices))
    report.step(PRIVATE_SHM, _mount_private_shm)
    _mount_proc_and_sys(report)
    if hidden:
        report.each("hidden paths", hidden, _hide_in_view)
    _switch_root()

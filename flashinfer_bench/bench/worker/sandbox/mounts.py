"""The file system view: a private mount namespace, everything read-only but the scratch directory, hidden
directories, a private /dev/shm and a fresh /proc."""

from __future__ import annotations

import errno
import os
import re

from flashinfer_bench.bench.worker.sandbox.policy import (
    PRIVATE_SHM,
    READ_ONLY_FILESYSTEM,
    WRITABLE_SCRATCH,
    SandboxError,
    SandboxPolicy,
    _Report,
)
from flashinfer_bench.bench.worker.sandbox.syscalls import (
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_NOSYMFOLLOW,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    _mount,
    _reason,
)

#: Per-mount flags a read-only remount must pass again: a mount inherited from a more privileged namespace has
#: them locked, and a remount that would clear one fails with EPERM. (Atime flags are kept by the kernel.)
KEPT_MOUNT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "nosymfollow": MS_NOSYMFOLLOW}
HIDING_MOUNT_FLAGS = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
PROC_MOUNT_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC
SHM_DIR = "/dev/shm"


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

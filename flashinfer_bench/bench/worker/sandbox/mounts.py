"""Mounts on the host's tree, in the worker's private mount namespace: read-only and hidden paths, a fresh /proc
(what a policy without ``confine_writes`` gets; with it, ``view.py`` builds a new root from these pieces)."""

from __future__ import annotations

import os
import re

from flashinfer_bench.bench.worker.sandbox.policy import SandboxError
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


def _make_mounts_private() -> None:
    _mount(None, "/", None, MS_REC | MS_PRIVATE)


def _mount_proc() -> None:
    _mount("proc", "/proc", "proc", PROC_MOUNT_FLAGS)


def _unescape_mount_point(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (\\040, ...)."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), text)


def _mounts_at_or_below(path: str, proc: str = "/proc") -> dict[str, int]:
    """Each mount point at or below ``path`` (the topmost mount wins), with the flags it must keep; ``proc``
    is where a proc file system is mounted (mount points are given relative to the caller's root)."""
    prefix = path.rstrip("/") + "/"
    mounts: dict[str, int] = {}
    with open(f"{proc}/self/mountinfo", errors="surrogateescape") as handle:
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


def _hide(path: str) -> None:
    _mount("tmpfs", os.path.realpath(path), "tmpfs", HIDING_MOUNT_FLAGS, "mode=0555")


def _reenter_cwd(cwd: str | None, fallback: str) -> None:
    """The current directory still points into the mount it was on: look it up again through the new ones
    (or, where the view does not show it, go to ``fallback``)."""
    if cwd is None:
        return
    try:
        os.chdir(cwd)
    except FileNotFoundError:
        os.chdir(fallback)
    except OSError as error:
        raise SandboxError(f"chdir({cwd}) after the mounts failed: {_reason(error)}") from None

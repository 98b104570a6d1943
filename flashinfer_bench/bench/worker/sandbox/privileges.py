"""Giving up what could undo the sandbox: ids mapped into the user namespace, no capabilities, no_new_privs."""

from __future__ import annotations

import ctypes
import errno

from flashinfer_bench.bench.worker.sandbox.syscalls import (
    LINUX_CAPABILITY_VERSION_3,
    PR_CAP_AMBIENT,
    PR_CAP_AMBIENT_CLEAR_ALL,
    PR_CAPBSET_DROP,
    PR_SET_NO_NEW_PRIVS,
    _CapData,
    _CapHeader,
    _check,
    _libc,
    _prctl,
    _write_proc_file,
)


def _map_ids(uid: int, gid: int) -> None:
    """Map the caller's uid and gid to themselves in the new user namespace (setgroups must be denied first)."""
    _write_proc_file("/proc/self/setgroups", "deny")
    _write_proc_file("/proc/self/uid_map", f"{uid} {uid} 1")
    _write_proc_file("/proc/self/gid_map", f"{gid} {gid} 1")


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

"""The system calls the sandbox makes (through libc: unshare, mount, prctl, capset), and their errors."""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
SANDBOX_NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOSYMFOLLOW = 0x100
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522


UNSHARE_HINTS = {
    errno.EPERM: "unprivileged user namespaces disabled?",
    errno.ENOSPC: "user.max_user_namespaces is 0 or reached?",
    errno.EINVAL: "multi-threaded process?",
}


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
        libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
        libc.syscall.restype = ctypes.c_long
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


def _umount(target: str) -> None:
    """Detach ``target`` and every mount below it (lazily: open files keep what they reach)."""
    _check(_libc().umount2(os.fsencode(target), MNT_DETACH), f"umount({target})")


#: pivot_root has no libc wrapper; its number on the architectures CUDA machines run.
PIVOT_ROOT_SYSCALL = {"x86_64": 155, "aarch64": 41, "ppc64le": 203}


def _pivot_root(new_root: str, put_old: str) -> None:
    number = PIVOT_ROOT_SYSCALL.get(os.uname().machine)
    if number is None:
        raise _error("pivot_root", errno.ENOSYS, f"its system call number on {os.uname().machine} is not known")
    result = _libc().syscall(ctypes.c_long(number), os.fsencode(new_root), os.fsencode(put_old))
    _check(int(result), f"pivot_root({new_root})")


def _write_proc_file(path: str, text: str) -> None:
    try:
        with open(path, "w") as handle:
            handle.write(text)
    except OSError as error:
        raise _error(f"write {path}", error.errno or errno.EIO) from None

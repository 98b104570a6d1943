"""What this machine allows: a throwaway child enters the sandbox and reports what is in force."""

from __future__ import annotations

import functools
import json
import os
import warnings
from typing import NoReturn

from flashinfer_bench.bench.worker.sandbox.enter import enter_sandbox
from flashinfer_bench.bench.worker.sandbox.policy import Isolation, SandboxPolicy
from flashinfer_bench.bench.worker.sandbox.syscalls import _libc

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

"""Resource limits a sandboxed process cannot lift: rlimits it sets on itself (hard limits, and no
CAP_SYS_RESOURCE left to raise them), and the cgroup its parent made for it (processes, memory).

RLIMIT_NPROC is not used: it counts every process of the real user id on the machine, and does not bind uid 0
at all; the pids cgroup is what limits processes."""

from __future__ import annotations

import errno
import os
import resource
from dataclasses import dataclass, fields

GIB = 1 << 30
MIB = 1 << 20

RLIMITS = {"open_files": resource.RLIMIT_NOFILE, "file_size_bytes": resource.RLIMIT_FSIZE,
           "cpu_seconds": resource.RLIMIT_CPU, "address_space_bytes": resource.RLIMIT_AS}
LABELS = {"open_files": "open files", "file_size_bytes": "file size", "cpu_seconds": "CPU time",
          "address_space_bytes": "address space", "processes": "processes", "memory_bytes": "memory"}
#: What an OSError of a call that ran into an rlimit carries.
LIMIT_ERRNOS = {errno.EMFILE: "open_files", errno.EFBIG: "file_size_bytes"}


def _size(value: int) -> str:
    return f"{value / GIB:.3g} GiB" if value >= GIB else f"{value / MIB:.3g} MiB"


@dataclass(frozen=True)
class ResourceLimits:
    """None: not limited. The first four are rlimits, the last two the cgroup's."""

    open_files: int | None = None
    file_size_bytes: int | None = None
    cpu_seconds: int | None = None
    #: Virtual memory: only where nothing reserves huge ranges of it (CUDA does; the CPU device only).
    address_space_bytes: int | None = None
    processes: int | None = None
    memory_bytes: int | None = None

    def value(self, name: str) -> str:
        amount = getattr(self, name)
        if name in ("file_size_bytes", "address_space_bytes", "memory_bytes"):
            return _size(amount)
        return f"{amount} s" if name == "cpu_seconds" else str(amount)

    def describe(self, names: tuple[str, ...]) -> str:
        """"open files 1024, CPU time 60 s" for those of ``names`` that are set."""
        return ", ".join(f"{LABELS[name]} {self.value(name)}" for name in names if getattr(self, name) is not None)

    def rlimits(self) -> str:
        return self.describe(tuple(RLIMITS))

    def cgroup(self) -> str:
        return self.describe(("processes", "memory_bytes"))

    def wants_cgroup(self) -> bool:
        return self.processes is not None or self.memory_bytes is not None

    def note_for(self, error: BaseException) -> str | None:
        """Which limit an exception raised in the sandboxed process ran into, if one did (for its log)."""
        name = LIMIT_ERRNOS.get(getattr(error, "errno", None)) if isinstance(error, OSError) else None
        if isinstance(error, MemoryError) or (isinstance(error, RuntimeError) and "can't allocate memory" in str(error)):
            name = "address_space_bytes" if self.address_space_bytes is not None else None
        if name is None or getattr(self, name) is None:
            return None
        return f"the worker ran into its {LABELS[name]} limit ({self.value(name)})"


def _set_rlimits(limits: ResourceLimits) -> None:
    """Soft and hard limit alike, never above the hard limit already in force."""
    for field in fields(limits):
        which = RLIMITS.get(field.name)
        wanted = getattr(limits, field.name)
        if which is None or wanted is None:
            continue
        _, hard = resource.getrlimit(which)
        value = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(which, (value, value))


def _join_cgroups(directories: tuple[str, ...]) -> None:
    """Move the calling process into each cgroup (its children follow it)."""
    for directory in directories:
        with open(os.path.join(directory, "cgroup.procs"), "w") as handle:
            handle.write(str(os.getpid()))

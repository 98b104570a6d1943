"""What a sandbox is asked for (``SandboxPolicy``) and what it got (``Isolation``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from flashinfer_bench.bench.worker.sandbox.limits import ResourceLimits
from flashinfer_bench.bench.worker.sandbox.syscalls import _reason

#: Names of steps in ``Isolation.applied`` / ``missing`` (the CLI prints them at start-up).
FILE_SYSTEM_VIEW = "file system view"
WRITABLE_SCRATCH = "writable: scratch only"
PRIVATE_SHM = "private /dev/shm"
MINIMAL_DEV = "minimal /dev"
PROTECTED_PROC = "read-only /proc/sys"
READ_ONLY_SYS = "read-only /sys"
NETWORK_NAMESPACE = "network namespace"
NO_INHERITED_FDS = "no inherited descriptors"


def _at_or_below(path: str, top: str) -> bool:
    path, top = os.path.realpath(path), os.path.realpath(top)
    return path == top or path.startswith(top.rstrip("/") + "/")


class SandboxError(RuntimeError):
    """The namespaces were entered but could not be completed; the process must not run solution code."""


@dataclass(frozen=True)
class SandboxPolicy:
    #: Existing paths (files or directories) the sandboxed process must not be able to write; under
    #: ``confine_writes``, the paths it sees (read-only) besides the system's (view.SYSTEM_PATHS).
    read_only: tuple[str, ...] = ()
    #: Existing directories whose contents it must not see or reach; an empty read-only tmpfs covers them.
    hidden: tuple[str, ...] = ()
    #: Existing directories that stay writable under ``confine_writes`` (mounts below them stay read-only).
    writable: tuple[str, ...] = ()
    #: Show the process a new root (view.py): the system's directories, ``read_only`` and ``writable`` and
    #: nothing else, with a minimal /dev, a private /dev/shm, a protected /proc and a read-only /sys.
    confine_writes: bool = False
    #: None: descriptors are left as they are. Else every descriptor but these is closed once inside (0, 1 and
    #: 2 point at /dev/null), and multiprocessing's resource tracker is forgotten.
    keep_fds: tuple[int, ...] | None = None
    #: rlimits set before the capabilities are dropped (hard limits: the process cannot raise them again).
    limits: ResourceLimits = ResourceLimits()
    #: cgroup directories (one per v1 hierarchy, or one of v2) the process moves into before it unshares; the
    #: caller made them and set their limits (``limits.processes`` and ``memory_bytes`` describe those).
    cgroups: tuple[str, ...] = ()

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

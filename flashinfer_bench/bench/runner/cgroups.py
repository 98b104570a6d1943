"""A cgroup per worker, made and removed by the parent: how many processes (threads included) and how much
memory everything the worker starts may use together.

cgroup v1 (a hierarchy per controller, as on hybrid hosts): a child of this process's own cgroup in the pids and
the memory hierarchy. cgroup v2: a child of this process's own cgroup, where that one delegates both
controllers (``cgroup.subtree_control``). Where neither can be made (no permission, nothing delegated), there is
no cgroup and the worker says so at start-up. The worker moves itself in before it unshares (so the waiter and
every process of its namespace are in it) and cannot move out: /sys/fs/cgroup is not in its view.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from flashinfer_bench.bench.worker.sandbox.limits import ResourceLimits

CGROUP_ROOT = Path("/sys/fs/cgroup")
REMOVE_ATTEMPTS = 50
REMOVE_INTERVAL_S = 0.02
_names = itertools.count()
#: Names of the cgroups this module makes: the pid of the process that made them, then a counter.
NAME = re.compile(r"fib-worker-(\d+)-\d+")


def _own_path(controller: str) -> str | None:
    """This process's cgroup in ``controller``'s v1 hierarchy (``""``: v2's), from /proc/self/cgroup."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers.split(",") == [controller] or (controller == "" and controllers == ""):
            return path
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep(parent: Path) -> None:
    """Remove the cgroups a process that is gone left under ``parent`` (a CLI that was killed could not): only
    empty ones go (rmdir refuses the others)."""
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            match = NAME.fullmatch(entry.name)
            if match and not _alive(int(match.group(1))):
                with contextlib.suppress(OSError):
                    entry.rmdir()


def _counter(path: Path, key: str) -> int:
    """The value of ``key`` in a flat keyed cgroup file ("max 3", "oom_kill 1"), 0 where there is none."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


@dataclass
class WorkerCgroup:
    directories: tuple[Path, ...]
    limits: ResourceLimits
    #: Where the counters of limits reached are: (file, key, the ResourceLimits field), and their values last seen.
    counters: tuple[tuple[Path, str, str], ...]
    seen: dict[Path, int]

    @classmethod
    def create(cls, limits: ResourceLimits) -> WorkerCgroup | None:
        """A new cgroup with ``limits.processes`` and ``memory_bytes``, or None where none can be made."""
        if not limits.wants_cgroup():
            return None
        name = f"fib-worker-{os.getpid()}-{next(_names)}"
        for make in (cls._v1, cls._v2):
            made: list[Path] = []
            try:
                group = make(name, limits, made)
            except OSError:
                group = None
            if group is not None:
                return group
            for directory in reversed(made):
                with contextlib.suppress(OSError):
                    directory.rmdir()
        return None

    @classmethod
    def _v1(cls, name: str, limits: ResourceLimits, made: list[Path]) -> WorkerCgroup | None:
        pids, memory = _own_path("pids"), _own_path("memory")
        if pids is None or memory is None:
            return None
        pids_dir = CGROUP_ROOT / "pids" / pids.lstrip("/") / name
        memory_dir = CGROUP_ROOT / "memory" / memory.lstrip("/") / name
        for directory in (pids_dir, memory_dir):
            _sweep(directory.parent)
            directory.mkdir()
            made.append(directory)
        if limits.processes is not None:
            (pids_dir / "pids.max").write_text(str(limits.processes))
        if limits.memory_bytes is not None:
            (memory_dir / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
        counters = ((pids_dir / "pids.events", "max", "processes"),
                    (memory_dir / "memory.oom_control", "oom_kill", "memory_bytes"))
        return cls((pids_dir, memory_dir), limits, counters, {})

    @classmethod
    def _v2(cls, name: str, limits: ResourceLimits, made: list[Path]) -> WorkerCgroup | None:
        own = _own_path("")
        if own is None or not (CGROUP_ROOT / "cgroup.controllers").is_file():
            return None
        parent = CGROUP_ROOT / own.lstrip("/")
        delegated = (parent / "cgroup.subtree_control").read_text().split()
        if not {"pids", "memory"} <= set(delegated):
            return None
        directory = parent / name
        _sweep(parent)
        directory.mkdir()
        made.append(directory)
        if limits.processes is not None:
            (directory / "pids.max").write_text(str(limits.processes))
        if limits.memory_bytes is not None:
            (directory / "memory.max").write_text(str(limits.memory_bytes))
            with contextlib.suppress(OSError):
                (directory / "memory.swap.max").write_text("0")
        counters = ((directory / "pids.events", "max", "processes"),
                    (directory / "memory.events", "oom_kill", "memory_bytes"))
        return cls((directory,), limits, counters, {})

    def reached(self) -> list[str]:
        """The limits the worker ran into since the last call, each as a sentence for its log."""
        notes = []
        for path, key, limit in self.counters:
            count = _counter(path, key)
            if count > self.seen.get(path, 0):
                what = "a fork or thread was refused" if limit == "processes" else "a process was killed"
                notes.append(f"the worker reached its cgroup limit on {self.limits.describe((limit,))}: {what}")
            self.seen[path] = count
        return notes

    def remove(self) -> None:
        """Remove the cgroup once every process in it is gone (a dying namespace takes a moment to empty)."""
        for directory in self.directories:
            for _ in range(REMOVE_ATTEMPTS):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(REMOVE_INTERVAL_S)


"""``ProcessRunner``: a pool of local processes, one DeviceSlot per device (a judge and its workers), fed by one
thread each, reporting each verdict the moment it exists. See judge.py and worker.py for the processes, and
base.py for the interface it implements.
"""

from __future__ import annotations

import logging
import os
import queue
import shutil
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from flashinfer_bench.bench.capture import take_captured
from flashinfer_bench.bench.process_setup import PROFILE_DIR_ENV
from flashinfer_bench.bench.runner.base import OnVerdict, Runner, Verdict
from flashinfer_bench.bench.runner.device_slot import DeviceSlot
from flashinfer_bench.bench.runner.prebuilder import PreBuilder
from flashinfer_bench.bench.runner.run_state import RunState
from flashinfer_bench.bench.runner.worker_view import (
    cuda_paths,
    default_limits,
    python_paths,
    toolchain_paths,
)
from flashinfer_bench.bench.wire.parent_judge import WorkItem
from flashinfer_bench.bench.worker.sandbox import ResourceLimits, SandboxPolicy
from flashinfer_bench.compile.cache import resolve_cache_root

logger = logging.getLogger(__name__)


class ProcessRunner(Runner):
    """Local worker processes. ``items_per_worker=None``: persistent workers (one per solution per group);
    ``1``: a fresh process per item."""

    def __init__(self, devices: Sequence[str], *, timeout_seconds: float, items_per_worker: int | None = None,
                 cache_dir: str | None = None, limits: ResourceLimits | None = None):
        self.timeout_seconds = timeout_seconds
        self._log_dir = tempfile.mkdtemp(prefix="fib-logs-")
        policy = worker_policy(hidden=[self._log_dir], limits=limits)
        cache_root = resolve_cache_root(cache_dir)
        self.slots = [DeviceSlot(d, cache_root, policy, items_per_worker=items_per_worker) for d in devices]
        #: Builds the coming items' compiled solutions while the devices time the current ones.
        self.prebuilder = PreBuilder(cache_root, policy, devices[0])
        self._announced: set[str] = set()
        self.state = RunState()
        self._lock = threading.Lock()
        #: Set by ``close``: serving threads take no further item (an interrupted run closes while they run).
        self._closing = threading.Event()

    @property
    def parallelism(self) -> int:
        return len(self.slots)

    def run(self, groups: Iterable[Sequence[WorkItem]], on_verdict: OnVerdict) -> None:
        pending: queue.Queue[Sequence[WorkItem]] = queue.Queue()
        groups = list(groups)
        for slot in self.slots:
            slot.show_for(item for group in groups for item in group)
        for group in groups:
            pending.put(group)
        self.prebuilder.plan((item.solution for group in groups for item in group),
                             starting=[group[0].solution for group in groups[:len(self.slots)] if group])
        errors: list[BaseException] = []

        def serve(slot: DeviceSlot) -> None:
            try:
                while not self._closing.is_set():
                    try:
                        group = pending.get_nowait()
                    except queue.Empty:
                        return
                    for item in group:
                        if self._closing.is_set():
                            return
                        self._run_one(slot, item, on_verdict)
            except BaseException as exc:  # noqa: BLE001 - surfaced in the calling thread below
                errors.append(exc)

        threads = [threading.Thread(target=serve, args=(slot,), daemon=True) for slot in self.slots]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]

    def _run_one(self, slot: DeviceSlot, item: WorkItem, on_verdict: OnVerdict) -> None:
        self.prebuilder.claim(item.solution)
        item = self.state.prepare(item)
        log_path = os.path.join(self._log_dir, f"{slot.device.replace(':', '_')}-{threading.get_ident()}.log")
        outcome, environment = slot.run(item, log_path, self.timeout_seconds,
                                        lambda uuid, timing: self.state.references.learn(
                                            (item.definition.name, uuid), timing))
        self._announce(slot.isolation())
        verdict = Verdict(item, outcome, environment, take_captured(log_path))
        with self._lock:
            on_verdict(verdict)

    def _announce(self, isolation: str | None) -> None:
        """Say once which protections workers run with (each by name); loudly when one is missing."""
        with self._lock:
            if isolation is None or isolation in self._announced:
                return
            self._announced.add(isolation)
        full = isolation.startswith("full isolation")
        logger.log(logging.INFO if full else logging.WARNING, "solution code runs with %s", isolation)

    def renew_secret(self) -> None:
        self.state.renew_secret()

    def close(self) -> None:
        self._closing.set()
        self.prebuilder.close()
        for slot in self.slots:
            slot.close()
        shutil.rmtree(self._log_dir, ignore_errors=True)


def worker_policy(hidden: Sequence[str], limits: ResourceLimits | None = None) -> SandboxPolicy:
    """What workers see and may do: a view of the system's, Python's and CUDA's directories (worker_view.py),
    writable only in their own scratch directory (given per worker: see process.WorkerProcess), where neither
    ``hidden`` nor multiprocessing's directory (the forkserver's socket) can be seen even if a shown directory
    holds them; within ``limits`` (default: worker_view.default_limits)."""
    import multiprocessing.util

    hidden_dirs = {str(Path(p).resolve()) for p in (*hidden, multiprocessing.util.get_temp_dir())}
    return SandboxPolicy(confine_writes=True, read_only=(*python_paths(), *cuda_paths(), *toolchain_paths()),
                         hidden=tuple(sorted(hidden_dirs)), writable=profile_dirs(),
                         limits=limits if limits is not None else default_limits())


def profile_dirs() -> tuple[str, ...]:
    """Where a profiled run's workers write their profiles (device_setup.profiled): the one directory beyond
    their scratch they may write, and only when the person running the benchmark asked for profiles."""
    directory = os.environ.get(PROFILE_DIR_ENV)
    return (str(Path(directory).resolve()),) if directory and Path(directory).is_dir() else ()


def persistent_runner(devices: Sequence[str], *, timeout_seconds: float, cache_dir: str | None = None,
                      limits: ResourceLimits | None = None) -> ProcessRunner:
    """A worker per solution per group on each device, kept for all its items (plus a warm spare)."""
    return ProcessRunner(devices, timeout_seconds=timeout_seconds, items_per_worker=None, cache_dir=cache_dir,
                         limits=limits)


def isolated_runner(devices: Sequence[str], *, timeout_seconds: float, cache_dir: str | None = None,
                    limits: ResourceLimits | None = None) -> ProcessRunner:
    """A fresh worker process for every (solution, workload)."""
    return ProcessRunner(devices, timeout_seconds=timeout_seconds, items_per_worker=1, cache_dir=cache_dir,
                         limits=limits)

"""Runners hand work items to device workers and report each verdict the moment it exists.

``Runner`` is the interface the Benchmark uses; ``ProcessRunner`` implements it with local worker processes,
one DeviceSlot per device, fed by one thread each. A runner backed by Ray actors (one per GPU of a cluster)
implements the same ``run`` over the same picklable WorkItem / WorkOutcome. Each device has a judge process
(verdicts) and worker processes (solution code); see judge.py and worker.py.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import shutil
import sys
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from flashinfer_bench.bench.evaluators.context import new_run_secret
from flashinfer_bench.bench.runner.capture import read_bounded
from flashinfer_bench.bench.runner.device_slot import DeviceSlot
from flashinfer_bench.bench.runner.protocol import WorkItem, WorkOutcome
from flashinfer_bench.bench.runner.sandbox import SandboxPolicy

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Verdict:
    item: WorkItem
    outcome: WorkOutcome
    environment: dict[str, Any]
    captured_output: str


OnVerdict = Callable[[Verdict], None]


class Runner(ABC):
    @abstractmethod
    def run(self, groups: Iterable[Sequence[WorkItem]], on_verdict: OnVerdict) -> None:
        """Evaluate every item; items of one group (one workload) go to one device, in order."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release workers."""

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ProcessRunner(Runner):
    """Local worker processes. ``items_per_worker=None``: persistent workers; ``1``: a fresh process per item."""

    def __init__(self, devices: Sequence[str], *, timeout_seconds: float, items_per_worker: int | None = None,
                 protected: Sequence[str] = (),
                 cache_dir: str | None = None):
        self.timeout_seconds = timeout_seconds
        self._log_dir = tempfile.mkdtemp(prefix="fib-logs-")
        policy = worker_policy(protected, hidden=[self._log_dir], cache_dir=cache_dir)
        self.slots = [DeviceSlot(d, cache_dir, policy, items_per_worker=items_per_worker) for d in devices]
        self._announced: set[str] = set()
        self.reference_latency: dict[tuple[str, str], float | None] = {}
        #: Every input seed of this run derives from it; it goes to judges only.
        self.secret = new_run_secret()
        self._lock = threading.Lock()

    def run(self, groups: Iterable[Sequence[WorkItem]], on_verdict: OnVerdict) -> None:
        pending: queue.Queue[Sequence[WorkItem]] = queue.Queue()
        for group in groups:
            pending.put(group)
        errors: list[BaseException] = []

        def serve(slot: DeviceSlot) -> None:
            try:
                while True:
                    try:
                        group = pending.get_nowait()
                    except queue.Empty:
                        return
                    for item in group:
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
        key = item.workload_key
        with self._lock:
            known = self.reference_latency.get(key)
        item = replace(item, secret=self.secret,
                       reference_latency_ms=known if known is not None else item.reference_latency_ms)

        def remember(latency: float | None) -> None:
            if latency is not None:
                with self._lock:
                    self.reference_latency.setdefault(key, latency)

        log_path = os.path.join(self._log_dir, f"{slot.device.replace(':', '_')}-{threading.get_ident()}.log")
        outcome, environment = slot.run(item, log_path, self.timeout_seconds, remember)
        self._announce(slot.isolation())
        captured = read_bounded(log_path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(log_path)
        verdict = Verdict(item, outcome, environment, captured)
        with self._lock:
            on_verdict(verdict)

    def _announce(self, isolation: str | None) -> None:
        """Say once, loudly, when workers run with weaker isolation than the sandbox is meant to give."""
        with self._lock:
            if isolation is None or isolation in self._announced:
                return
            self._announced.add(isolation)
        if not isolation.startswith("full isolation"):
            logger.warning("solution code runs with %s", isolation)

    def close(self) -> None:
        for slot in self.slots:
            slot.close()
        shutil.rmtree(self._log_dir, ignore_errors=True)


def worker_policy(protected: Sequence[str], hidden: Sequence[str], cache_dir: str | None = None) -> SandboxPolicy:
    """What workers may not write: ``protected`` (the trace set), this package and every directory Python
    imports from (a solution must not change the code a later run's judge imports), except a directory that
    holds what workers must write (the temporary directory, the home directory with its caches, the build
    cache: e.g. the current directory on ``sys.path`` when it is the home directory); what they may not see:
    ``hidden`` and multiprocessing's directory, which holds the forkserver's socket."""
    import multiprocessing.util

    import flashinfer_bench
    from flashinfer_bench.compile.cache import resolve_cache_root

    written = [Path(tempfile.gettempdir()).resolve(), Path.home().resolve(), resolve_cache_root(cache_dir)]

    def holds_written(path: Path) -> bool:
        return any(place == path or path in place.parents for place in written)

    code = [Path(flashinfer_bench.__file__).parent, *(Path(p) for p in sys.path if p)]
    code = [p.resolve() for p in code if p.exists()]
    read_only = {str(Path(p).resolve()) for p in protected if Path(p).exists()}
    read_only |= {str(p) for p in code if not holds_written(p)}
    hidden_dirs = {str(Path(p).resolve()) for p in (*hidden, multiprocessing.util.get_temp_dir())}
    return SandboxPolicy(read_only=tuple(sorted(read_only)), hidden=tuple(sorted(hidden_dirs)))


def persistent_runner(devices: Sequence[str], *, timeout_seconds: float, cache_dir: str | None = None,
                      protected: Sequence[str] = ()) -> ProcessRunner:
    """One long-lived worker per device (plus a warm spare that replaces it if it dies)."""
    return ProcessRunner(devices, timeout_seconds=timeout_seconds, items_per_worker=None, cache_dir=cache_dir,
                         protected=protected)


def isolated_runner(devices: Sequence[str], *, timeout_seconds: float, cache_dir: str | None = None,
                    protected: Sequence[str] = ()) -> ProcessRunner:
    """A fresh worker process for every (solution, workload)."""
    return ProcessRunner(devices, timeout_seconds=timeout_seconds, items_per_worker=1, cache_dir=cache_dir,
                         protected=protected)

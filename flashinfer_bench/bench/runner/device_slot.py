"""The workers of one device: the active one, and a warm spare that replaces it the moment it dies.

Persistent mode keeps the active worker for every item; isolated mode retires it after each item. Either way
the next worker has already started while the current item ran, so neither a crash nor isolation waits on a
process start-up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flashinfer_bench.bench.runner.process import WorkerProcess, WorkerStartError
from flashinfer_bench.bench.runner.protocol import WorkItem, WorkOutcome

READY_TIMEOUT_S = 600.0
START_ATTEMPTS = 2


class DeviceSlot:
    def __init__(self, device: str, cache_dir: str | None, *, items_per_worker: int | None):
        self.device = device
        self.cache_dir = cache_dir
        self.items_per_worker = items_per_worker
        self.active: WorkerProcess | None = None
        self.spare: WorkerProcess | None = WorkerProcess(device, cache_dir)

    def _worker(self) -> WorkerProcess:
        if self.active is None:
            self.active = self.spare or WorkerProcess(self.device, self.cache_dir)
            self.spare = WorkerProcess(self.device, self.cache_dir)
        return self.active

    def _ready_worker(self) -> tuple[WorkerProcess, dict[str, Any]]:
        """The active worker once it is ready; a worker that fails to start is replaced once, then it is an error."""
        for _ in range(START_ATTEMPTS - 1):
            worker = self._worker()
            try:
                return worker, worker.wait_ready(READY_TIMEOUT_S)
            except WorkerStartError:
                self.active = None
        worker = self._worker()
        return worker, worker.wait_ready(READY_TIMEOUT_S)

    def environment(self) -> dict[str, Any]:
        return self._ready_worker()[1]

    def run(self, item: WorkItem, log_path: str, timeout: float,
            on_baseline: Callable[[float | None], None]) -> tuple[WorkOutcome, dict[str, Any]]:
        """Evaluate one item on this device; returns the outcome and the environment it ran in."""
        worker, environment = self._ready_worker()
        outcome = worker.evaluate(item, log_path, timeout, on_baseline)
        if outcome.retire:
            worker.kill()
            self.active = None
        elif self.items_per_worker is not None and worker.items_done >= self.items_per_worker:
            worker.stop()
            self.active = None
        return outcome, environment

    def close(self) -> None:
        for worker in (self.active, self.spare):
            if worker is not None:
                worker.stop()
        self.active = self.spare = None

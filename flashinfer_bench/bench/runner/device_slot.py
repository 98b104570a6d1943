"""The processes of one device: its judge, the active worker attached to it, and a warm spare worker that
replaces the active one the moment it dies.

Persistent mode keeps the active worker for every item; isolated mode retires it after each item. Either way
the next worker has already started while the current item ran, so neither a crash nor isolation waits on a
process start-up, and the judge (with its baselines) stays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flashinfer_bench.bench.runner.process import JudgeProcess, WorkerProcess, WorkerStartError
from flashinfer_bench.bench.runner.protocol import WorkItem, WorkOutcome
from flashinfer_bench.bench.runner.sandbox import SandboxPolicy

READY_TIMEOUT_S = 600.0
START_ATTEMPTS = 2


class DeviceSlot:
    def __init__(self, device: str, cache_dir: str | None, policy: SandboxPolicy, *, items_per_worker: int | None):
        self.device = device
        self.cache_dir = cache_dir
        self.policy = policy
        self.items_per_worker = items_per_worker
        self.judge: JudgeProcess | None = JudgeProcess(device)
        self.active: WorkerProcess | None = None
        self.spare: WorkerProcess | None = self._new_worker()

    def _new_worker(self) -> WorkerProcess:
        return WorkerProcess(self.device, self.cache_dir, self.policy)

    def _ready_judge(self) -> tuple[JudgeProcess, dict[str, Any]]:
        if self.judge is None or not self.judge.alive():
            if self.judge is not None:
                self.judge.kill()
            self.judge = JudgeProcess(self.device)
            if self.active is not None:  # its channel went with the old judge
                self.active.kill()
                self.active = None
        return self.judge, self.judge.wait_ready(READY_TIMEOUT_S)

    def _attached_worker(self, judge: JudgeProcess) -> WorkerProcess:
        """The active worker, attached to ``judge``; a worker that fails to start is replaced once, then it is
        an error."""
        for attempt in range(START_ATTEMPTS):
            if self.active is not None:
                return self.active
            worker = self.spare or self._new_worker()
            self.spare = self._new_worker()
            try:
                judge.attach(worker, READY_TIMEOUT_S)
            except WorkerStartError:
                worker.kill()
                if attempt + 1 == START_ATTEMPTS:
                    raise
                judge, _ = self._ready_judge()
                continue
            self.active = worker
        assert self.active is not None
        return self.active

    def environment(self) -> dict[str, Any]:
        return self._ready_judge()[1]

    def isolation(self) -> str | None:
        """How the active worker is isolated (one line), once one is attached."""
        return self.active.isolation if self.active is not None else None

    def run(self, item: WorkItem, log_path: str, timeout: float,
            on_baseline: Callable[[float | None], None]) -> tuple[WorkOutcome, dict[str, Any]]:
        """Evaluate one item on this device; returns the outcome and the environment it ran in."""
        judge, environment = self._ready_judge()
        worker = self._attached_worker(judge)
        outcome = judge.evaluate(item, worker, log_path, timeout, on_baseline)
        if outcome.retire_judge:
            judge.kill()
            self.judge = None
        if outcome.retire or self.judge is None or (
            self.items_per_worker is not None and worker.items_done >= self.items_per_worker
        ):
            if self.judge is not None:
                self.judge.detach()
            worker.kill()
            self.active = None
        return outcome, environment

    def close(self) -> None:
        if self.judge is not None:
            self.judge.stop()
        for worker in (self.active, self.spare):
            if worker is not None:
                worker.kill()
        self.judge = self.active = self.spare = None

"""The processes of one device: its judge, the active worker attached to it, and warm spare workers that
replace the active one the moment it dies.

A worker runs one solution's code only: the active worker is retired when an item of another solution comes
(one solution cannot patch what a later one runs on). Persistent mode keeps it for every item of its
solution; isolated mode retires it after each item. Either way the next worker has already started while the
items before it ran (``SPARE_WORKERS`` of them), so neither a crash nor isolation waits on a whole process
start-up, and the judge (with its baselines) stays. Nor does the next item wait for a retired worker to be gone
(its namespace taken down, its CUDA context destroyed): that happens in the background, and only an item of the
same solution waits for it, since the retired worker's build is moved into the cache once it has exited, and an
item whose reference the judge is to time waits for its processes to be gone (``DeviceSlot.run``).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterable
from functools import reduce
from pathlib import Path
from typing import Any

from flashinfer_bench.bench.runner.process import JudgeProcess, WorkerProcess, WorkerStartError
from flashinfer_bench.bench.runner.worker_view import policy_for
from flashinfer_bench.bench.wire.parent_judge import OnBaseline, WorkItem, WorkOutcome
from flashinfer_bench.bench.worker.sandbox import SandboxPolicy
from flashinfer_bench.data import Solution

READY_TIMEOUT_S = 600.0
START_ATTEMPTS = 2
#: Workers started ahead, each waiting to be attached. A worker takes 0.5-0.6 s to start on an H100 host, longer
#: than a quick solution's items, so with one spare the next attach often waits for it; two took most of those
#: waits away (docs/measurements.md).
SPARE_WORKERS = 2
#: A worker the judge calibrates on (judge/calibration.py: the first, and a fresh one once the floor is older than
#: judge/main.py FLOOR_KEPT_S) waits this long at most for the spares to have started, so that the calibration runs
#: beside no starting worker: one made beside two starting workers put a replayed round's exchange at 0.32 ms where
#: later rounds held about 0.8 ms, and the judge did not believe honest replayed claims in 3 of 6 runs of
#: benchmarks/harness_overhead.py (docs/measurements.md).
QUIET_CALIBRATION_WAIT_S = 10.0

logger = logging.getLogger(__name__)


class Retirement:
    """A worker being stopped in the background: ``WorkerProcess.kill``, in a thread of its own."""

    def __init__(self, worker: WorkerProcess, built: Solution | None, key: tuple[str, str] | None) -> None:
        self.key = key
        #: Set once the worker's processes are gone (its device work with them), before its build is moved.
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._kill, args=(worker, built), daemon=True,
                                       name=f"fib-retire-{worker.device}")
        self.thread.start()

    def _kill(self, worker: WorkerProcess, built: Solution | None) -> None:
        try:
            worker.stop()
            self.stopped.set()
            worker.clean_up(built)
        except Exception:  # noqa: BLE001 - a worker that could not be stopped cleanly must not end the run
            logger.exception("stopping a retired worker failed")
        finally:
            self.stopped.set()

    def wait(self) -> None:
        self.thread.join()


class DeviceSlot:
    def __init__(self, device: str, cache_root: Path, policy: SandboxPolicy, *, items_per_worker: int | None):
        self.device = device
        self.cache_root = cache_root
        self.policy = policy
        self.items_per_worker = items_per_worker
        self.judge: JudgeProcess | None = JudgeProcess(device)
        self.active: WorkerProcess | None = None
        #: The solution whose code the active worker has run, and its WorkItem.solution_key.
        self.active_solution: Solution | None = None
        self.active_key: tuple[str, str] | None = None
        self.spares: deque[WorkerProcess] = deque()
        #: Whether a worker was attached yet (before the first, one more worker is started: ``_start_spares``).
        self.attached_before = False
        self._start_spares()
        self.retiring: list[Retirement] = []
        #: ``close`` may come from another thread while an item runs (an interrupted run): the retirements
        #: are the state both touch.
        self._retiring_lock = threading.Lock()
        self.last_isolation: str | None = None

    def _new_worker(self) -> WorkerProcess:
        return WorkerProcess(self.device, self.cache_root, self.policy)

    def _start_spares(self) -> None:
        """``SPARE_WORKERS`` waiting; before the first attach one more, for it: they all start together, beside the
        judge, so the first attach starts none and its wait for the spares is mostly over before it begins."""
        while len(self.spares) < SPARE_WORKERS + (0 if self.attached_before else 1):
            self.spares.append(self._new_worker())

    def _kill_spares(self) -> None:
        while self.spares:
            self.spares.popleft().kill()

    def _ready_judge(self) -> tuple[JudgeProcess, dict[str, Any]]:
        if self.judge is None or not self.judge.alive():
            if self.judge is not None:
                self.judge.kill()
            self.judge = JudgeProcess(self.device)
            if self.active is not None:  # its channel went with the old judge
                self.active.kill(built=self.active_solution)
                self.active = self.active_solution = self.active_key = None
        return self.judge, self.judge.wait_ready(READY_TIMEOUT_S)

    def _attached_worker(self, judge: JudgeProcess) -> WorkerProcess:
        """The active worker, attached to ``judge``; a worker that fails to start is replaced once, then it is
        an error. Where the judge calibrates on it, the spares have started before it returns
        (``QUIET_CALIBRATION_WAIT_S``): at the first attach they started beside the judge; at a later calibration
        (every 5 minutes) the one just started to replace it is waited for."""
        if self.active is not None:
            return self.active
        self.attached_before, calibrates = True, False
        for attempt in range(START_ATTEMPTS):
            worker = self.spares.popleft() if self.spares else self._new_worker()
            self._start_spares()
            try:
                self.last_isolation, calibrates = judge.attach(worker, READY_TIMEOUT_S)
            except WorkerStartError:
                worker.kill()
                if attempt + 1 == START_ATTEMPTS:
                    raise
                judge, _ = self._ready_judge()
                continue
            self.active = worker
            break
        if calibrates:
            for spare in self.spares:
                spare.started(QUIET_CALIBRATION_WAIT_S)
        assert self.active is not None
        return self.active

    def environment(self) -> dict[str, Any]:
        return self._ready_judge()[1]

    def isolation(self) -> str | None:
        """How the last worker attached was isolated (one line; an isolated run's is retired by now)."""
        return self.last_isolation

    def run(self, item: WorkItem, log_path: str, timeout: float,
            on_baseline: OnBaseline) -> tuple[WorkOutcome, dict[str, Any]]:
        """Evaluate one item on this device; returns the outcome and the environment it ran in. Where the judge is to
        time the item's reference (not known yet: ``WorkItem.reference``), no worker that ran solution code is left
        on the device first, the active one retired and every retired one stopped: the judge times the references
        before the item's solution is loaded (judge/main.py ``Judge.time_references``), and a solution's code left
        running could otherwise share the device with them and slow them down, its speed-up up (docs/security.md)."""
        judge, environment = self._ready_judge()
        self._show(policy_for(self.policy, item))
        if self.active is not None and (self.active_key != item.solution_key or item.times_reference):
            self._retire_active()
        self._wait_retired(item.solution_key)
        if item.times_reference:
            self._wait_stopped()
        worker = self._attached_worker(judge)
        self.active_solution, self.active_key = item.solution, item.solution_key
        outcome = judge.evaluate(item, worker, log_path, timeout, on_baseline)
        if outcome.retire_judge:
            judge.kill()
            self.judge = None
        if outcome.retire or self.judge is None or (
            self.items_per_worker is not None and worker.items_done >= self.items_per_worker
        ):
            self._retire_active()
        return outcome, environment

    def show_for(self, items: Iterable[WorkItem]) -> None:
        """Workers see from now on what every one of ``items`` needs (worker_view.policy_for): one change of view
        ahead of them, rather than one at the first item that needs a new path (each replaced the spare, and the
        next attach waited for a whole start-up: 1.2 s on an H100 host, docs/measurements.md)."""
        self._show(reduce(policy_for, items, self.policy))

    def _show(self, policy: SandboxPolicy) -> None:
        """Workers get ``policy`` (what an item needs to see: worker_view.policy_for) from now on; those started
        with another are replaced."""
        if policy is self.policy:
            return
        self.policy = policy
        self._retire_active()
        self._kill_spares()
        self._start_spares()

    def _retire_active(self) -> None:
        if self.judge is not None:
            self.judge.detach()
        if self.active is not None:
            with self._retiring_lock:
                self.retiring.append(Retirement(self.active, self.active_solution, self.active_key))
        self.active = self.active_solution = self.active_key = None

    def _wait_retired(self, key: tuple[str, str] | None) -> None:
        """Forget the retirements that are over, and wait for those of solution ``key`` (None: all of them)."""
        with self._retiring_lock:
            retirements = list(self.retiring)
        for retirement in retirements:
            if key is None or retirement.key == key:
                retirement.wait()
        with self._retiring_lock:
            self.retiring = [r for r in self.retiring if r.thread.is_alive()]

    def _wait_stopped(self) -> None:
        """Until every retired worker's processes are gone (their builds may still be moving)."""
        with self._retiring_lock:
            retirements = list(self.retiring)
        for retirement in retirements:
            retirement.stopped.wait()

    def close(self) -> None:
        if self.judge is not None:
            self.judge.stop()
        if self.active is not None:
            self.active.kill(built=self.active_solution)
        self._kill_spares()
        self._wait_retired(None)
        self.judge = self.active = None

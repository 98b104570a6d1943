"""The scheduler: one thread that takes pending evaluations from the store, fairly between tokens, answers
those with a stored verdict at once, and hands the rest to the engine in batches.

Fairness: tokens are served in turn, the token served longest ago first, one evaluation each round until the
batch is full; a token's ``priority`` orders only its own evaluations. Evaluations of one solution (by content)
on one workload coalesce in a batch: evaluated once, recorded for every task that asked.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from flashinfer_bench.data import Solution, Trace
from flashinfer_bench.serve.engine import Engine, Key
from flashinfer_bench.serve.store import Evaluation, Store

logger = logging.getLogger(__name__)

#: How often the scheduler looks at the store when nobody wakes it.
IDLE_POLL_S = 1.0


def renamed(trace_json: str, solution_name: str) -> str:
    """A stored verdict as a trace of ``solution_name`` (the same code may have been submitted under another)."""
    data = json.loads(trace_json)
    data["solution"] = solution_name
    return json.dumps(data)


@dataclass
class _InFlight:
    """The batch being evaluated: evaluation ids waiting on each key, and the solution hash of each key."""

    waiting: dict[Key, list[int]] = field(default_factory=dict)
    hashes: dict[Key, str] = field(default_factory=dict)


class Scheduler:
    def __init__(self, store: Store, engine: Engine, *, batch_size: int, on_change: Callable[[], None]):
        self.store = store
        self.engine = engine
        self.batch_size = batch_size
        self.on_change = on_change
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._in_flight: _InFlight | None = None
        self._stopping = False
        self._served: dict[str, int] = {}
        self._turn = itertools.count(1)
        self._thread = threading.Thread(target=self._loop, name="fib-serve-scheduler", daemon=True)
        self.healthy = True
        self.last_error: str | None = None

    def start(self) -> None:
        requeued = self.store.recover()
        if requeued:
            logger.warning("%d evaluation(s) left running by the last server go back to the queue", requeued)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, grace_s: float) -> None:
        """Take nothing new; give the running batch ``grace_s`` to finish, then put what is left of it back in
        the queue (the next start runs it) and stop the runner."""
        self._stop.set()
        self._wake.set()
        self._thread.join(grace_s)
        with self._lock:
            self._stopping = True
            left = [i for ids in self._in_flight.waiting.values() for i in ids] if self._in_flight else []
        if left:
            self.store.requeue(left)
            logger.warning("shutting down: %d running evaluation(s) go back to the queue", len(left))
        self.engine.close()
        self._thread.join(30)

    # ------------------------------------------------------------------------------------------- the loop
    def _loop(self) -> None:
        try:
            self.engine.runner  # noqa: B018 - start the judges and workers now: the first task finds them warm
        except Exception as exc:  # noqa: BLE001 - reported by /health; the loop retries on the first batch
            self._unhealthy(exc)
        while not self._stop.is_set():
            try:
                batch = self.pick()
                if batch:
                    self.process(batch)
                    continue
            except Exception as exc:  # noqa: BLE001 - the loop must outlive any one failure (a full disk, ...)
                self._unhealthy(exc)
            self._wake.wait(IDLE_POLL_S)
            self._wake.clear()

    def pick(self) -> list[Evaluation]:
        """Up to ``batch_size`` pending evaluations, tokens in turn (module docstring)."""
        pending = self.store.pending_by_owner(self.batch_size)
        owners = sorted(pending, key=lambda owner: self._served.get(owner, 0))
        queues = {owner: list(pending[owner]) for owner in owners}
        hashes: dict[tuple[str, str], str] = {}
        batch: list[Evaluation] = []
        while queues and len(batch) < self.batch_size:
            for owner in list(queues):
                queue = queues[owner]
                while queue:
                    evaluation = queue.pop(0)
                    # One solution per (definition, name) in a batch; another with the same name waits.
                    known = hashes.setdefault((evaluation.definition, evaluation.solution_name),
                                              evaluation.solution_hash)
                    if known == evaluation.solution_hash:
                        batch.append(evaluation)
                        self._served[owner] = next(self._turn)
                        break
                if not queue:
                    del queues[owner]
                if len(batch) >= self.batch_size:
                    break
        return batch

    def process(self, batch: list[Evaluation]) -> None:
        to_run = []
        for evaluation in batch:
            key = self.engine.verdict_key(evaluation.definition, evaluation.solution_hash, evaluation.workload_uuid)
            stored = None if evaluation.fresh else self.store.verdict(key)
            if stored is not None:
                self.store.finish([evaluation.id], renamed(stored, evaluation.solution_name), cached=True,
                                  verdict_key=None)
            else:
                to_run.append(evaluation)
        if len(to_run) < len(batch):
            self.on_change()
        started = set(self.store.start([e.id for e in to_run]))
        to_run = [e for e in to_run if e.id in started]
        if not to_run:
            return
        in_flight = _InFlight()
        solutions: dict[tuple[str, str], Solution] = {}
        for evaluation in to_run:
            key = (evaluation.definition, evaluation.solution_name, evaluation.workload_uuid)
            in_flight.waiting.setdefault(key, []).append(evaluation.id)
            in_flight.hashes[key] = evaluation.solution_hash
            if key[:2] not in solutions:
                solutions[key[:2]] = Solution.model_validate_json(evaluation.solution_json)
        with self._lock:
            self._in_flight = in_flight
        self.on_change()
        try:
            self.engine.evaluate(list(solutions.values()), list(in_flight.waiting), self._record)
        except Exception as exc:  # noqa: BLE001 - the runner's failure, not a solution's: reported, not fatal
            if self._stopping:
                return  # the runner was stopped under the batch, which went back to the queue
            self._unhealthy(exc)
            self._fail_left(in_flight, f"the evaluation could not be carried out: {exc}")
        else:
            self.healthy, self.last_error = True, None
            self._fail_left(in_flight, "the runner returned no verdict for this evaluation")
        finally:
            with self._lock:
                self._in_flight = None
            self.on_change()

    def _record(self, trace: Trace) -> None:
        key = (trace.definition, trace.solution or "", trace.workload.uuid)
        with self._lock:
            if self._stopping or self._in_flight is None:
                return  # the batch was put back in the queue: a verdict made while stopping is not kept
            ids = self._in_flight.waiting.pop(key, None)
            if ids is None:
                return
            verdict_key = self.engine.verdict_key(key[0], self._in_flight.hashes[key], key[2])
            self.store.finish(ids, trace.to_json_line().strip(), cached=False, verdict_key=verdict_key)
        self.on_change()

    def _fail_left(self, in_flight: _InFlight, error: str) -> None:
        """Tasks of evaluations the batch left without a verdict fail, saying why (unless stopping: then the
        evaluations went back to the queue)."""
        with self._lock:
            if self._stopping:
                return
            left = [i for ids in in_flight.waiting.values() for i in ids]
            in_flight.waiting.clear()
        if left:
            self.store.requeue(left)
            for task_id in self.store.tasks_of(left):
                self.store.fail_task(task_id, error)

    def _unhealthy(self, exc: BaseException) -> None:
        logger.exception("the runner failed", exc_info=exc)
        self.healthy, self.last_error = False, f"{type(exc).__name__}: {exc}"
        self.engine.close()  # the next batch starts a fresh one

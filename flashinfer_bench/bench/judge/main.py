"""The judge process: where verdicts are made, and where no solution code ever runs.

One judge per device, for the whole run. It draws the inputs (from the run's secret), runs the reference, keeps
the baselines of the workloads it saw last, and evaluates each item through the worker attached to it: the
worker gets seeds and returns bytes (wire/judge_worker.py, slot.py). A worker that dies, hangs or
breaks the protocol costs its item, never the judge's state, so isolated runs keep their baselines too.
"""

from __future__ import annotations

import logging
import os
import time
import traceback
from collections import OrderedDict
from dataclasses import replace
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle
from typing import Any

from flashinfer_bench.bench.capture import capture_fds
from flashinfer_bench.bench.evaluators.compare import warm_up as warm_comparisons
from flashinfer_bench.bench.judge.calibration import calibrate
from flashinfer_bench.bench.judge.clock import ClockFloor, calling_process
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.judge.phases import BUILD, CHECKS, REFERENCE, TIMED, evaluation, phase
from flashinfer_bench.bench.judge.remote import RemoteSolution
from flashinfer_bench.bench.judge.slots import SlotKeeper, SlotStock
from flashinfer_bench.bench.judge.solution import SolutionFacts
from flashinfer_bench.bench.process_setup import (
    describe_environment,
    device_is_healthy,
    die_with_parent,
    leave_interrupts_to_the_parent,
    make_undumpable,
    prepare_device,
    profiled,
)
from flashinfer_bench.bench.replay import warm_up as warm_replays
from flashinfer_bench.bench.wire import parent_judge as protocol
from flashinfer_bench.bench.wire.failures import CallFailed
from flashinfer_bench.bench.wire.judge_worker import Built, Load, Ready, Stop, WorkerChannel, WorkerGone
from flashinfer_bench.bench.wire.parent_judge import (
    BASELINE_BYTES_KEPT,
    MAX_WORKLOADS_PER_GROUP,
    WorkItem,
    WorkOutcome,
)
from flashinfer_bench.data import EvaluationStatus

logger = logging.getLogger(__name__)

#: Baselines are kept for a whole group of workloads (bench/runner/grouping.py), oldest out first; they hold every
#: trial's inputs and outputs, so for the gigabyte-sized weights of some MoE definitions fewer are kept.
BASELINES_KEPT = MAX_WORKLOADS_PER_GROUP
#: A clock floor older than this is measured again, on the next worker that has not run a solution yet.
FLOOR_KEPT_S = 300.0
#: What the judge learnt of a solution's code (judge/solution.py SolutionFacts) is kept for this many solutions, the
#: latest evaluated: a run evaluates a solution's workloads together, and among other solutions' (the runner groups
#: items by workload), in a new worker each time.
SOLUTION_FACTS_KEPT = 1024


def tensor_bytes(value: Any) -> int:
    """Bytes of the tensors in a baseline (or any nesting of lists, tuples, dicts and dataclasses)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.nbytes
    if isinstance(value, (list, tuple)):
        return sum(tensor_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(tensor_bytes(v) for v in value.values())
    fields = getattr(value, "__dataclass_fields__", None)
    if fields is not None:
        return sum(tensor_bytes(getattr(value, name)) for name in fields)
    return 0


class Judge:
    def __init__(self, conn: Connection, device: str) -> None:
        self.conn = conn
        self.device = device
        self.worker: WorkerChannel | None = None
        #: The attached worker's calling process as this process sees it (judge/clock.py HostWatch).
        self.worker_pid: int | None = None
        self.slots: SlotKeeper | None = None
        #: The next worker's output buffer, made while the current one runs (judge/slots.py).
        self.slot_stock = SlotStock(enabled=device.startswith("cuda"))
        #: By WorkItem.solution_key, the latest SOLUTION_FACTS_KEPT solutions'.
        self.solution_facts: OrderedDict[tuple[str, str], SolutionFacts] = OrderedDict()
        #: What the harness costs per call on this device (judge/schedule.py), measured in a worker before it
        #: loaded any solution, and when (time.monotonic()); measured again on a fresh worker once it is older
        #: than FLOOR_KEPT_S.
        self.floor: ClockFloor | None = None
        self.floor_measured_at = 0.0
        #: No solution has been loaded into the attached worker yet.
        self.worker_is_fresh = False
        #: The floor is missing or stale as the worker was attached: its first item starts with a calibration,
        #: and the parent waits for its spares to have started before sending it (runner/device_slot.py).
        self.calibrates = False
        self.references: dict[str, Any] = {}
        self.baselines: OrderedDict[tuple[str, str, str], Any] = OrderedDict()

    def serve(self) -> None:
        prepare_device(self.device)
        if self.device != "cpu":
            # What the judge's first item would load otherwise (CUDA loads a kernel's module on its first launch):
            # its replayed sessions' kernels and graph machinery (the reference's, its measures of the harness),
            # and its comparisons'. Not in a spare worker: spares start while items are timed, and device work beside
            # a timed session can lengthen its rounds (runner/device_slot.py ``QUIET_CALIBRATION_WAIT_S``).
            try:
                warm_replays(self.device)
                warm_comparisons(self.device)
            except Exception:  # noqa: BLE001 - only a head start: the first item loads what this could not
                logger.warning("the judge's warm-up of its kernels failed", exc_info=True)
        self.conn.send((protocol.READY, describe_environment(self.device)))
        while True:
            tag, payload = self.conn.recv()
            if tag == protocol.STOP:
                self.detach()
                self.slot_stock.close()
                return
            if tag == protocol.ATTACH:
                self.attach(recv_handle(self.conn), payload)
            elif tag == protocol.DETACH:
                self.detach()
            elif tag == protocol.EVALUATE:
                item, log_path = payload
                with capture_fds(log_path), evaluation(self.device) as clock:
                    outcome = self.evaluate(item, log_path)
                self.conn.send((protocol.RESULT, replace(outcome, phases=clock.phases())))

    def attach(self, fd: int, waiter_pid: int | None) -> None:
        self.detach()
        channel = WorkerChannel(Connection(fd))
        try:
            ready = channel.receive(Ready)
        except (WorkerGone, CallFailed) as exc:
            channel.close()
            self.conn.send((protocol.WORKER_FAILED, str(exc)))
            return
        self.worker, self.slots, self.worker_is_fresh = channel, SlotKeeper(channel, self.slot_stock), True
        self.worker_pid = calling_process(waiter_pid)  # ready: the sandbox's pid 1 exists by now
        self.calibrates = self.floor is None or time.monotonic() - self.floor_measured_at > FLOOR_KEPT_S
        self.conn.send((protocol.WORKER_READY, (ready.isolation, self.calibrates)))

    def detach(self) -> None:
        if self.worker is not None:
            try:
                self.worker.send(Stop())
            except WorkerGone:
                pass
            self.worker.close()
        if self.slots is not None:
            self.slots.close()
        self.worker = self.slots = None

    def evaluate(self, item: WorkItem, log_path: str) -> WorkOutcome:
        if self.worker is None or self.slots is None:
            return WorkOutcome(EvaluationStatus.RUNTIME_ERROR, log="no worker was attached to the judge", retire=True)
        try:
            return self._evaluate(item, log_path, self.worker, self.slots)
        except WorkerGone as exc:
            self.detach()
            return WorkOutcome(EvaluationStatus.RUNTIME_ERROR, log=str(exc), retire=True)
        except CallFailed as exc:
            return WorkOutcome(exc.status, log=exc.message, retire=self.worker.unhealthy)

    def _evaluate(self, item: WorkItem, log_path: str, worker: WorkerChannel, slots: SlotKeeper) -> WorkOutcome:
        from flashinfer_bench.bench.evaluators import load_evaluator
        from flashinfer_bench.bench.evaluators.evaluator import TimedOutputsMismatch

        ctx = EvaluationContext(item.definition, item.workload, item.config, self.device, item.trace_set_root,
                                item.secret, item.solution.spec.destination_passing_style)
        fresh, self.worker_is_fresh = self.worker_is_fresh, False
        if self.calibrates and fresh:  # no solution code has run in this worker yet
            self.load(worker, item, log_path, calibration=True)
            noop = RemoteSolution(ctx, worker, slots, None, self.worker_pid)
            self.floor, self.floor_measured_at = calibrate(ctx, noop), time.monotonic()
        try:
            evaluator = load_evaluator(item.evaluator)
            if fresh and item.profile_baseline:
                with phase(REFERENCE):
                    self.time_references(evaluator, item)
        except Exception:  # noqa: BLE001 - the reference or the workload is broken, not the solution
            return self.reference_failed()
        with phase(BUILD):
            self.load(worker, item, log_path, calibration=False)
        self.conn.send((protocol.BUILT, None))
        assert self.floor is not None  # the first worker attached was fresh, and calibrated above
        solution = RemoteSolution(ctx, worker, slots, self.floor, self.worker_pid, self.facts_of(item))
        if self.baseline_key(item) not in self.baselines and not item.times_reference:
            # Its first correctness call runs in the worker while the reference works out the same inputs' outputs
            # here: neither is timed (a reference timed now waits for a quiet device, time_references).
            solution.start_call(evaluator.first_call(ctx))
        try:
            with phase(REFERENCE):
                baseline = self.baseline(evaluator, ctx, item)
        except Exception:  # noqa: BLE001 - the reference or the workload is broken, not the solution
            failed = self.reference_failed()
            # A call started beside the reference may still be running: the worker goes, rather than the verdict
            # waiting for its answer.
            return replace(failed, retire=True) if solution.started is not None else failed
        if item.reference is not None:
            baseline.reference_timing = item.reference
        self.conn.send((protocol.BASELINE, (item.workload.uuid, baseline.reference_timing)))
        try:
            with phase(CHECKS):
                result = evaluator.check_correctness(ctx, solution, baseline)
                solution.settle()  # a call started ahead that the evaluator did not take up
            if not result.passed:
                return WorkOutcome(result.status, log=result.message, correctness=result.correctness)
            with phase(TIMED):
                timed = evaluator.eval_performance(ctx, solution, baseline)
        except TimedOutputsMismatch as exc:
            return WorkOutcome(exc.result.status, log=exc.result.message, correctness=exc.result.correctness)
        except (WorkerGone, CallFailed):
            raise
        except Exception:  # noqa: BLE001 - the judge's own failure on this item (e.g. the reference in a check)
            return WorkOutcome(EvaluationStatus.RUNTIME_ERROR, log="the judge failed:\n" + traceback.format_exc(),
                               retire=True, retire_judge=not device_is_healthy(self.device))
        log = "\n".join([result.message, *timed.notes]).strip()
        return WorkOutcome(EvaluationStatus.PASSED, log=log, correctness=result.correctness,
                           performance=timed.performance)

    @staticmethod
    def load(worker: WorkerChannel, item: WorkItem, log_path: str, *, calibration: bool) -> None:
        """Have the worker build the item's solution (or, for ``calibration``, take the zero-filling callee
        through the same harness instead) with its output going to ``log_path``."""
        worker.send(Load(calibration=calibration, definition=item.definition.model_dump_json(),
                         solution=item.solution.model_dump_json(), workload=item.workload.model_dump_json(),
                         trace_set_root=item.trace_set_root))
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            worker.send_fd(log_fd)
        finally:
            os.close(log_fd)
        worker.receive(Built)

    def reference_failed(self) -> WorkOutcome:
        """The item's outcome where its reference (or workload) failed, with the exception being handled."""
        return WorkOutcome(EvaluationStatus.RUNTIME_ERROR, log="reference failed:\n" + traceback.format_exc(),
                           retire_judge=not device_is_healthy(self.device))

    def time_references(self, evaluator: Any, item: WorkItem) -> None:
        """Build the baselines (the reference's timing included) of the item's workload and the rest of its group
        (``WorkItem.group``) that this judge does not hold yet, before the item's solution is loaded: no solution
        code has run in the attached worker, and where the item's reference is not known the parent let no other
        worker that ran some live on (runner/device_slot.py), so nothing but the reference has work on the device
        while it is timed (docs/security.md). Each timing goes to the parent. A workload other than the item's whose
        reference fails is left to its own item."""
        for workload in {w.uuid: w for w in (*item.group, item.workload)}.values():
            own = workload.uuid == item.workload.uuid
            member = item if own else replace(item, workload=workload, reference=None)
            ctx = EvaluationContext(item.definition, workload, item.config, self.device, item.trace_set_root,
                                    item.secret, item.solution.spec.destination_passing_style)
            try:
                baseline = self.baseline(evaluator, ctx, member)
            except Exception:
                if own:
                    raise
                continue
            self.conn.send((protocol.BASELINE, (workload.uuid, member.reference or baseline.reference_timing)))

    def facts_of(self, item: WorkItem) -> SolutionFacts:
        """What this judge learnt of the item's solution code so far (a new record for code it has not seen)."""
        facts = self.solution_facts.pop(item.solution_key, None) or SolutionFacts()
        self.solution_facts[item.solution_key] = facts
        while len(self.solution_facts) > SOLUTION_FACTS_KEPT:
            self.solution_facts.popitem(last=False)
        return facts

    @staticmethod
    def baseline_key(item: WorkItem) -> tuple[str, str, str, int]:
        """What a kept baseline serves: the workload, the evaluator, and the secret (a new one draws new inputs)."""
        return (*item.workload_key, item.evaluator, item.secret)

    def baseline(self, evaluator: Any, ctx: EvaluationContext, item: WorkItem) -> Any:
        key = self.baseline_key(item)
        if key in self.baselines:
            self.baselines.move_to_end(key)
            return self.baselines[key]
        from flashinfer_bench.bench.calling import reference_callee

        self.evict_baselines(keep_newest=False)  # before drawing new inputs, not while both are held
        reference = self.references.get(item.definition.name)
        if reference is None:
            reference = self.references[item.definition.name] = reference_callee(item.definition)
        baseline = evaluator.build_baseline(ctx, reference, profile=item.times_reference)
        self.baselines[key] = baseline
        self.evict_baselines(keep_newest=True)
        return baseline

    def evict_baselines(self, *, keep_newest: bool) -> None:
        """Drop the oldest baselines beyond BASELINES_KEPT or BASELINE_BYTES_KEPT (the newest one is kept
        whatever its size when ``keep_newest``: the next solutions of its workload need it)."""
        floor = 1 if keep_newest else 0
        while len(self.baselines) > floor and (
            len(self.baselines) > BASELINES_KEPT
            or sum(tensor_bytes(b) for b in self.baselines.values()) > BASELINE_BYTES_KEPT
        ):
            self.baselines.popitem(last=False)


def judge_main(conn: Connection, device: str) -> None:
    """Process entry point."""
    leave_interrupts_to_the_parent()
    die_with_parent()
    make_undumpable()
    try:
        with profiled("judge"):
            Judge(conn, device).serve()
    except (EOFError, KeyboardInterrupt, ConnectionError):  # the parent is gone
        pass

"""The parent's handles on its processes: a judge per device, and the workers attached to it in turn.

The parent talks to judges only (pickled messages between trusted processes). Of a worker it holds the process
and, until the worker is attached, the judge's end of the worker's channel; it watches the worker's sentinel so
that a death is seen at once, and kills it at the deadline.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from dataclasses import replace
from multiprocessing.connection import Connection, wait
from multiprocessing.reduction import send_handle
from pathlib import Path
from typing import Any

from flashinfer_bench.bench.judge.main import judge_main
from flashinfer_bench.bench.runner.cgroups import WorkerCgroup
from flashinfer_bench.bench.runner.server import process_context
from flashinfer_bench.bench.wire import parent_judge as protocol
from flashinfer_bench.bench.wire.judge_worker import CHANNEL_CLOSED
from flashinfer_bench.bench.wire.parent_judge import OnBaseline, WorkItem, WorkOutcome
from flashinfer_bench.bench.worker.main import worker_build_root, worker_main
from flashinfer_bench.bench.worker.sandbox import SandboxPolicy, terminate_sandboxed
from flashinfer_bench.compile import promote_entry
from flashinfer_bench.compile.cache import stage_entry
from flashinfer_bench.data import EvaluationStatus, Language, Solution

#: Under the build cache's root: the workers' scratch directories.
SCRATCH_DIR = ".scratch"

#: Languages built by a compiler; their first build may take minutes, more than an evaluation's timeout.
COMPILED_LANGUAGES = {Language.CPP, Language.CUDA, Language.TILELANG}
COMPILED_BUILD_TIMEOUT_S = 900.0
#: After its worker died or was killed, a judge has this long to give up on the item before it is replaced.
JUDGE_DRAIN_S = 60.0
#: What a death by these signals means (the kernel sends them at an rlimit; see worker/sandbox/waiter.py).
LIMIT_SIGNALS = {signal.SIGXCPU: "it used up its CPU time limit", signal.SIGXFSZ: "it exceeded its file size limit"}


def build_timeout(item: WorkItem, timeout: float) -> float:
    """How long the build may take before TIMEOUT; the evaluation's own ``timeout`` starts once it is built."""
    return max(timeout, COMPILED_BUILD_TIMEOUT_S) if item.solution.spec.language in COMPILED_LANGUAGES else timeout


class WorkerStartError(RuntimeError):
    """A process died or hung before it was ready: a problem of the device or the installation, not of a solution."""


def describe_exit(exitcode: int | None, process: str = "worker process") -> str:
    if exitcode is None:
        return f"{process} stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        meaning = LIMIT_SIGNALS.get(-exitcode)
        return f"{process} was killed by {name} (signal {-exitcode})" + (f": {meaning}" if meaning else "")
    return f"{process} exited with status {exitcode}"


def scratch_dir(cache_root: Path, prefix: str) -> Path:
    """A new scratch directory under the build cache's root (on its file system, so that what is built there can
    be moved into the cache by renaming)."""
    parent = cache_root / SCRATCH_DIR
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))


def confined(policy: SandboxPolicy, device: str, scratch: Path) -> tuple[SandboxPolicy, WorkerCgroup | None]:
    """``policy`` for a process of ``device`` that may write ``scratch``, in a cgroup of its own (None where none
    can be made): the policy of every process that runs solution code, workers and builders alike."""
    limits = policy.limits if device == "cpu" else replace(policy.limits, address_space_bytes=None)
    cgroup = WorkerCgroup.create(limits)
    return replace(policy, writable=(str(scratch), *policy.writable), limits=limits,
                   cgroups=tuple(map(str, cgroup.directories)) if cgroup else ()), cgroup


class WorkerProcess:
    """A worker, its scratch directory, the one place it may write (``<cache root>/.scratch/...``, on the
    build cache's file system so that what it builds can be moved into the cache by renaming), and its cgroup."""

    def __init__(self, device: str, cache_root: Path, policy: SandboxPolicy):
        context = process_context()
        self.device = device
        self.cache_root = cache_root
        self.scratch = scratch_dir(cache_root, "worker-")
        self.judge_end, worker_end = context.Pipe()
        policy, self.cgroup = confined(policy, device, self.scratch)
        self.process = context.Process(target=worker_main, args=(worker_end, device, self.scratch, policy),
                                       daemon=True, name=f"fib-worker-{device}")
        self.process.start()
        worker_end.close()
        self.items_done = 0
        self.isolation: str | None = None

    def stage(self, item: WorkItem) -> None:
        """Before its first item, copy the item's build cache entry into the worker's scratch directory (the
        cache itself is not in its view); never once it has run solution code, which could have planted links
        where the copy goes."""
        if self.items_done == 0:
            with contextlib.suppress(OSError):
                stage_entry(item.solution, self.cache_root, worker_build_root(self.scratch))

    def limits_reached(self) -> str:
        """The cgroup limits the worker ran into since the last call, as lines for its log."""
        return "".join(f"\n[{note}]" for note in (self.cgroup.reached() if self.cgroup else []))

    def started(self, timeout: float) -> bool:
        """Whether the worker has said it is ready (the judge reads that once it is attached) or has gone, waiting
        up to ``timeout`` seconds; False once handed over."""
        return self.judge_end is not None and self.judge_end.poll(timeout)

    def handover(self) -> Connection:
        """The judge's end of this worker's channel, once (the parent keeps no copy)."""
        conn, self.judge_end = self.judge_end, None
        if conn is None:
            raise RuntimeError("this worker was attached already")
        return conn

    def kill(self, built: Solution | None = None) -> None:
        """``stop``, then ``clean_up``."""
        self.stop()
        self.clean_up(built)

    def stop(self) -> None:
        """Stop the worker and everything it started (``Process.kill`` would leave a solution's processes)."""
        if self.process.is_alive():
            terminate_sandboxed(self.process.pid)
        self.process.join(timeout=5)
        if self.judge_end is not None:
            self.judge_end.close()
            self.judge_end = None

    def clean_up(self, built: Solution | None = None) -> None:
        """Once the worker is gone: move what it built for ``built``, the one solution it ran, into the build cache,
        and remove its scratch directory (compile.cache.promote_entry says why the move is safe)."""
        if not self.process.is_alive():
            if built is not None:
                with contextlib.suppress(OSError):
                    promote_entry(built, worker_build_root(self.scratch), self.cache_root)
            shutil.rmtree(self.scratch, ignore_errors=True)
            if self.cgroup is not None:
                self.cgroup.remove()


class JudgeProcess:
    def __init__(self, device: str):
        context = process_context()
        self.device = device
        self.conn, child = context.Pipe()
        self.process = context.Process(target=judge_main, args=(child, device), daemon=True, name=f"fib-judge-{device}")
        self.process.start()
        child.close()
        self.environment: dict[str, Any] | None = None

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        if self.environment is None:
            tag, payload = self._next(timeout, [])
            if tag != protocol.READY:
                self.kill()
                raise WorkerStartError(f"judge for {self.device} did not start: "
                                       f"{describe_exit(self.process.exitcode, 'judge process')}")
            self.environment = payload
        return self.environment

    def attach(self, worker: WorkerProcess, timeout: float) -> tuple[str, bool]:
        """Hand ``worker``'s channel to the judge and wait until the worker is ready; returns its isolation and
        whether the judge calibrates on it (its first item begins with judge/calibration.py)."""
        conn = worker.handover()
        try:
            self.conn.send((protocol.ATTACH, worker.process.pid))
            send_handle(self.conn, conn.fileno(), self.process.pid)
        finally:
            conn.close()
        tag, payload = self._next(timeout, [worker.process.sentinel])
        if tag == protocol.WORKER_READY and not worker.process.is_alive():
            # A spare that died while it waited, its ready message still in its channel: attached, its death would
            # be taken for the next item's solution's.
            raise WorkerStartError(f"worker for {self.device} died once ready: "
                                   f"{describe_exit(worker.process.exitcode)}")
        if tag == protocol.WORKER_READY:
            worker.isolation, calibrates = payload
            return worker.isolation, calibrates
        if tag is None and self.process.is_alive():
            worker.kill()  # dead or hung at start: the judge sees its channel close and answers
            tag, payload = self._next(JUDGE_DRAIN_S, [])
        reason = payload if tag == protocol.WORKER_FAILED else describe_exit(worker.process.exitcode)
        if tag not in (protocol.WORKER_FAILED, protocol.WORKER_READY):
            self.kill()
        if payload == CHANNEL_CLOSED:  # the exit status says more, once the worker is gone
            worker.process.join(timeout=5.0)
            reason = f"{reason} ({describe_exit(worker.process.exitcode)})"
        raise WorkerStartError(f"worker for {self.device} did not start: {reason}")

    def detach(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send((protocol.DETACH, None))

    def evaluate(self, item: WorkItem, worker: WorkerProcess, log_path: str, timeout: float,
                 on_baseline: OnBaseline) -> WorkOutcome:
        """Run one item. A death or a hang of the worker is a verdict (RUNTIME_ERROR / TIMEOUT), never an exception.
        The build's deadline starts again at each reference the judge times before it loads the solution (the
        item's group's, judge/main.py ``Judge.time_references``): those are the judge's work, not the build's."""
        worker.stage(item)
        # The worker's current directory is not the parent's: it reads blobs below an absolute root.
        item = replace(item, trace_set_root=os.path.abspath(item.trace_set_root or "."))
        self.conn.send((protocol.EVALUATE, (item, log_path)))
        building = build_timeout(item, timeout)
        deadline = time.monotonic() + building
        built = False
        while True:
            ready = wait([self.conn, worker.process.sentinel, self.process.sentinel],
                         max(0.0, deadline - time.monotonic()))
            if self.conn in ready:
                try:
                    tag, payload = self.conn.recv()
                except (EOFError, OSError):
                    return self._judge_died()
                if tag == protocol.BUILT and not built:
                    # The evaluation's deadline is fixed once, when the solution is built.
                    built = True
                    deadline = time.monotonic() + timeout
                elif tag == protocol.BASELINE:
                    on_baseline(*payload)
                    if not built:
                        deadline = time.monotonic() + building
                elif tag == protocol.RESULT:
                    worker.items_done += 1
                    outcome = self._with_exit(payload, worker)
                    return replace(outcome, log=outcome.log + worker.limits_reached())
            elif not ready:
                worker.kill()
                self._drain()
                late = (f"no result within the {timeout:g} s timeout" if built
                        else f"the solution was not built within {building:g} s (the build's deadline)")
                return WorkOutcome(EvaluationStatus.TIMEOUT, log=late,
                                   retire=True)
            elif worker.process.sentinel in ready:
                worker.process.join(timeout=5)
                limits = worker.limits_reached()
                judged = self._drain()
                if judged is not None and judged.status != EvaluationStatus.PASSED:
                    # The worker can be gone before the judge's word arrives here (a forged message: the judge
                    # closed its channel): what the judge saw, unless it saw only the channel close.
                    outcome = self._with_exit(replace(judged, retire=True), worker)
                else:
                    outcome = WorkOutcome(EvaluationStatus.RUNTIME_ERROR, retire=True,
                                          log=describe_exit(worker.process.exitcode))
                return replace(outcome, log=outcome.log + limits)
            else:
                return self._judge_died()

    @staticmethod
    def _with_exit(outcome: WorkOutcome, worker: WorkerProcess) -> WorkOutcome:
        """A judge that lost its worker's channel knows less than the worker's exit status: say that instead."""
        if outcome.retire and outcome.log.startswith(CHANNEL_CLOSED):
            worker.process.join(timeout=1.0)
            if not worker.process.is_alive():
                return replace(outcome, log=describe_exit(worker.process.exitcode))
        return outcome

    def _drain(self) -> WorkOutcome | None:
        """Wait for the judge to give up on the item whose worker is gone, and return what it made of it; replace a
        judge that does not (None)."""
        end = time.monotonic() + JUDGE_DRAIN_S
        while self.process.is_alive():
            tag, payload = self._next(max(0.0, end - time.monotonic()), [])
            if tag == protocol.RESULT:
                return payload
            if tag is None:
                break
        self.kill()
        return None

    def _next(self, timeout: float, others: list[Any]) -> tuple[str | None, Any]:
        """The judge's next message, or (None, None) when it died, or one of ``others`` fired, or time ran out."""
        ready = wait([self.conn, self.process.sentinel, *others], timeout)
        if self.conn not in ready:
            return None, None
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            return None, None

    def _judge_died(self) -> WorkOutcome:
        self.kill()
        return WorkOutcome(EvaluationStatus.RUNTIME_ERROR, retire=True, retire_judge=True,
                           log=describe_exit(self.process.exitcode, "the judge process"))

    def alive(self) -> bool:
        return self.process.is_alive()

    def stop(self) -> None:
        if self.process.is_alive():
            with contextlib.suppress(OSError):
                self.conn.send((protocol.STOP, None))
            self.process.join(timeout=5)
        self.kill()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()

"""The parent's handle on one worker process: start it, hand it an item, and notice at once when it dies."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import Any

from flashinfer_bench.bench.runner import protocol
from flashinfer_bench.bench.runner.protocol import WorkItem, WorkOutcome
from flashinfer_bench.bench.runner.server import process_context
from flashinfer_bench.bench.runner.worker import worker_main
from flashinfer_bench.data import EvaluationStatus, Language

#: Languages built by a compiler; their first build may take minutes, more than an evaluation's timeout.
COMPILED_LANGUAGES = {Language.CPP, Language.CUDA, Language.TILELANG}
COMPILED_BUILD_TIMEOUT_S = 900.0


def build_timeout(item: WorkItem, timeout: float) -> float:
    """How long the build may take before TIMEOUT; the evaluation's own ``timeout`` starts once it is built."""
    return max(timeout, COMPILED_BUILD_TIMEOUT_S) if item.solution.spec.language in COMPILED_LANGUAGES else timeout


class WorkerStartError(RuntimeError):
    """A worker died or hung before it was ready: a problem of the device or the installation, not of a solution."""


def describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "worker process stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"worker process was killed by {name} (signal {-exitcode})"
    return f"worker process exited with status {exitcode}"


class WorkerProcess:
    def __init__(self, device: str, cache_dir: str | None):
        context = process_context()
        self.device = device
        self.conn, child = context.Pipe()
        self.process = context.Process(target=worker_main, args=(child, device, cache_dir), daemon=True,
                                       name=f"fib-worker-{device}")
        self.process.start()
        child.close()
        self.environment: dict[str, Any] | None = None
        self.items_done = 0

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        if self.environment is None:
            ready = wait([self.conn, self.process.sentinel], timeout)
            if self.conn in ready:
                try:
                    tag, payload = self.conn.recv()
                except EOFError:
                    tag, payload = None, None
                if tag == protocol.READY:
                    self.environment = payload
                    return payload
            self.kill()
            raise WorkerStartError(f"worker for {self.device} did not start: {describe_exit(self.process.exitcode)}")
        return self.environment

    def evaluate(self, item: WorkItem, log_path: str, timeout: float,
                 on_baseline: Callable[[float | None], None]) -> WorkOutcome:
        """Run one item. A death or a hang is a verdict (RUNTIME_ERROR / TIMEOUT), never an exception."""
        self.conn.send((protocol.EVALUATE, (item, log_path)))
        deadline = time.monotonic() + build_timeout(item, timeout)
        built = False
        while True:
            ready = wait([self.conn, self.process.sentinel], max(0.0, deadline - time.monotonic()))
            if not ready:
                self.kill()
                return WorkOutcome(EvaluationStatus.TIMEOUT, log=f"no result within the {timeout:g} s timeout", retire=True)
            if self.conn in ready:
                try:
                    tag, payload = self.conn.recv()
                except (EOFError, OSError):
                    return self._died()
                if tag == protocol.BUILT and not built:
                    # The evaluation's deadline is fixed once: solution code runs after this message and could
                    # send it again to keep extending its own time.
                    built = True
                    deadline = time.monotonic() + timeout
                elif tag == protocol.BASELINE:
                    on_baseline(payload)
                elif tag == protocol.RESULT:
                    self.items_done += 1
                    return payload
            elif not self.conn.poll():
                return self._died()

    def _died(self) -> WorkOutcome:
        self.process.join(timeout=5)
        return WorkOutcome(EvaluationStatus.RUNTIME_ERROR, log=describe_exit(self.process.exitcode), retire=True)

    def stop(self) -> None:
        if self.process.is_alive():
            try:
                self.conn.send((protocol.STOP, None))
            except (BrokenPipeError, OSError):
                pass
            self.process.join(timeout=5)
        self.kill()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()

"""Builds of upcoming solutions, ahead of their turn, while the devices time the current ones.

A C++/CUDA solution's build (nvcc: tens of seconds) would otherwise run in its worker while the device waits. The
runner hands the pre-builder its items' solutions in the order they will run; one at a time, in a thread of the
parent, the pre-builder builds those that run a compiler and are not in the build cache (``compile.ahead``), each
in a fresh builder process (``worker/builder.py``: a worker's sandbox, niced, no device work), and moves what it
built into the cache once the process has exited, as a retired worker's build is moved (``promote_entry``): one
process per solution, so no solution can touch another's entry. When a solution's turn comes (``claim``) its
build ahead is waited for if it is under way, and dropped if it has not begun (the worker builds it then); the
worker finds the entry staged in its scratch directory and loads the library without compiling.

What a build ahead changes is when the compiler runs, nothing else: a build that fails leaves nothing in the cache,
and the solution's worker builds it again and reports the COMPILE_ERROR with its own log, as without it.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path

from flashinfer_bench.bench.runner.process import COMPILED_BUILD_TIMEOUT_S, confined, scratch_dir
from flashinfer_bench.bench.runner.server import process_context
from flashinfer_bench.bench.worker.builder import BUILT, builder_main
from flashinfer_bench.bench.worker.main import worker_build_root
from flashinfer_bench.bench.worker.sandbox import SandboxPolicy, terminate_sandboxed
from flashinfer_bench.compile import promote_entry
from flashinfer_bench.compile.ahead import worth_building_ahead
from flashinfer_bench.compile.cache import solution_key
from flashinfer_bench.data import Solution

logger = logging.getLogger(__name__)

#: A solution's state: waiting for the builder, being built, built (or failed), or left to its worker.
QUEUED, BUILDING, DONE, CLAIMED = "queued", "building", "done", "claimed"


class PreBuilder:
    def __init__(self, cache_root: Path, policy: SandboxPolicy, device: str,
                 timeout_s: float = COMPILED_BUILD_TIMEOUT_S) -> None:
        self.cache_root = cache_root
        self.policy = policy
        self.device = device
        self.timeout_s = timeout_s
        self._queue: deque[Solution] = deque()
        self._states: dict[str, str] = {}
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closing = False
        self._building: int | None = None  # the pid of the builder process at work

    def plan(self, solutions: Iterable[Solution], *, starting: Iterable[Solution] = ()) -> None:
        """Build these (in this order) ahead of their turn, where it helps and was not planned already; not those
        ``starting`` now (their workers build them at once, with every core, rather than wait for a build ahead)."""
        with self._changed:
            for solution in starting:
                self._states.setdefault(solution_key(solution), CLAIMED)
            for solution in solutions:
                key = solution_key(solution)
                if key not in self._states and worth_building_ahead(solution, self.cache_root):
                    self._states[key] = QUEUED
                    self._queue.append(solution)
            if self._queue and self._thread is None and not self._closing:
                self._thread = threading.Thread(target=self._serve, daemon=True, name="fib-prebuilder")
                self._thread.start()

    def claim(self, solution: Solution) -> None:
        """``solution``'s turn has come: wait for its build ahead if it is under way; drop it if not begun."""
        key = solution_key(solution)
        with self._changed:
            if self._states.get(key) == QUEUED:
                self._states[key] = CLAIMED
            while self._states.get(key) == BUILDING:
                self._changed.wait()

    def _serve(self) -> None:
        while True:
            with self._changed:
                while self._queue and self._states[solution_key(self._queue[0])] != QUEUED:
                    self._queue.popleft()
                if self._closing or not self._queue:
                    self._thread = None
                    return
                solution = self._queue.popleft()
                self._states[solution_key(solution)] = BUILDING
            try:
                self._build(solution)
            except Exception:  # noqa: BLE001 - a build ahead that went wrong leaves the build to the worker
                logger.exception("building %s ahead of its turn failed", solution.name)
            finally:
                with self._changed:
                    self._states[solution_key(solution)] = DONE
                    self._changed.notify_all()

    def _build(self, solution: Solution) -> None:
        """Build ``solution`` in a builder process; promote what it built once it has exited, if it built."""
        scratch = scratch_dir(self.cache_root, "builder-")
        policy, cgroup = confined(self.policy, self.device, scratch)
        process = process_context().Process(target=builder_main, daemon=True, name="fib-builder",
                                            args=(self.device, scratch, policy, solution.model_dump_json()))
        started = time.monotonic()
        try:
            with self._changed:
                if self._closing:
                    return
                process.start()
                self._building = process.pid
            process.join(self.timeout_s)
            if process.is_alive():
                terminate_sandboxed(process.pid)
                process.join(timeout=5)
            with self._changed:
                self._building = None
            seconds = time.monotonic() - started
            if process.exitcode == BUILT:
                with contextlib.suppress(OSError):
                    promote_entry(solution, worker_build_root(scratch), self.cache_root)
                logger.info("built %s ahead of its turn in %.1f s", solution.name, seconds)
            else:
                logger.info("building %s ahead of its turn did not succeed (exit status %s, %.1f s): its worker "
                            "builds it", solution.name, process.exitcode, seconds)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            if cgroup is not None and not process.is_alive():
                cgroup.remove()

    def close(self) -> None:
        """Stop: no further build; the one under way is killed (what it built is not kept)."""
        with self._changed:
            self._closing = True
            pid, thread = self._building, self._thread
        if pid is not None:
            with contextlib.suppress(OSError):
                terminate_sandboxed(pid)
        if thread is not None:
            thread.join()

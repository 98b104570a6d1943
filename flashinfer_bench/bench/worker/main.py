"""The worker process: the only place where solution code runs, inside the sandbox (worker/sandbox/).

A worker owns one device. It builds solutions (through the content-addressed build cache) and answers its
judge's requests over a JSON channel (wire/judge_worker.py): draw the inputs of a seed and call the solution, or run
a timing loop the judge steers. It never sees the reference, the reference's outputs or the run's secret, and
nothing it says is a verdict.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar

from flashinfer_bench.bench.calling import ZeroFilling
from flashinfer_bench.bench.capture import capture_fds
from flashinfer_bench.bench.harness import Harness
from flashinfer_bench.bench.process_setup import (
    device_is_healthy,
    leave_interrupts_to_the_parent,
    prepare_device,
    profile_checkpoint,
    profiled,
    release_forkserver,
)
from flashinfer_bench.bench.replay import ReplayShape
from flashinfer_bench.bench.schedstat import KeptSchedstat
from flashinfer_bench.bench.slot import Slot
from flashinfer_bench.bench.wire.failures import CallFailed, device_memory_note, failure_of
from flashinfer_bench.bench.wire.judge_worker import (
    MAX_FAILURE_CHARS,
    Built,
    Call,
    Called,
    Failed,
    JudgeChannel,
    Load,
    More,
    NewSlot,
    Next,
    Ran,
    Ready,
    Sent,
    Ship,
    Shipped,
    Stop,
    Time,
    Timed,
    ToWorker,
)
from flashinfer_bench.bench.worker.sandbox import ResourceLimits, SandboxError, SandboxPolicy, enter_sandbox
from flashinfer_bench.bench.worker.torch_state import preserved_torch_state

_Answer = TypeVar("_Answer", Next, Ship)


class WireExchange:
    """The harness's Exchange over the channel."""

    def __init__(self, channel: JudgeChannel) -> None:
        self.channel = channel
        #: The next round's seeds, where the judge sent them with the picks of the round before.
        self.ready: list[int] = []
        #: This thread's scheduler times: the harness makes the calls, and calls these methods, from it.
        self.calling_thread = KeptSchedstat("/proc/thread-self/schedstat")

    def more(self) -> list[int]:
        if self.ready:
            seeds, self.ready = self.ready, []
            return seeds
        self.channel.send(More())
        return self._answer(Next).round_seeds()

    def ran(self, count: int, more: bool, replay: bool = False) -> list[int]:
        self.channel.send(Ran(count=count, more=more, replay=replay, sent=self._sent()))
        ship = self._answer(Ship)
        self.ready = ship.round_seeds()
        return list(ship.indices)

    def shipped(self, indices: list[int]) -> None:
        self.channel.send(Shipped(indices=indices, sent=self._sent()))

    def _sent(self) -> Sent:
        """Now, and the calling thread's waits for a CPU so far: what the judge counts of a busy host's waits in
        the window this answer closes ends here (judge/clock.py HostWatch.held_up)."""
        times = self.calling_thread.read()
        return Sent(at=time.perf_counter(), waited_ns=times[1] if times is not None else None)

    def _answer(self, expected: type[_Answer]) -> _Answer:
        """The judge's answer, due at once: the judge answers as soon as it has read the worker's message."""
        answer = self.channel.receive(due=time.perf_counter())
        if not isinstance(answer, expected):
            raise RuntimeError(f"the judge sent '{answer.op}' during a timing loop where "
                               f"'{expected.model_fields['op'].default}' was due")
        return answer


class Worker:
    def __init__(self, channel: JudgeChannel, device: str, cache_root: Path, scratch: Path) -> None:
        self.channel = channel
        self.device = device
        self.cache_root = cache_root
        self.scratch = scratch
        self.runnables: dict[str, Any] = {}
        self.harness: Harness | None = None
        self.slot: Slot | None = None
        self.log_fd: int | None = None
        #: The sandbox's limits, to name the one an error ran into.
        self.limits = ResourceLimits()

    def serve(self, isolation: str) -> None:
        prepare_device(self.device)
        self.channel.send(Ready(isolation=isolation))
        while True:
            request = self.channel.receive()
            if isinstance(request, Stop):
                return
            if isinstance(request, NewSlot):
                if self.slot is not None:
                    self.slot.close()
                self.slot = Slot.open(self.channel.receive_fd(), request.size)
                if self.device.startswith("cuda"):
                    self.slot.pin()
                continue
            if isinstance(request, Load):
                self._set_log(self.channel.receive_fd())
            with capture_fds(self.log_fd), preserved_torch_state():
                try:
                    self.handle(request)
                except BaseException as exc:  # noqa: BLE001 - solution code may raise anything, SystemExit too
                    if isinstance(exc, (KeyboardInterrupt, EOFError, ConnectionError)):
                        raise
                    failure = failure_of(exc)
                    note = self.limits.note_for(exc) or device_memory_note(exc)
                    message = failure.message + (f"\n[{note}]" if note else "")
                    self.channel.send(Failed(status=failure.status.value, message=message[-MAX_FAILURE_CHARS:],
                                             healthy=device_is_healthy(self.device)))

    def _set_log(self, fd: int) -> None:
        if self.log_fd is not None:
            os.close(self.log_fd)
        self.log_fd = fd

    def handle(self, request: ToWorker) -> None:
        if isinstance(request, Load):
            self.load(request)
            self.channel.send(Built())
            return
        if self.harness is None or self.slot is None:
            raise RuntimeError(f"'{request.op}' before a solution and a buffer were given")
        if isinstance(request, Call):
            wrote = self.harness.call(request.seed, self.slot, repeat=request.repeat, rng_seed=request.rng_seed,
                                      return_inputs=request.return_inputs)
            self.channel.send(Called(wrote=wrote))
        elif isinstance(request, Time):
            replay = (ReplayShape(request.replay_first_calls, request.replay_most_calls, request.replay_rounds)
                      if request.replay_rounds and 0 < request.replay_first_calls <= request.replay_most_calls
                      else None)
            claim = self.harness.time(request.iterations, request.warmup, request.seeds,
                                      WireExchange(self.channel), self.slot, replay=replay)
            self.channel.send(Timed(samples_ms=claim.samples_ms, method=claim.method, setup_ms=claim.setup_ms,
                                    cache_policy=claim.cache_policy, cuda_graph=claim.cuda_graph))
            profile_checkpoint()
        else:
            raise RuntimeError(f"request '{request.op}' out of turn")

    def load(self, request: Load) -> None:
        from flashinfer_bench.data import Definition, Workload

        definition = Definition.model_validate_json(request.definition)
        workload = Workload.model_validate_json(request.workload)
        callee = ZeroFilling(len(definition.inputs)) if request.calibration else self.build(request.solution)
        self.harness = Harness(definition, workload, self.device, request.trace_set_root, callee)

    def build(self, solution_json: str) -> Any:
        """The solution's runnable, built once per process (or taken from the build cache)."""
        from flashinfer_bench.compile import BuildError, build_solution
        from flashinfer_bench.data import EvaluationStatus, Solution

        solution = Solution.model_validate_json(solution_json)
        key = solution.content_hash()
        runnable = self.runnables.get(key)
        if runnable is None:
            try:
                runnable = build_solution(solution, device=self.device, cache_dir=self.cache_root,
                                          scratch_dir=worker_build_root(self.scratch))
            except BuildError as exc:
                raise CallFailed(EvaluationStatus.COMPILE_ERROR, f"{exc}\n{getattr(exc, 'log', '')}".strip()) from None
            except Exception as exc:  # noqa: BLE001 - a builder failing on untrusted code is a compile error
                raise CallFailed(EvaluationStatus.COMPILE_ERROR, failure_of(exc).message) from None
            self.runnables[key] = runnable
        return runnable


def worker_build_root(scratch: Path) -> Path:
    """Where a worker builds solutions (the build cache's layout, moved into the cache when it retires)."""
    return scratch / "build"


#: Variables that tell programs where to write (temporary files, caches): all into the scratch directory, the
#: only place a worker may write. Each maps to its folder in the scratch directory.
SCRATCH_ENVIRONMENT = {"TMPDIR": "tmp", "HOME": "home", "XDG_CACHE_HOME": "home/.cache",
                       "CUDA_CACHE_PATH": "home/.nv/ComputeCache", "TORCHINDUCTOR_CACHE_DIR": "tmp/torchinductor",
                       "NUMBA_CACHE_DIR": "home/.cache/numba"}


def write_into(scratch: Path) -> None:
    """Point every program of this process at the scratch directory for its temporary files and caches."""
    for variable, folder in SCRATCH_ENVIRONMENT.items():
        path = scratch / folder
        path.mkdir(parents=True, exist_ok=True)
        os.environ[variable] = str(path)
    tempfile.tempdir = os.environ["TMPDIR"]  # Python keeps the directory it found first


def worker_main(conn: Connection, device: str, scratch: Path, policy: SandboxPolicy) -> None:
    """Process entry point: into the sandbox first (this process becomes its waiter; a new one goes on), keeping
    no descriptor but the channel. The build cache is not in its view: it reads and builds entries in its scratch
    directory, where the parent copied its solution's entry (``runner/process.py``)."""
    leave_interrupts_to_the_parent()
    release_forkserver()
    channel = JudgeChannel(conn)
    try:
        isolation = enter_sandbox(replace(policy, keep_fds=(conn.fileno(),)))
    except SandboxError as exc:
        channel.send(Failed(status="RUNTIME_ERROR", message=f"the sandbox could not be set up: {exc}", healthy=False))
        return
    write_into(scratch)
    try:
        with profiled("worker"):
            worker = Worker(channel, device, worker_build_root(scratch), scratch)
            worker.limits = policy.limits
            worker.serve(isolation.describe())
    except (EOFError, KeyboardInterrupt, ConnectionError):  # the judge (or the parent) is gone
        pass

"""The worker process: the only place where solution and reference code run.

A worker owns one device. It builds solutions (through the content-addressed build cache), keeps the baseline of
the workloads it saw last, and answers one WorkItem at a time with a WorkOutcome. Whatever it holds is rebuilt by
a replacement worker from the item alone, so nothing can go stale when it dies.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import traceback
from collections import OrderedDict
from importlib import metadata
from multiprocessing.connection import Connection
from typing import Any

from flashinfer_bench.bench.runner import protocol
from flashinfer_bench.bench.runner.capture import capture_fds
from flashinfer_bench.bench.runner.protocol import WorkItem, WorkOutcome
from flashinfer_bench.bench.runner.torch_state import preserved_torch_state
from flashinfer_bench.data import EvaluationStatus

BASELINES_KEPT = 4
#: prctl(2) option: the signal this process gets when its parent exits.
PR_SET_PDEATHSIG = 1
#: Baselines hold every trial's inputs and outputs: for the gigabyte-sized weights of some MoE definitions,
#: four of them would crowd out the next workload's, so older ones also go once the total passes this.
BASELINE_BYTES_KEPT = 1 << 30


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


def describe_environment(device: str) -> dict[str, Any]:
    import torch

    import flashinfer_bench

    libs = {"torch": torch.__version__, "flashinfer_bench": flashinfer_bench.__version__, "python": platform.python_version()}
    for name in ("triton", "flashinfer-python", "cupti-python"):
        try:
            libs[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    if torch.version.cuda:
        libs["cuda"] = torch.version.cuda
    hardware = torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else "cpu"
    return {"hardware": hardware, "libs": libs}


def prepare_device(device: str) -> None:
    """Make the device current and create its context (and CUPTI's) now, so an item is not charged for them."""
    if device == "cpu":
        # Triton kernels run through Triton's interpreter on the CPU; it reads this before a kernel is defined.
        os.environ["TRITON_INTERPRET"] = "1"
        return
    import torch

    from flashinfer_bench.testing import bench_gpu_time
    from flashinfer_bench.timing.cupti_timer import load_cupti

    torch.cuda.set_device(torch.device(device))
    scratch = torch.zeros(1, device=device)
    torch.cuda.synchronize()
    if load_cupti() is not None:
        # Sets up CUPTI's activity tracing here, while a spare worker waits, not during its first item.
        bench_gpu_time(scratch.add_, args=(1,), num_iters=1, dry_run_iters=0, device=device)


def device_is_healthy(device: str) -> bool:
    if device == "cpu":
        return True
    import torch

    try:
        torch.cuda.synchronize()
        torch.zeros(1, device=device).add_(1).item()
        return True
    except Exception:  # noqa: BLE001 - any failure here means the context is gone
        return False


class Worker:
    def __init__(self, conn: Connection, device: str, cache_dir: str | None):
        self.conn = conn
        self.device = device
        self.cache_dir = cache_dir
        self.runnables: dict[str, Any] = {}
        self.references: dict[str, Any] = {}
        self.baselines: OrderedDict[tuple[str, str], Any] = OrderedDict()

    def serve(self) -> None:
        prepare_device(self.device)
        self.conn.send((protocol.READY, describe_environment(self.device)))
        while True:
            message = self.conn.recv()
            if message[0] == protocol.STOP:
                return
            item, log_path = message[1]
            with capture_fds(log_path), preserved_torch_state():
                outcome = self.evaluate(item)
            self.conn.send((protocol.RESULT, outcome))
            if outcome.retire:
                return

    def evaluate(self, item: WorkItem) -> WorkOutcome:
        from flashinfer_bench.compile import BuildError, build_solution, is_compile_error

        try:
            key = item.solution.content_hash()
            runnable = self.runnables.get(key)
            if runnable is None:
                runnable = self.runnables[key] = build_solution(item.solution, device=self.device,
                                                                cache_dir=self.cache_dir)
        except BuildError as exc:
            return WorkOutcome(EvaluationStatus.COMPILE_ERROR, log=f"{exc}\n{getattr(exc, 'log', '')}".strip())
        except Exception:  # noqa: BLE001 - a builder failing on untrusted code is a compile error
            return WorkOutcome(EvaluationStatus.COMPILE_ERROR, log=traceback.format_exc())
        self.conn.send((protocol.BUILT, None))

        from flashinfer_bench.bench.evaluators import load_evaluator
        from flashinfer_bench.bench.evaluators.evaluator import TimedOutputsMismatch

        try:
            evaluator = load_evaluator(item.evaluator)
            baseline = self.baseline(evaluator, item)
        except Exception:  # noqa: BLE001 - the reference or the workload is broken, not the solution
            return WorkOutcome(EvaluationStatus.RUNTIME_ERROR, log="reference failed:\n" + traceback.format_exc(),
                               retire=not device_is_healthy(self.device))
        reference_latency = item.reference_latency_ms if item.reference_latency_ms is not None else baseline.mean_latency_ms
        self.conn.send((protocol.BASELINE, reference_latency))
        try:
            result = evaluator.check_correctness(
                item.definition, runnable, baseline.inputs, baseline.outputs, item.config,
                workload=item.workload, device=self.device, baseline=baseline,
            )
            if not result.passed:
                return WorkOutcome(result.status, log=result.message, correctness=result.correctness)
            performance = evaluator.eval_performance(
                item.definition, runnable, baseline.inputs, reference_latency, item.config,
                workload=item.workload, device=self.device, ref_outputs=baseline.outputs,
            )
        except TimedOutputsMismatch as exc:
            return WorkOutcome(exc.result.status, log=exc.result.message, correctness=exc.result.correctness)
        except Exception as exc:  # noqa: BLE001 - untrusted code may raise anything
            status = EvaluationStatus.COMPILE_ERROR if is_compile_error(exc) else EvaluationStatus.RUNTIME_ERROR
            return WorkOutcome(status, log=traceback.format_exc(), retire=not device_is_healthy(self.device))
        return WorkOutcome(EvaluationStatus.PASSED, log=result.message, correctness=result.correctness,
                           performance=performance)

    def baseline(self, evaluator: Any, item: WorkItem) -> Any:
        key = (*item.workload_key, item.evaluator)
        if key in self.baselines:
            self.baselines.move_to_end(key)
            return self.baselines[key]
        from flashinfer_bench.bench.evaluators.calling import reference_callee

        self.evict_baselines(keep_newest=False)  # before drawing new inputs, not while both are held
        reference = self.references.get(item.definition.name)
        if reference is None:
            reference = self.references[item.definition.name] = reference_callee(item.definition)
        baseline = evaluator.build_baseline(
            item.definition, item.workload, item.config, self.device, trace_set_root=item.trace_set_root,
            reference=reference, profile=item.profile_baseline and item.reference_latency_ms is None,
        )
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


def die_with_parent() -> None:
    """On Linux, have the kernel SIGKILL this worker when the process that started it exits.

    A worker's parent is the forkserver, which exits when the CLI does, so a worker stuck in solution code
    (which never reads its channel again) no longer outlives a CLI that was killed. The solution could undo
    this; containing it for real is the sandbox's job (issue 10)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent is gone already: the signal was never armed
        os._exit(1)
    # The forkserver stays up while any process holds the write end of its "alive" pipe, and it hands that end
    # to every process it forks: a hanging worker would keep its own parent alive. Workers start no processes
    # through the forkserver, so they let go of it (multiprocessing keeps it in a private attribute).
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    alive = getattr(server, "_forkserver_alive_fd", None)
    if isinstance(alive, int):
        with contextlib.suppress(OSError):
            os.close(alive)
        server._forkserver_alive_fd = None


def worker_main(conn: Connection, device: str, cache_dir: str | None) -> None:
    """Process entry point."""
    die_with_parent()
    try:
        Worker(conn, device, cache_dir).serve()
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass

"""DeviceHost: the Ray actor that stands for one device of one node (a GPU, or a node's CPU).

It moves data and nothing else: it writes the blobs of a group from the object store into a trace-set root of its
own, hands the group to its device process (device_process.py: a DeviceSlot, as ProcessRunner has per device) and
streams each verdict back to the driver as it exists. It never imports solution code, and no solution code runs in
its process. When the device process dies unannounced (killed, out of memory), the actor exits too, so that the
driver sees a lost host and re-queues what was not reported.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The project's modules are imported once the device process is started, not here: the actor's process imports
# this module before it can start the device process, whose worker server's imports are what the first verdict
# waits for (the protocol's models pull in pydantic and the data model, about 0.1-0.4 s).
if TYPE_CHECKING:
    from flashinfer_bench.bench.runner.ray.protocol import HostInfo, ItemReport
    from flashinfer_bench.bench.wire.parent_judge import WorkItem

DEVICE_PROCESS = "flashinfer_bench.bench.runner.ray.device_process"
STOP_TIMEOUT_S = 30.0
#: A host's own folder in the node's temporary directory: ``owner`` (the actor's pid), ``trace-set/`` (the blobs
#: of its groups) and ``logs/`` (its items' captured output, hidden from workers).
ROOT_PREFIX = "fib-ray-host-"


class DeviceProcessFailed(RuntimeError):
    """The device process raised (a device that cannot start its judge, say): the driver stops the run with it."""


def device_process_environment(omp_num_threads: str | None) -> dict[str, str]:
    """The actor's environment less Ray's own variables (``RAY_AUTH_TOKEN`` among them): the device process, its
    judge and its workers inherit it. CUDA_VISIBLE_DEVICES (the host's one GPU, set by Ray) stays.

    OMP_NUM_THREADS is the driver's (``omp_num_threads``; None: unset). Ray sets it to the actor's CPUs (1) where
    it was unset, which would leave the judge and workers one thread for torch's CPU work where a local run has
    them all (on an H100 that made the evaluations of an
    816-evaluation run 10% slower than a local run's: docs/measurements.md)."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("RAY_")}
    environment.pop("OMP_NUM_THREADS", None)
    if omp_num_threads is not None:
        environment["OMP_NUM_THREADS"] = omp_num_threads
    return environment


def take_node_niceness() -> None:
    """Run this thread, and so the device process it starts, at the niceness of the raylet that started this actor
    (the node's own) rather than at the 15 Ray gives its workers (``worker_niceness``). At 15 the device process,
    its judge and its workers would get a small share of a node busy with other work (beside two busy loops on two
    cores, device hosts took 100 s to start instead of 24: docs/measurements.md), and the judge's clock would see
    more of its windows held up. Lowering a niceness takes CAP_SYS_NICE (or an RLIMIT_NICE that allows it);
    without, the host stays at Ray's and says so on stderr (the actor's log, which Ray shows the driver). Linux
    keeps a niceness per thread, and a process started from a thread inherits that thread's."""
    node, current = os.getpriority(os.PRIO_PROCESS, os.getppid()), os.getpriority(os.PRIO_PROCESS, 0)
    if current == node:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, 0, node)
    except PermissionError:
        print(f"flashinfer-bench: the device process runs at niceness {current}, as Ray started its host; the "
              f"node's {node} takes CAP_SYS_NICE: evaluations get less of a busy node's CPUs", file=sys.stderr)


def ray_private_directories() -> tuple[str, ...]:
    """What workers must not see of Ray on this node: the session directory (the raylet's and the object store's
    sockets, logs) and ``~/.ray`` (the default place of the cluster's auth token)."""
    from ray._private.worker import global_worker

    candidates = [Path(global_worker.node.get_session_dir_path()), Path.home() / ".ray"]
    return tuple(str(path.resolve()) for path in candidates if path.is_dir())


def remove_stale_roots() -> None:
    """Remove the folders of hosts that were killed (their node stopped, their driver died) rather than stopped:
    those whose owner is no longer alive. A folder without an owner yet is being made, and is left alone."""
    for root in Path(tempfile.gettempdir()).glob(f"{ROOT_PREFIX}*"):
        try:
            owner = int((root / "owner").read_text())
            os.kill(owner, 0)
        except ProcessLookupError:
            shutil.rmtree(root, ignore_errors=True)
        except (OSError, ValueError):  # not ours to judge: being made, or another user's
            continue


class DeviceHost:
    def __init__(self, kind: str, timeout_seconds: float, items_per_worker: int | None,
                 omp_num_threads: str | None):
        take_node_niceness()
        # Ray makes a GPU host's one GPU the only visible one (CUDA_VISIBLE_DEVICES).
        self.device = "cuda:0" if kind == "cuda" else "cpu"
        remove_stale_roots()
        self.root = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX))
        (self.root / "owner").write_text(str(os.getpid()))
        self.trace_set_root = self.root / "trace-set"
        log_dir = self.root / "logs"
        self.trace_set_root.mkdir()
        log_dir.mkdir()
        ours, theirs = socket.socketpair()
        with theirs:
            self.process = subprocess.Popen([sys.executable, "-m", DEVICE_PROCESS, str(theirs.fileno())],
                                            pass_fds=(theirs.fileno(),),
                                            env=device_process_environment(omp_num_threads),
                                            cwd=self.root)
        from flashinfer_bench.bench.runner.ray.protocol import DeviceConfig

        self.conn = Connection(ours.detach())
        self.info: HostInfo | None = None
        self.conn.send(DeviceConfig(self.device, timeout_seconds, items_per_worker, str(log_dir),
                                    ray_private_directories()))

    def ready(self) -> HostInfo:
        """Once the device process's judge is up: where this host is, and its environment (asked again, the same)."""
        import ray

        from flashinfer_bench.bench.runner.ray.protocol import READY, HostInfo

        if self.info is None:
            _, environment = self._receive(READY)
            self.info = HostInfo(ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address(),
                                 self.device, environment)
        return self.info

    def run_group(self, items: list[WorkItem], blobs: Mapping[str, Any]) -> Iterator[ItemReport]:
        """Evaluate ``items`` in order on this device, yielding each verdict as it exists (a Ray streaming
        generator); ``blobs``: {path in the trace set: object ref} of every blob they read."""
        from flashinfer_bench.bench.runner.ray.blobs import materialise
        from flashinfer_bench.bench.runner.ray.protocol import GROUP, GROUP_DONE, VERDICT

        materialise(self.trace_set_root, blobs)
        self.conn.send((GROUP, [replace(item, trace_set_root=str(self.trace_set_root)) for item in items]))
        while True:
            tag, report = self._receive(VERDICT, GROUP_DONE)
            if tag == GROUP_DONE:
                return
            yield report

    def stop(self) -> None:
        """Stop the device process (its workers' builds go into this node's build cache) and clean up."""
        from flashinfer_bench.bench.runner.ray.protocol import STOP

        try:
            self.conn.send((STOP, None))
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        self.conn.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def _receive(self, *expected: str) -> tuple[str, Any]:
        from flashinfer_bench.bench.runner.ray.protocol import FAILED

        try:
            tag, payload = self.conn.recv()
        except (EOFError, OSError):
            self.process.wait()
            print(f"the device process exited with status {self.process.returncode}; this host goes with it",
                  file=sys.stderr, flush=True)
            os._exit(1)  # Ray reports the actor dead, and the driver re-queues what this host had not reported
        if tag == FAILED:
            raise DeviceProcessFailed(f"the device process for {self.device} failed:\n{payload}")
        if tag not in expected:
            raise RuntimeError(f"expected {' or '.join(expected)} from the device process, got {tag!r}")
        return tag, payload

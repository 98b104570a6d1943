"""RayRunner: the evaluations of a run spread over an existing Ray cluster, behind the same Runner interface as
ProcessRunner.

A DeviceHost actor per GPU of every node (``num_gpus=1``), or per node when the cluster has no GPU (``num_cpus=1``),
pinned to its node; each runs a DeviceSlot in a device process (host.py, device_process.py), so isolation,
timeouts, crash handling and the sandbox are those of a local run. The driver (this process) keeps the groups in
a queue, longest first (scheduling.py); a thread per host pulls the next group when its host is free and reports
each verdict through ``on_verdict`` as it arrives, so traces are written here only, as they come. Nodes that join
mid-run get hosts (the driver looks every POLL_S seconds). A host lost with its node (or killed) loses only what it
had not reported: the rest of its group goes back to the front of the queue, to run on another host.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flashinfer_bench.bench.config import BenchmarkConfig
from flashinfer_bench.bench.runner.base import OnVerdict, Runner, Verdict
from flashinfer_bench.bench.runner.ray.blobs import BlobShipper
from flashinfer_bench.bench.runner.ray.cluster import (
    Node,
    RayClusterError,
    alive_nodes,
    connect,
    describe,
    device_kind,
    one_line,
)
from flashinfer_bench.bench.runner.ray.protocol import HostInfo, ItemReport
from flashinfer_bench.bench.runner.run_state import RunState
from flashinfer_bench.bench.wire.parent_judge import WorkItem, WorkOutcome
from flashinfer_bench.data import EvaluationStatus

if TYPE_CHECKING:
    from flashinfer_bench.bench.runner.ray.scheduling import GroupQueue

logger = logging.getLogger(__name__)

#: How often the driver looks for nodes that joined (and checks that some host is left).
POLL_S = 2.0
#: An item whose evaluation lost this many hosts (its node died, or its host was killed: out of memory, say) gets
#: RUNTIME_ERROR instead of another try, so that no item can take down host after host.
MAX_HOST_LOSSES = 3
#: A node whose host failed to start this many times gets no more hosts in this run.
MAX_FAILED_STARTS = 2
#: With no host alive or starting for this long, the run stops; the traces written so far are kept (--resume).
NO_HOST_TIMEOUT_S = 300.0
#: How long idle hosts get to stop their device processes at the end (built solutions go into the node's cache).
STOP_WAIT_S = 30.0


def print_to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(eq=False)
class Host:
    """The driver's handle on one DeviceHost actor."""

    actor: Any
    node: Node
    info: HostInfo | None = None
    busy: bool = False
    lost: bool = False


class RayRunner(Runner):
    def __init__(self, address: str, *, timeout_seconds: float, items_per_worker: int | None = None,
                 announce: Callable[[str], None] = print_to_stderr):
        """Connect to the cluster at ``address`` (``auto`` or ``HOST:PORT``), say what it offers in one line
        through ``announce``, and start a host per device. Raises RayClusterError when that cannot be done."""
        self.timeout_seconds = timeout_seconds
        self.items_per_worker = items_per_worker
        self.announce = announce
        self.hosts: list[Host] = []
        #: Verdicts reported per node id, and hosts lost during the run.
        self.evaluations_by_node: Counter[str] = Counter()
        self.hosts_lost = 0
        self.state = RunState()
        self._losses: Counter[tuple[str, str, str]] = Counter()
        self._failed_starts: Counter[str] = Counter()
        self._refused_nodes: set[str] = set()
        self._last_start_failure = ""
        self._announced: set[str] = set()
        self._failures: list[BaseException] = []
        self._stopping = False
        self._lock = threading.Lock()
        self._blobs = BlobShipper()
        self._connected = connect(address)
        try:
            import ray

            from flashinfer_bench.bench.runner.ray.host import DeviceHost

            self._actor_class = ray.remote(DeviceHost)
            nodes = alive_nodes()
            self.kind = device_kind(nodes)
            if not any(node.devices(self.kind) for node in nodes):
                raise RayClusterError(f"the Ray cluster at {address!r} has no GPU and no node with a CPU to host a "
                                      "device")
            announce(describe(nodes, self.kind))
            self._start_hosts(nodes)
        except BaseException:
            self.close()
            raise

    @property
    def parallelism(self) -> int:
        with self._lock:
            return sum(not host.lost for host in self.hosts)

    def run(self, groups: Iterable[Sequence[WorkItem]], on_verdict: OnVerdict) -> None:
        from flashinfer_bench.bench.runner.ray.scheduling import GroupQueue

        queue = GroupQueue(groups)
        with self._lock:
            hosts = [host for host in self.hosts if not host.lost]
        for host in hosts:
            self._serve_in_thread(host, queue, on_verdict)
        alone_since: float | None = None
        try:
            while not queue.wait_finished(POLL_S):
                self._raise_failure()
                nodes = alive_nodes()
                for host in self._start_hosts(nodes):
                    self._serve_in_thread(host, queue, on_verdict)
                alone_since = self._check_some_host(alone_since, queue, nodes)
        except BaseException:
            queue.close()
            raise
        self._raise_failure()
        nodes = len(self.evaluations_by_node)
        lost = f"; {self.hosts_lost} device host(s) lost, their unfinished work re-queued" if self.hosts_lost else ""
        self.announce(f"ray: {sum(self.evaluations_by_node.values())} evaluation(s) on {nodes} node(s){lost}")

    # --- hosts -----------------------------------------------------------------------------------------------

    def _start_hosts(self, nodes: list[Node]) -> list[Host]:
        """A host for every device of ``nodes`` that has none (new nodes, or a host lost on a node still alive)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        resources = {"num_gpus": 1, "num_cpus": 1} if self.kind == "cuda" else {"num_cpus": 1}
        created = []
        with self._lock:
            for node in nodes:
                if node.node_id in self._refused_nodes:
                    continue
                have = sum(host.node.node_id == node.node_id and not host.lost for host in self.hosts)
                for _ in range(node.devices(self.kind) - have):
                    actor = self._actor_class.options(
                        **resources, max_restarts=0, max_task_retries=0,
                        scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
                    ).remote(self.kind, self.timeout_seconds, self.items_per_worker, os.environ.get("OMP_NUM_THREADS"))
                    created.append(Host(actor, node))
            self.hosts += created
        return created

    def _check_some_host(self, alone_since: float | None, queue: GroupQueue, nodes: list[Node]) -> float | None:
        """When since no host has been alive or starting (``nodes``: those alive now); RayClusterError once that is
        NO_HOST_TIMEOUT_S, or at once when every node that could host a device refused to."""
        with self._lock:
            if any(not host.lost for host in self.hosts):
                return None
            usable = [node for node in nodes if node.devices(self.kind)]
            if usable and all(node.node_id in self._refused_nodes for node in usable):
                raise RayClusterError(f"no node of the Ray cluster could start a device host; the last failure: "
                                      f"{self._last_start_failure}")
        now = time.monotonic()
        if alone_since is None:
            logger.warning("no device host is alive on the Ray cluster; waiting up to %g s for a node",
                           NO_HOST_TIMEOUT_S)
            return now
        if now - alone_since > NO_HOST_TIMEOUT_S:
            raise RayClusterError(f"no device host has been alive on the Ray cluster for {NO_HOST_TIMEOUT_S:g} s "
                                  f"({queue.items_left()} evaluation(s) not run; the traces written are kept: "
                                  "run again with --resume)")
        return alone_since

    def _lose(self, host: Host) -> None:
        import ray

        with self._lock:
            host.lost = True
            if host not in self.hosts:  # closed meanwhile
                return
            self.hosts.remove(host)
        ray.kill(host.actor, no_restart=True)

    # --- serving ---------------------------------------------------------------------------------------------

    def _serve_in_thread(self, host: Host, queue: GroupQueue, on_verdict: OnVerdict) -> None:
        threading.Thread(target=self._serve, args=(host, queue, on_verdict), daemon=True,
                         name=f"ray-host-{host.node.node_id[:8]}").start()

    def _serve(self, host: Host, queue: GroupQueue, on_verdict: OnVerdict) -> None:
        try:
            if host.info is None and not self._await_start(host):
                return
            while not host.lost and (group := queue.take()) is not None:
                remaining: Sequence[WorkItem] = ()
                try:
                    remaining = self._evaluate(host, group, on_verdict)
                finally:
                    queue.done(remaining)
        except BaseException as exc:  # noqa: BLE001 - raised in run()'s thread
            self._failures.append(exc)
            queue.close()

    def _await_start(self, host: Host) -> bool:
        import ray

        try:
            info = ray.get(host.actor.ready.remote())
        except ray.exceptions.RayError as exc:
            self._lose(host)
            node = host.node.node_id
            with self._lock:
                self._failed_starts[node] += 1
                self._last_start_failure = f"node {node[:8]} ({host.node.address}): {one_line(exc)}"
                refused = self._failed_starts[node] >= MAX_FAILED_STARTS
                if refused:
                    self._refused_nodes.add(node)
            if refused:
                logger.warning("node %s (%s) gets no work in this run: its device host did not start: %s",
                               node[:8], host.node.address, one_line(exc))
            return False
        host.info = info
        return True

    def _evaluate(self, host: Host, group: list[WorkItem], on_verdict: OnVerdict) -> Sequence[WorkItem]:
        """Run ``group`` on ``host``, reporting each verdict; returns what is left of it if the host is lost."""
        import ray

        items = [self.state.prepare(item) for item in group]
        refs = self._blobs.acquire(items)
        reported = 0
        host.busy = True
        try:
            stream = host.actor.run_group.options(num_returns="streaming").remote(items, refs)
            for ref in stream:
                report: ItemReport = ray.get(ref)
                self._report(host, items[reported], report, on_verdict)
                reported += 1
            return ()
        except lost_host_errors() as exc:
            return self._after_loss(host, group, reported, exc, on_verdict)
        finally:
            host.busy = False
            self._blobs.release(refs)

    def _report(self, host: Host, item: WorkItem, report: ItemReport, on_verdict: OnVerdict) -> None:
        if report.isolation is not None and not report.isolation.startswith("full isolation"):
            self._warn_once(f"solution code runs with {report.isolation} (node {host.node.address})")
        with self._lock:
            if self._stopping:
                return
            self.state.references.learn(item.workload_key, report.reference)
            self.evaluations_by_node[host.node.node_id] += 1
            on_verdict(Verdict(item, report.outcome, report.environment, report.captured_output))

    def _after_loss(self, host: Host, group: list[WorkItem], reported: int, exc: BaseException,
                    on_verdict: OnVerdict) -> Sequence[WorkItem]:
        """The host is gone: what it reported stays; the item it was on is tried again elsewhere, unless it has
        lost MAX_HOST_LOSSES hosts, and so is the rest of the group."""
        self._lose(host)
        if self._stopping or reported == len(group):  # closing, or lost after its last verdict
            return ()
        item = group[reported]
        key = (item.definition.name, item.solution.name, item.workload.uuid)
        with self._lock:
            self.hosts_lost += 1
            self._losses[key] += 1
            given_up = self._losses[key] >= MAX_HOST_LOSSES
        logger.warning("lost the device host on node %s (%s): %s; %d evaluation(s) of its group go to another host",
                       host.node.node_id[:8], host.node.address, one_line(exc), len(group) - reported - given_up)
        if not given_up:
            return group[reported:]
        assert host.info is not None  # a host that ran a group had started
        outcome = WorkOutcome(EvaluationStatus.RUNTIME_ERROR, log=(
            f"{MAX_HOST_LOSSES} device hosts were lost while this evaluation ran on them (their nodes died, or the "
            f"hosts were killed: out of memory, say); the last: {one_line(exc)}"))
        report = ItemReport(reported, outcome, host.info.environment, "", None, None)
        self._report(host, self.state.prepare(item), report, on_verdict)
        return group[reported + 1:]

    def _warn_once(self, message: str) -> None:
        with self._lock:
            if message in self._announced:
                return
            self._announced.add(message)
        logger.warning("%s", message)

    def _raise_failure(self) -> None:
        if self._failures:
            raise self._failures[0]

    def renew_secret(self) -> None:
        self.state.renew_secret()

    def close(self) -> None:
        """Stop idle hosts' device processes (their builds are kept in each node's cache), then end every host;
        disconnect if this runner connected."""
        import ray

        with self._lock:
            self._stopping = True
            hosts, self.hosts = list(self.hosts), []
        if not ray.is_initialized():
            return
        stops = [host.actor.stop.remote() for host in hosts if host.info is not None and not host.busy]
        if stops:
            ray.wait(stops, num_returns=len(stops), timeout=STOP_WAIT_S)
        for host in hosts:
            ray.kill(host.actor, no_restart=True)
        if self._connected:
            ray.shutdown()


def lost_host_errors() -> tuple[type[BaseException], ...]:
    """Ray's errors that mean a host (its actor, its node, or the objects it made) is gone, rather than a failure
    of the host's own code (RayTaskError), which stops the run as it would a local one."""
    from ray import exceptions

    return (exceptions.RayActorError, exceptions.NodeDiedError, exceptions.ObjectLostError,
            exceptions.WorkerCrashedError)


def ray_runner(address: str, config: BenchmarkConfig, *,
               announce: Callable[[str], None] = print_to_stderr) -> RayRunner:
    """The config's runner (persistent, or isolated workers) on the Ray cluster at ``address``."""
    return RayRunner(address, timeout_seconds=config.timeout_seconds,
                     items_per_worker=1 if config.use_isolated_runner else None, announce=announce)

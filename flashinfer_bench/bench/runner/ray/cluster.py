"""Reaching an existing Ray cluster, and what it offers: its nodes, their GPUs and CPUs, and the devices that
evaluations run on. Nothing here starts a cluster.

Ray is imported only inside these functions: the rest of the project (and this module's import) works without it.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from typing import Any

INSTALL_HINT = "the Ray runner needs ray: pip install 'flashinfer-bench[ray]'"
#: How long the cluster's address may take to accept a TCP connection before it counts as unreachable (Ray itself
#: would retry a dead address for minutes).
PROBE_TIMEOUT_S = 5.0


class RayClusterError(RuntimeError):
    """The Ray cluster cannot be used: ray is missing, the address is wrong or dead, or no node can host a device.
    One line; the CLI prints it and exits with status 2."""


def require_ray() -> Any:
    """The ``ray`` module, or RayClusterError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise RayClusterError(INSTALL_HINT) from None
    return ray


@dataclass(frozen=True)
class Node:
    """An alive node of the cluster and its total resources (some may be in use by other jobs)."""

    node_id: str
    address: str
    gpus: int
    cpus: float

    def devices(self, kind: str) -> int:
        """How many device hosts this node takes for ``kind``: one per GPU, or one per node with a CPU."""
        if kind == "cuda":
            return self.gpus
        return 1 if self.cpus >= 1 else 0


def connect(address: str) -> bool:
    """Connect this process to the running cluster at ``address`` (``auto`` or ``HOST:PORT``, read as Ray reads it:
    ``auto`` is ``$RAY_ADDRESS``, else the cluster started on this machine with ``ray start``). Returns whether
    this call connected (False: this process was connected already). Never starts a cluster."""
    ray = require_ray()
    if ray.is_initialized():
        return False
    if "://" in address:
        raise RayClusterError(f"ray address {address!r}: Ray Client addresses are not supported; run flashinfer-bench "
                              "on a node of the cluster (e.g. through `ray job submit`) with 'auto' or HOST:PORT")
    target = bootstrap_address(address)
    probe(target, address)
    import logging

    try:
        ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
    except (ConnectionError, ValueError, RuntimeError, ray.exceptions.RayError) as exc:
        raise RayClusterError(f"cannot connect to the Ray cluster at {target}: {one_line(exc)}") from None
    return True


def bootstrap_address(address: str) -> str:
    """The HOST:PORT that ``ray.init(address=address)`` would connect to (Ray's own resolution of ``auto``)."""
    from ray._private.services import canonicalize_bootstrap_address_or_die

    try:
        return canonicalize_bootstrap_address_or_die(address)
    except ConnectionError:
        raise RayClusterError(f"ray address {address!r}: no running Ray cluster found ($RAY_ADDRESS is not set and "
                              "none was started on this machine with `ray start --head`)") from None
    except ValueError:
        raise RayClusterError(f"ray address {address!r}: expected 'auto' or HOST:PORT of a running Ray cluster") from None


def probe(target: str, given: str) -> None:
    """Fail at once when nothing accepts connections at ``target``, rather than let Ray retry for minutes."""
    host, _, port = target.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT_S):
            pass
    except (OSError, ValueError) as exc:
        shown = target if target == given else f"{target} (from {given!r})"
        raise RayClusterError(f"no Ray cluster answers at {shown}: {one_line(exc)}") from None


def alive_nodes() -> list[Node]:
    import ray

    return [Node(entry["NodeID"], entry.get("NodeManagerAddress", "?"), int(entry["Resources"].get("GPU", 0)),
                 float(entry["Resources"].get("CPU", 0)))
            for entry in ray.nodes() if entry.get("Alive")]


def device_kind(nodes: list[Node]) -> str:
    """``cuda`` when the cluster has a GPU (then only GPUs are used, as a local run uses every visible GPU and
    not the CPU), else ``cpu``."""
    return "cuda" if any(node.gpus for node in nodes) else "cpu"


def describe(nodes: list[Node], kind: str) -> str:
    """The start-up line: the cluster, and the devices evaluations run on."""
    gpus = sum(node.gpus for node in nodes)
    cpus = sum(node.cpus for node in nodes)
    devices = sum(node.devices(kind) for node in nodes)
    per = "one per GPU" if kind == "cuda" else "one per node"
    return (f"ray cluster: {len(nodes)} node(s), {gpus} GPU(s), {cpus:g} CPU(s); each evaluation runs on a {kind} "
            f"device ({devices} device(s), {per})")


def one_line(exc: BaseException) -> str:
    """An error in one line of at most 300 characters. Ray's messages span lines, a remote traceback among them:
    the first line says what happened, the last what the remote code raised."""
    lines = [" ".join(line.split()) for line in re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).splitlines()]
    lines = [line for line in lines if line] or [type(exc).__name__]
    text = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
    return text if len(text) <= 300 else text[:297] + "..."

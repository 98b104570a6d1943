"""What the Ray runner's processes send each other: plain, picklable data between trusted processes (the driver,
a DeviceHost actor, its device process). Workers never see any of it (they talk to their judge: wire/judge_worker.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flashinfer_bench.bench.wire.parent_judge import ReferenceTiming, WorkOutcome


@dataclass(frozen=True)
class DeviceConfig:
    """How a device process runs its DeviceSlot."""

    device: str
    timeout_seconds: float
    #: None: persistent workers (one per solution per group); 1: a fresh worker per item.
    items_per_worker: int | None
    #: Where items' output is captured (hidden from workers).
    log_dir: str
    #: Other directories no worker may see (Ray's session files and sockets, its auth token).
    hidden: tuple[str, ...]


@dataclass(frozen=True)
class HostInfo:
    """A device host that is ready: where it runs, and the environment its verdicts record."""

    node_id: str
    node_address: str
    device: str
    environment: dict[str, Any]


@dataclass(frozen=True)
class ItemReport:
    """The verdict on the ``index``-th item of a group; the driver pairs it with its own WorkItem."""

    index: int
    outcome: WorkOutcome
    environment: dict[str, Any]
    captured_output: str
    #: The reference's timing on this item's workload, for the items of that workload still to come elsewhere.
    reference: ReferenceTiming | None
    #: How the worker that ran the item is isolated (one line), once one was attached.
    isolation: str | None


# Messages, device process -> host
READY = "ready"  # payload: the environment dict (the judge is up)
VERDICT = "verdict"  # payload: ItemReport
GROUP_DONE = "group_done"
FAILED = "failed"  # payload: the traceback; the device process exits
# host -> device process (the first message is a DeviceConfig)
GROUP = "group"  # payload: list[WorkItem], trace_set_root rewritten to the host's copy of the blobs
STOP = "stop"

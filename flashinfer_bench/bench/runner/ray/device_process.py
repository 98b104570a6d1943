"""The device process: a plain Python process that a DeviceHost actor starts on its node to run one DeviceSlot (a
judge and its sandboxed workers, forked from a forkserver of its own), item by item, exactly as ProcessRunner runs
one per device.

It is a process of its own, not the actor's: processes that multiprocessing starts from a Ray worker re-run the
worker's main script (Ray's default_worker.py, and ray with it) in every judge and worker, and the actor's
environment holds the cluster's credentials (``RAY_AUTH_TOKEN``), which workers must not inherit.

    python -m flashinfer_bench.bench.runner.ray.device_process FD   # FD: a socket to the host
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

# Nothing of the project is imported at module level: ``main`` starts the worker server before anything else is
# imported (the protocol's models pull in pydantic and the data model, about 0.4 s on an H100 host), since the
# server's imports are what the device's first verdict waits for.
if TYPE_CHECKING:
    from flashinfer_bench.bench.runner.device_slot import DeviceSlot
    from flashinfer_bench.bench.runner.ray.protocol import ItemReport
    from flashinfer_bench.bench.runner.run_state import ReferenceTimings
    from flashinfer_bench.bench.wire.parent_judge import ReferenceTiming, WorkItem


def evaluate(slot: DeviceSlot, item: WorkItem, index: int, log_path: str, timeout: float,
             references: ReferenceTimings) -> ItemReport:
    """One item through ``slot``, as ProcessRunner does it: the reference's timing known for its workload is reused,
    its output is captured to ``log_path`` and read back bounded."""
    from flashinfer_bench.bench.capture import take_captured
    from flashinfer_bench.bench.runner.ray.protocol import ItemReport

    item = references.fill(item)
    measured: dict[str, ReferenceTiming] = {}

    def on_baseline(uuid: str, timing: ReferenceTiming | None) -> None:
        references.learn((item.definition.name, uuid), timing)
        if timing is not None:
            measured.setdefault(uuid, timing)

    outcome, environment = slot.run(item, log_path, timeout, on_baseline)
    reference = measured.get(item.workload.uuid)
    return ItemReport(index, outcome, environment, take_captured(log_path), reference, slot.isolation())


def serve(conn: Connection) -> None:
    from flashinfer_bench.bench.runner.device_slot import DeviceSlot
    from flashinfer_bench.bench.runner.process_pool import worker_policy
    from flashinfer_bench.bench.runner.ray.protocol import (
        GROUP,
        GROUP_DONE,
        READY,
        STOP,
        VERDICT,
        DeviceConfig,
    )
    from flashinfer_bench.compile.cache import resolve_cache_root

    config: DeviceConfig = conn.recv()
    policy = worker_policy(hidden=[config.log_dir, *config.hidden])
    slot = DeviceSlot(config.device, resolve_cache_root(None), policy, items_per_worker=config.items_per_worker)
    from flashinfer_bench.bench.runner.run_state import ReferenceTimings

    references = ReferenceTimings()
    log_path = os.path.join(config.log_dir, "item.log")
    try:
        conn.send((READY, slot.environment()))
        while True:
            tag, payload = conn.recv()
            if tag == STOP:
                return
            if tag != GROUP:
                raise ValueError(f"expected {GROUP!r} or {STOP!r} from the host, got {tag!r}")
            slot.show_for(payload)
            for index, item in enumerate(payload):
                conn.send((VERDICT, evaluate(slot, item, index, log_path, config.timeout_seconds, references)))
            conn.send((GROUP_DONE, None))
    finally:
        slot.close()


def main(argv: list[str]) -> int:
    from flashinfer_bench.bench.process_setup import die_with_parent
    from flashinfer_bench.bench.runner.server import start_worker_server

    die_with_parent()  # the host actor; a node that dies takes this process, its judge and its workers with it
    start_worker_server()  # first, so that its imports overlap with this process's own
    from flashinfer_bench.bench.runner.ray.protocol import FAILED

    conn = Connection(int(argv[1]))
    try:
        serve(conn)
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        return 0  # the host is gone
    except BaseException:  # noqa: BLE001 - reported to the host, which raises it in the driver
        with contextlib.suppress(OSError):
            conn.send((FAILED, traceback.format_exc()))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Which group a free device host takes next: the longest work first, and what a lost host left of its group back
at the front. Hosts pull (``take``) when they are free, so a node that joins mid-run gets the next group.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Sequence

from flashinfer_bench.bench.runner.grouping import baseline_bytes
from flashinfer_bench.bench.wire.parent_judge import WorkItem

#: Each item counts at least this much, so that for tiny workloads the number of items still orders the groups
#: (an item's fixed costs, its worker calls and the judge's checks, do not shrink with its workload).
ITEM_FLOOR_BYTES = 1 << 20


def group_cost(group: Sequence[WorkItem]) -> int:
    """An estimate of a group's work in bytes moved: per item, its workload's baseline (every trial's inputs and
    outputs, bench/runner/grouping.py), at least ITEM_FLOOR_BYTES."""
    sizes: dict[tuple[str, str], int] = {}
    for item in group:
        if item.workload_key not in sizes:
            sizes[item.workload_key] = baseline_bytes(item.definition, item.workload, item.config.num_trials)
    return sum(max(sizes[item.workload_key], ITEM_FLOOR_BYTES) for item in group)


class GroupQueue:
    """Groups waiting for a device host, longest first; thread-safe."""

    def __init__(self, groups: Iterable[Sequence[WorkItem]]):
        self._pending = deque(sorted((list(group) for group in groups if group), key=group_cost, reverse=True))
        self._in_flight = 0
        self._closed = False
        self._changed = threading.Condition()

    def take(self) -> list[WorkItem] | None:
        """The next group, waiting while there is none but some are in flight (a lost host's remainder may come
        back); None once every group is done, or the queue is closed."""
        with self._changed:
            while not self._pending and self._in_flight and not self._closed:
                self._changed.wait()
            if self._closed or not self._pending:
                return None
            self._in_flight += 1
            return self._pending.popleft()

    def done(self, remaining: Sequence[WorkItem] = ()) -> None:
        """A taken group is over; ``remaining``, the items its host did not report, go back to the front (in
        order, to one host, as a group)."""
        with self._changed:
            self._in_flight -= 1
            if remaining:
                self._pending.appendleft(list(remaining))
            self._changed.notify_all()

    def wait_finished(self, timeout: float) -> bool:
        """Whether every group is done (or the queue closed), waiting up to ``timeout`` seconds for it."""
        with self._changed:
            return self._changed.wait_for(self._finished, timeout)

    def _finished(self) -> bool:
        return self._closed or (not self._pending and not self._in_flight)

    def close(self) -> None:
        """Stop handing out groups; waiting hosts get None."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def items_left(self) -> int:
        with self._changed:
            return sum(len(group) for group in self._pending)

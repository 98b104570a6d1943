"""What the runners of one run share, in one object: the run's secret and what the run learned of each workload's
reference (``RunState``); each device process of a Ray run keeps a ``ReferenceTimings`` of its own too."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

from flashinfer_bench.bench.seeds import new_run_secret
from flashinfer_bench.bench.wire.parent_judge import ReferenceTiming, WorkItem


class ReferenceTimings:
    """The reference's timing per workload, as the first judge to time it reported it: later items of the
    workload reuse it on any device, so the reference is timed once per run and every speed-up of the workload
    divides the same number."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str], ReferenceTiming] = {}
        self._lock = threading.Lock()

    def fill(self, item: WorkItem) -> WorkItem:
        """``item`` with the reference's timing, when it is known."""
        with self._lock:
            known = self._known.get(item.workload_key)
        return replace(item, reference=known) if known is not None else item

    def learn(self, workload_key: tuple[str, str], timing: ReferenceTiming | None) -> None:
        """The reference's timing on the workload of this ``WorkItem.workload_key``, unless one is known already."""
        if timing is not None:
            with self._lock:
                self._known.setdefault(workload_key, timing)


@dataclass
class RunState:
    #: Every input seed of this run derives from it; it goes to judges only.
    secret: int = field(default_factory=new_run_secret)
    references: ReferenceTimings = field(default_factory=ReferenceTimings)

    def renew_secret(self) -> None:
        """A new secret for what comes next: a runner that lives across runs (``serve``: one per batch) so that no
        two batches see the same inputs; the judges' baselines are kept per secret."""
        self.secret = new_run_secret()

    def prepare(self, item: WorkItem) -> WorkItem:
        """The item as a judge gets it: with the run's secret, and the reference's timing when known."""
        return self.references.fill(replace(item, secret=self.secret))

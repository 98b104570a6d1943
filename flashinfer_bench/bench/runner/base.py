"""What the Benchmark asks of a runner: evaluate groups of work items and report each verdict as it exists.

``ProcessRunner`` (process_pool.py) implements it with local processes; a runner backed by a cluster implements
the same ``run`` over the same picklable WorkItem / WorkOutcome.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from flashinfer_bench.bench.wire.parent_judge import WorkItem, WorkOutcome


@dataclass(frozen=True)
class Verdict:
    item: WorkItem
    outcome: WorkOutcome
    environment: dict[str, Any]
    captured_output: str


OnVerdict = Callable[[Verdict], None]


class Runner(ABC):
    @abstractmethod
    def run(self, groups: Iterable[Sequence[WorkItem]], on_verdict: OnVerdict) -> None:
        """Evaluate every item; items of one group (bench/runner/grouping.py) go to one device, in order."""

    @property
    def parallelism(self) -> int:
        """How many groups it evaluates at once (its devices): work is grouped for this many."""
        return 1

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release workers."""

    def renew_secret(self) -> None:  # noqa: B027 - optional hook
        """Draw new inputs from here on (a runner kept across runs, as ``serve`` keeps one across batches)."""

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

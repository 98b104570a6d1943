"""The judge's clock of an evaluation's phases (``EvaluationPhases``): which part of the judge's time went to the
build, the draws, the checks, the reference and the timed sessions.

One evaluation at a time per judge process, so the clock is this module's: ``evaluation()`` starts one, and
``phase(name)`` around a piece of work adds its time to that phase wherever the work is (the evaluators, the
context's draws) without passing anything through. Outside an evaluation ``phase`` only runs the body. Nested
phases count once: the inner one's time is taken from the outer one's.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from flashinfer_bench.bench.wire.parent_judge import EvaluationPhases

BUILD, DRAWS, CHECKS, REFERENCE, TIMED = "build", "draws", "checks", "reference", "timed"


@dataclass
class _Clock:
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    #: Of each phase under way (innermost last): the time spent in the phases nested in it so far.
    nested: list[float] = field(default_factory=list)


_clock: _Clock | None = None


@contextmanager
def phase(name: str) -> Iterator[None]:
    clock = _clock
    if clock is None:
        yield
        return
    clock.nested.append(0.0)
    started = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - started
        inner = clock.nested.pop()
        clock.seconds[name] += elapsed - inner
        if clock.nested:
            clock.nested[-1] += elapsed


class Evaluation:
    """The phases of the evaluation under way; ``phases()`` once it is over."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.started_at = time.time()
        self.started = time.perf_counter()
        self.clock = _Clock()

    def phases(self) -> EvaluationPhases:
        seconds = self.clock.seconds
        return EvaluationPhases(device=self.device, started_at=self.started_at,
                                total_s=time.perf_counter() - self.started, build_s=seconds[BUILD],
                                draws_s=seconds[DRAWS], checks_s=seconds[CHECKS], reference_s=seconds[REFERENCE],
                                timed_s=seconds[TIMED])


@contextmanager
def evaluation(device: str) -> Iterator[Evaluation]:
    """Clock the phases of the evaluation run in the body."""
    global _clock
    current = Evaluation(device)
    _clock = current.clock
    try:
        yield current
    finally:
        _clock = None

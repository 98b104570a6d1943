"""The windows the judge clocks in a timing session (judge/schedule.py): each round of calls and each shipment of
picked outputs; and what the judge makes of them (``SessionLatency``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Round:
    """One round on the judge's clock: its first call's index, how many calls it made, its window and the part of
    that window the calling thread or the judge spent waiting for a CPU."""

    first: int
    calls: int
    wall_ms: float
    held_ms: float
    #: Its calls were replayed from a CUDA graph (bench/replay.py).
    replayed: bool = False


@dataclass(frozen=True)
class Shipment:
    """The picked calls of a round shipped: how many, asked for to arrived, and the part of that spent waiting for
    a CPU."""

    first_index: int
    calls: int
    ship_ms: float
    held_ms: float


@dataclass(frozen=True)
class SessionLatency:
    """What one timing session says about the solution, after the judge's checks."""

    latency_ms: float
    """The call's time: the claimed median; when the claim is not believed, the judge's estimate of the work, or
    for a claim far below the work the least the judge's clock allows (judge/schedule.py ``TimedSchedule.latency``)."""
    setup_ms: float | None
    """The median time of the solution's setup before a call (docs/solutions.md), as claimed; None without a
    setup, or when the claim was not believed (the estimate then covers the setup too)."""
    notes: list[str]
    #: The claimed samples, when the claim was believed (empty otherwise), and the conditions the timing loop
    #: reported (wire/claims.py).
    samples_ms: list[float]
    conditions: dict[str, object]
    #: The share of the session's time a busy host held up the calls or the judge (judge/clock.py HostWatch).
    busy_fraction: float = 0.0
    #: The judge's own estimate of the work per call (its clock: ``TimedSchedule.latency``).
    clocked_ms: float = 0.0
    #: The timed calls the session made (its warm-up's not counted).
    timed_calls: int = 0

"""The windows the judge clocks in a timing session (judge/schedule.py): each round of calls and each shipment of
picked outputs; and what the judge makes of them (``SessionLatency``).

Where ``$FLASHINFER_BENCH_WINDOWS_FILE`` names a file, every session's windows are appended to it, one JSON line
per session (``log_windows``); nothing when it is unset. benchmarks/shipment_windows.py reads it."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import astuple, dataclass

WINDOWS_FILE_ENV = "FLASHINFER_BENCH_WINDOWS_FILE"


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


def log_windows(purpose: str, rounds: Sequence[Round], shipments: Sequence[Shipment], held_scale: float) -> None:
    """One session's windows as clocked (``purpose``: "calibration", "timed", ...), and the share of their waits
    for a CPU that came out of them."""
    path = os.environ.get(WINDOWS_FILE_ENV)
    if not path:
        return
    line = json.dumps({"purpose": purpose, "held_scale": held_scale, "rounds": [astuple(r) for r in rounds],
                       "shipments": [astuple(s) for s in shipments]})
    with open(path, "a", encoding="utf-8") as log:
        log.write(line + "\n")

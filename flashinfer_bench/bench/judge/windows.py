"""The windows the judge clocks in a timing session (judge/schedule.py): each round of calls, and each shipment of
picked outputs."""

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

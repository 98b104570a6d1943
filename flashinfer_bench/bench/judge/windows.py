"""The windows the judge clocks in a timing session (judge/schedule.py): each round of calls and each shipment of
picked outputs; and what the judge makes of them (``ClockBound``, ``SessionLatency``).

Where ``$FLASHINFER_BENCH_WINDOWS_FILE`` names a file, every session's windows are appended to it, one JSON line
per session (``log_windows``); nothing when it is unset. benchmarks/shipment_windows.py reads it."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import astuple, dataclass
from statistics import median

from flashinfer_bench.bench.wire.claims import TimingClaim

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


@dataclass(frozen=True)
class ClockBound:
    """What the judge's clock says of a session's work per call, which the claim of every trial the session timed
    is held to (judge/schedule.py ``TimedSchedule.latencies``, whose module docstring says why)."""

    #: The judge's estimate of the work per call, and what it was worked out from (for the trace's log).
    estimate_ms: float
    clocked: str
    #: A claim, its setup included, under this is far less than the work in a call.
    least_ms: float
    #: The work per call done while its outputs were shipped, and how much of it a call may do beyond its claim.
    while_shipping_ms: float
    shipping_allowance_ms: float
    #: What the trace's log says of the session, and the share of it a busy host held up.
    notes: tuple[str, ...]
    busy_fraction: float
    #: Why the session's claims together are impossible (None: they are not).
    impossible: str | None

    def judged(self, claim: TimingClaim, samples_ms: list[float], setup_ms: float | None,
               calls: int) -> SessionLatency:
        """One trial's latency, from the ``calls`` calls its ``samples_ms`` claim."""
        claimed = median(samples_ms)
        recorded, what = self.estimate_ms, "the judge's estimate"
        if self.impossible is not None:
            why = self.impossible
        elif self.while_shipping_ms > max(self.shipping_allowance_ms, claimed):
            why = "work done when its outputs were asked for"
        elif claimed + (setup_ms or 0.0) < self.least_ms:
            why = "far less than the work in a call"
            # A claim just above ``least_ms`` stands, so recording more for one below it would cost a liar nothing
            # and make an honest solution's latency jump from its claim to the whole window where the host made
            # that window long (host work around its kernels, or a busy host that stalled every replayed round).
            recorded, what = self.least_ms, f"the least the judge's clock allows ({self.least_ms:.4f} ms)"
        else:
            return SessionLatency(claimed, setup_ms, list(self.notes), list(samples_ms), claim.conditions(),
                                  self.busy_fraction, self.estimate_ms, calls)
        with_setup = f" and {setup_ms:.4f} ms of setup" if setup_ms is not None else ""
        return SessionLatency(recorded, None, [
            f"timing: the solution's process claimed {claimed:.4f} ms per call{with_setup}, {why}; {self.clocked}; "
            f"recorded {what} ({claim.method} claim not believed)", *self.notes], [],
            claim.conditions(), self.busy_fraction, self.estimate_ms, calls)


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

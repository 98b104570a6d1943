"""The judge's side of a timing loop: fresh seeds for every call, handed out in rounds; calls picked for checking
after their round ran; and the judge's own clock, which decides whether the latency the solution's process claims
is believed.

A session is a series of rounds. The judge sends a round's seeds (one per call, never before the previous round
has ended); the worker makes the round's calls back to back, each on fresh inputs drawn from its seed, keeps a copy
of every call's outputs, and says when the round has ended; the judge then picks which of the round's calls to check
and has their kept outputs shipped. A round costs one exchange with the judge however many calls it holds, so the
harness's cost per call is the draw, the timer's own work and the copy kept (``ROUND_CALLS``, ``KEPT_BYTES``: a
round holds fewer calls where outputs are large). Warm-up calls and timed calls never share a round.

The timer has to run in the solution's process (CUPTI sees only its own process), so the samples it reports are
the solution's word: a GPU time. What the judge knows for itself: each round's window on its clock, from sending
the seeds to hearing the round has ended, and each shipment's, from asking for the picked calls' outputs to having
them. The windows cover all the worker's time but the judge's own answers, and a round's seeds exist only once the
previous round has ended, so whatever a call's work, it lies in its round's window or in a shipment: computing a
call ahead needs its seed, and skipping a call that might be picked needs luck (the picks are made after the round,
with ``probability`` each, unknown to the worker). A picked call's outputs are checked against the reference on
the same inputs.

Less what the harness itself costs there (``floor``: measured by the judge on a callee that does nothing, in a
worker no solution code was in yet, judge/calibration.py), the judge's own time to draw the same inputs and its own
time to copy that many output bytes, what is left is the solution's: host work and GPU work, which the judge
cannot tell apart. So it disbelieves a claim only where no honest solution could have made it:

- more GPU time in all the timed calls together than their rounds took on the judge's clock (impossible);
- work when the outputs are asked for: an honest worker only copies them then. A shipment's time beyond the floor
  and ``SHIP_COPY_ALLOWANCE`` times the judge's own copy time, per shipped call, by more than
  ``HOST_ALLOWANCE_MS`` and more than the claimed time, is a solution that skipped calls and computed only what it
  had to ship;
- a claimed median under ``PLAUSIBLE_FRACTION`` of the work per call left in the timed rounds' wall time (the
  median over the rounds, ``TIMED_ROUNDS`` of them: a round's calls can only be skipped, not moved to another
  round, and skipping is caught by the picks), less ``HOST_ALLOWANCE_MS`` (the host work an honest call may do around its kernels) and a margin for the
  clock's noise.

For the first two the judge's estimate of the work (wall and shipping) is recorded instead. A claim far below
the work is raised to the least the judge believes (that fraction of the work, less the allowance and the
margin): a claim just above it would stand, so recording more would cost a liar nothing, while an honest
host-bound solution (a Python-heavy torch one: 1-2 ms of host work per call around 0.1 ms of kernels, seen on an
H100) would see its latency jump between its claim and the whole window from one session to the next as its host
time crosses the line; raised to the bound, it moves with its host time instead. Either way with a note in the
trace's log. docs/security.md states what these bounds allow per call size.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any, Protocol

import torch

from flashinfer_bench.bench.judge.clock import ClockFloor, HostReading, HostWatch, copy_out_ms, synchronize
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.slot import total_bytes
from flashinfer_bench.bench.wire.claims import TimingClaim
from flashinfer_bench.bench.wire.failures import CallFailed
from flashinfer_bench.data import EvaluationStatus


class Verdict(Protocol):
    """What a check of picked calls returns (the evaluators' ``CorrectnessResult``)."""

    @property
    def passed(self) -> bool: ...


class PickedCallCheck(Protocol):
    """How an evaluator checks the picked calls of a session (evaluators/timed_check.py)."""

    grouped: bool

    def known(self, seed: int) -> Any | None: ...
    def expected(self, seed: int, inputs: list[Any]) -> Any: ...
    def check(self, calls: list[tuple[tuple[torch.Tensor, ...], Any]]) -> Verdict | None: ...
    def finish(self) -> Verdict | None: ...

#: The picked calls of a session are checked together (one comparison, evaluator.output_errors_each) in groups
#: whose outputs and reference outputs take at most this many bytes (the comparison's float64 copies of them take
#: up to 4x that for 16-bit outputs).
CHECK_GROUP_BYTES = 16 << 20
#: The judge draws again the inputs of this many picked calls of a session at least, to time its own draw; beyond
#: them, only where the call's expected values are not known yet (the reference must run).
TIMED_DRAWS = 5
#: A round holds at most this many calls, and at most as many as keep ``KEPT_BYTES`` of outputs (at least one):
#: the worker keeps a copy of every call's outputs until the round's picks are shipped.
ROUND_CALLS, KEPT_BYTES = 100, 128 << 20
#: The planned timed calls are split into this many rounds (fewer where there are fewer calls), so that the work
#: per call is a median over rounds: a stall of the host in one round does not make an honest claim look low.
TIMED_ROUNDS = 10
#: A claimed latency under this fraction of the work left in a call's wall time, less the host allowance and the
#: margin, is not believed.
PLAUSIBLE_FRACTION = 0.5
HOST_ALLOWANCE_MS = 0.5
#: The margin: this much, plus shares of the harness's floor and of the judge's own draw and copy times (the
#: parts of a call's wall time that are subtracted as estimates and so carry their noise into the estimate).
MARGIN_MS = 0.05
FLOOR_SHARE_OF_MARGIN = 0.5
ESTIMATE_SHARE_OF_MARGIN = 0.25
#: An honest shipment takes at most the floor plus this many times the judge's own copy of the bytes per shipped
#: call (a worker's copy may go through pageable memory); more than that, by more than the host allowance and the
#: claimed time, is work done while shipping.
SHIP_COPY_ALLOWANCE = 4.0
#: Claims summing to more than the timed rounds' wall time by this factor and this much per call are impossible.
IMPOSSIBLE_FACTOR, IMPOSSIBLE_SLACK_MS = 1.05, 0.05
#: A session in which the host held up the calls or the judge for more than this share of the time says so in
#: the trace's log (the clock was corrected for it: judge/clock.py HostWatch).
NOTED_BUSY_FRACTION = 0.1


def round_calls(ctx: EvaluationContext) -> int:
    """How many calls a round of this evaluation holds at most (see ``KEPT_BYTES``)."""
    size = total_bytes(ctx.output_layouts)
    return max(1, min(ROUND_CALLS, KEPT_BYTES // max(size, 1)))


@dataclass
class PickedCall:
    index: int
    seed: int
    outputs: tuple[torch.Tensor, ...]


@dataclass(frozen=True)
class Round:
    """One round on the judge's clock: its first call's index, how many calls it made, its window and the part of
    that window the calling thread or the judge spent waiting for a CPU."""

    first: int
    calls: int
    wall_ms: float
    held_ms: float


@dataclass(frozen=True)
class Shipment:
    """The picked calls of a round shipped: how many, asked for to arrived, and the part of that spent waiting for
    a CPU."""

    first_index: int
    calls: int
    ship_ms: float
    held_ms: float


class TimedSchedule:
    """One timing loop as the judge runs it: hands out seeds a round at a time, picks calls to check after their
    round ran (each with ``probability``, and always the planned last), keeps their outputs (host copies: the judge
    puts no work on the device between the solution's calls) and clocks every round and shipment. The picked calls
    are judged after the loop (``judge_picked``)."""

    def __init__(self, ctx: EvaluationContext, purpose: tuple[object, ...], warmup: int, iterations: int,
                 probability: float, watch: HostWatch | None = None) -> None:
        self.ctx, self.probability = ctx, probability
        self.stream = ctx.seed_stream(*purpose)
        self.watch = watch
        self.started: HostReading | None = None
        self.warmup, self.calls = warmup, warmup + iterations
        #: The most calls a round holds, and so the most outputs one shipment carries.
        self.round_limit = round_calls(ctx)
        self.timed_round = max(1, -(-iterations // TIMED_ROUNDS))
        self.picks_calls = True
        self.seeds: list[int] = []
        self.rounds: list[Round] = []
        self.shipments: list[Shipment] = []
        self.picked: list[PickedCall] = []
        self.draw_ms: list[float] = []
        #: Calls reported ended so far; a round that ended before using all its seeds must be the last.
        self.ended = 0
        self.short_round = False
        self.window_opened = 0.0
        self.waits_at_open = self.waits_at_end = (0.0, 0.0)
        #: What share of the measured waits comes out of the windows: all of them, unless that is more than the
        #: session's bound allows (HostWatch.busy_fraction). Set by ``finished``, with the share of the session
        #: they took.
        self.held_scale = 0.0
        self.busy_fraction = 0.0

    def opening_round(self) -> list[int]:
        """The first round's seeds; its window opens now."""
        if self.watch is not None:
            self.started = self.watch.read()
        return self.next_round()

    def next_round(self) -> list[int]:
        """The next round's seeds, once every call so far has ended; its window opens now. Rounds end where the
        warm-up calls and the planned calls end (these in ``TIMED_ROUNDS``), and past them hold as many calls as
        the timer measures in a batch (when it measures one again), so that the timer's work on a batch falls
        between rounds."""
        start = len(self.seeds)
        if self.ended != start:
            raise CallFailed(EvaluationStatus.RUNTIME_ERROR,
                             f"the timing loop asked for more seeds with {start - self.ended} of its calls not "
                             "reported ended")
        if start < self.warmup:
            size = min(self.round_limit, self.warmup - start)
        elif start < self.calls:
            size = min(self.round_limit, self.timed_round, self.calls - start)
        else:
            size = min(self.round_limit, self.calls - self.warmup)
        seeds = [self.stream.seed(start + k) for k in range(size)]
        self.seeds.extend(seeds)
        if self.watch is not None:
            self.waits_at_open = self.watch.waits_ms()
        self.window_opened = time.perf_counter()
        return seeds

    def on_ran(self, count: int) -> list[int]:
        """Every call before ``count`` has ended: closes the round's window and returns the indices of its calls
        picked for checking, in order."""
        now = time.perf_counter()
        first = self.ended
        if self.short_round or not first < count <= len(self.seeds):
            raise CallFailed(EvaluationStatus.RUNTIME_ERROR,
                             f"the timing loop reported {count} calls ended (after {first}, with "
                             f"{len(self.seeds)} seeds handed out), or a round after one that ended early")
        held = 0.0
        if self.watch is not None:
            self.waits_at_end = self.watch.waits_ms()
            held = HostWatch.held_up(self.waits_at_open, self.waits_at_end)
        self.rounds.append(Round(first, count - first, (now - self.window_opened) * 1e3, held))
        self.ended, self.short_round = count, count < len(self.seeds)
        return [index for index in range(first, count) if self._picked(index) or index + 1 == self.calls]

    def _picked(self, index: int) -> bool:
        """Whether call ``index`` is checked: a draw from the run's secret, unpredictable to the worker and the
        same for every solution of the workload (so the reference's outputs for it serve them all: the
        evaluators' ``TimedCheck.expected``)."""
        return self.stream.seed("pick", index) / (1 << 63) < self.probability

    def on_shipped(self, outputs: Sequence[tuple[torch.Tensor, ...]], indices: Sequence[int], asked_at: float,
                   arrived_at: float) -> None:
        """The outputs of the picked calls ``indices`` of the round just ended, asked for and arrived at these
        ``time.perf_counter()`` times."""
        held = 0.0
        if self.watch is not None:
            held = HostWatch.held_up(self.waits_at_end, self.watch.waits_ms())
        self.shipments.append(Shipment(indices[0], len(indices), (arrived_at - asked_at) * 1e3, held))
        self.picked.extend(PickedCall(index, self.seeds[index], call_outputs)
                           for index, call_outputs in zip(indices, outputs, strict=True))

    def finished(self) -> None:
        """The loop is over: the waits measured in each window come out of it, as far as the session's bound on
        what the host held up allows."""
        if self.watch is None or self.started is None:
            return
        ended = self.watch.read()
        if ended is None:
            return
        session_ms = (ended.at - self.started.at) * 1e3
        bound_ms = HostWatch.busy_fraction(self.started, ended) * session_ms
        held_ms = sum(r.held_ms for r in self.rounds) + sum(s.held_ms for s in self.shipments)
        self.held_scale = min(1.0, bound_ms / held_ms) if held_ms > 0 else 0.0
        self.busy_fraction = held_ms * self.held_scale / session_ms if session_ms > 0 else 0.0

    def picked_inputs(self) -> Iterator[tuple[PickedCall, list[Any]]]:
        """Each picked call with its inputs, drawn again here one call at a time (``_drawn``)."""
        return ((call, self._drawn(call)) for call in self.picked)

    def _drawn(self, call: PickedCall) -> list[Any]:
        """The call's inputs, drawn again here; the draw's time is kept (``draw_ms``)."""
        device = self.ctx.device
        synchronize(device)
        start, waited = time.perf_counter(), self._judge_waiting_ms()
        inputs = self.ctx.inputs(call.seed)
        synchronize(device)
        self.draw_ms.append((time.perf_counter() - start) * 1e3 - (self._judge_waiting_ms() - waited))
        return inputs

    def _expected(self, call: PickedCall, check: PickedCallCheck) -> Any:
        """What the call is judged against: known already, else worked out from its inputs drawn again."""
        known = check.known(call.seed)
        if known is None or len(self.draw_ms) < TIMED_DRAWS:  # drawn to be timed too
            inputs = self._drawn(call)
            return known if known is not None else check.expected(call.seed, inputs)
        return known

    def judge_picked(self, check: PickedCallCheck) -> Verdict | None:
        """The first failing verdict among the picked calls (then ``check.finish``'s), or None. The calls are
        checked in groups of at most CHECK_GROUP_BYTES of outputs and expected values (at least one call per group)."""
        # Outputs and expected values (the reference's outputs) of a group are held together; inputs one at a time.
        size = 2 * total_bytes(self.ctx.output_layouts)
        per_group = max(1, CHECK_GROUP_BYTES // max(size, 1)) if check.grouped else 1
        for first in range(0, len(self.picked), per_group):
            result = check.check([(tuple(t.to(self.ctx.device) for t in call.outputs), self._expected(call, check))
                                  for call in self.picked[first:first + per_group]])
            if result is not None and not result.passed:
                return result
        return check.finish()

    @property
    def copy_ms(self) -> float:
        """The judge's own time to copy one call's outputs."""
        return copy_out_ms(total_bytes(self.ctx.output_layouts), self.ctx.device)

    def _draw_ms(self) -> float:
        return median(self.draw_ms) if self.draw_ms else 0.0

    def _judge_waiting_ms(self) -> float:
        return self.watch.judge_waiting_ms() if self.watch is not None else 0.0

    def _timed_rounds(self) -> list[Round]:
        """The rounds of timed calls (every round, if none was timed)."""
        return [r for r in self.rounds if r.first >= self.warmup] or self.rounds

    def _work_per_call(self, round_: Round, draw: float) -> float:
        """The mean wall time of a call in the round, less what the host held it up and the judge's own draw."""
        return (round_.wall_ms - round_.held_ms * self.held_scale) / round_.calls - draw

    def _shipping_per_call(self, shipment: Shipment) -> float:
        """A shipment's time per call shipped, less what the host held it up and the judge's own copy."""
        return (shipment.ship_ms - shipment.held_ms * self.held_scale) / shipment.calls - self.copy_ms

    def floor(self) -> ClockFloor:
        """What this loop says the harness costs per call when the callee does nothing (calibration): the cost per
        call of its cheapest timed round (the loop runs in a worker no solution code was in yet, so no round is
        slow on purpose, and one that a stall made slow says nothing of the harness)."""
        draw = self._draw_ms()
        per_call = min(self._work_per_call(r, draw) for r in self._timed_rounds())
        ship = median(self._shipping_per_call(s) for s in self.shipments) if self.shipments else 0.0
        return ClockFloor(max(per_call, 0.0), max(ship, 0.0))

    def latency(self, claim: TimingClaim, floor: ClockFloor) -> SessionLatency:
        """The latency to record, the setup's, and a note when the claim is not believed (see the module
        docstring; a setup's time is the solution's word too, and is checked with the call's)."""
        samples = claim.samples_ms
        timed = self._timed_rounds()
        timed_calls = sum(r.calls for r in timed)
        if not samples or len(samples) > timed_calls or not all(0.0 < s < float("inf") for s in samples) \
                or not all(0.0 <= s < float("inf") for s in claim.setup_ms):
            raise CallFailed(EvaluationStatus.RUNTIME_ERROR,
                             f"the solution's process reported {len(samples)} timing samples for {timed_calls} "
                             "timed calls, or samples that are not positive and finite")
        claimed = median(samples)
        setup = median(claim.setup_ms) if claim.setup_ms else None
        claimed_work = claimed + (setup or 0.0)
        claimed_total = sum(samples) + sum(claim.setup_ms[-len(samples):])
        wall = sum(r.wall_ms for r in timed)  # uncorrected: a busy host makes no claim impossible
        draw, copy = self._draw_ms(), self.copy_ms
        in_wall = max(median(self._work_per_call(r, draw) for r in timed) - floor.per_call_ms, 0.0)
        # Warm-up calls are checked but not clocked here: a first call's one-off costs are not a call's work.
        shipping = [max(self._shipping_per_call(s) - floor.ship_ms - (SHIP_COPY_ALLOWANCE - 1) * copy, 0.0)
                    for s in self.shipments if s.first_index >= self.warmup]
        while_shipping = median(shipping) if shipping else 0.0
        estimate = in_wall + while_shipping
        clocked = (f"the judge's clock puts the work at {estimate:.4f} ms ({in_wall:.4f} ms per call, "
                   f"{while_shipping:.4f} ms more while shipping its outputs)")
        margin = (MARGIN_MS + FLOOR_SHARE_OF_MARGIN * (floor.per_call_ms + floor.ship_ms)
                  + ESTIMATE_SHARE_OF_MARGIN * (draw + copy))
        least = PLAUSIBLE_FRACTION * in_wall - HOST_ALLOWANCE_MS - margin
        recorded, what = estimate, "the judge's estimate"
        if claimed_total > wall * IMPOSSIBLE_FACTOR + IMPOSSIBLE_SLACK_MS * len(samples):
            why = (f"{claimed_total:.4f} ms over its {len(samples)} timed calls, more than their rounds took on "
                   f"the judge's clock ({wall:.4f} ms)")
        elif while_shipping > max(HOST_ALLOWANCE_MS, claimed):
            why = "work done when its outputs were asked for"
        elif claimed_work < least:
            why = "far less than the work in a call"
            # A claim just above ``least`` stands, so recording more for one below it would cost a liar nothing
            # and make an honest host-bound solution's latency jump from its claim to the whole window.
            recorded, what = least, f"the least the judge's clock allows ({least:.4f} ms)"
        else:
            return SessionLatency(claimed, setup, self._busy_notes(), list(samples), claim.conditions(),
                                  self.busy_fraction, estimate)
        with_setup = f" and {setup:.4f} ms of setup" if setup is not None else ""
        return SessionLatency(recorded, None, [
            f"timing: the solution's process claimed {claimed:.4f} ms per call{with_setup}, {why}; {clocked}; "
            f"recorded {what} ({claim.method} claim not believed)", *self._busy_notes()], [], claim.conditions(),
            self.busy_fraction, estimate)

    def _busy_notes(self) -> list[str]:
        if self.busy_fraction <= NOTED_BUSY_FRACTION:
            return []
        return [f"timing: the host held up the calls or the judge for {self.busy_fraction:.0%} of the session "
                "(waiting for a CPU); the judge's clock was corrected for it"]


@dataclass(frozen=True)
class SessionLatency:
    """What one timing session says about the solution, after the judge's checks."""

    latency_ms: float
    """The call's time: the claimed median; when the claim is not believed, the judge's estimate of the work, or
    for a claim far below the work the least the judge's clock allows (see ``TimedSchedule.latency``)."""
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



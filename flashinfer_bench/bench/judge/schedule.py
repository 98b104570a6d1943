"""The judge's side of a timing loop: fresh seeds for every call, handed out in rounds; calls picked for checking
after their round ran (judge/picked.py); and the judge's own clock, which decides whether the latency the
solution's process claims is believed.

A session is a series of rounds. The judge sends a round's seeds (one per call, never before the previous round
has ended); the worker makes the round's calls back to back, each on fresh inputs, keeps a copy of every call's
outputs, and says when the round has ended; the judge then picks which of the round's calls to check (each with
``probability``, unknown to the worker) and has their kept outputs shipped. Warm-up calls and timed calls never
share a round. Calls are made one at a time, each on inputs drawn from its own seed, or after the warm-up replayed
from CUDA graphs, a round's inputs drawn on the device from its first seed (bench/replay.py, judge/replayed.py); a
replayed session may time several trials, a round each, all held to the session's bound (``latencies``).

The samples the worker reports are the solution's word. What the judge knows for itself: each round's window on
its clock, from sending the seeds to hearing the round has ended, and each shipment's. A round's seeds exist only
once the previous round has ended, so a call's work lies in its round's window or in a shipment, and skipping a
call that might be picked needs luck. Less what the harness itself costs (``floor``: measured on a callee that
does nothing, in a worker no solution code was in yet, judge/calibration.py), the judge's own time to draw the
same inputs and to copy the outputs (for replayed rounds: the exchange per round and the harness's device work
per call), what is left is the solution's work. A claim is not believed only where no honest solution makes it:

- more time in all the timed calls together than their rounds took on the judge's clock (impossible);
- work when the outputs are asked for (in the shipments' lower quartile, beyond the floor, ``SHIP_COPY_ALLOWANCE``
  times the judge's copy per call and ``SHIP_ROUND_SHARE`` of the median round, by more than ``HOST_ALLOWANCE_MS``
  and the claim): calls skipped, and only what had to be shipped computed;
- a claimed median under ``PLAUSIBLE_FRACTION`` of the work per call (the median over the timed rounds with a call
  picked), less ``HOST_ALLOWANCE_MS`` (host work an honest call may do around its kernels) and a margin for the
  clock's noise; for replayed rounds (the device's time) under ``REPLAYED_PLAUSIBLE_FRACTION`` of it less the margin.

For the first two the judge's estimate of the work is recorded instead. A claim far below the work is raised to
the least the judge believes: a claim just above it would stand, so recording more would cost a liar nothing,
while an honest host-bound solution's latency would jump between its claim and the whole window from one session
to the next. Either way with a note in the trace's log. docs/security.md states the bounds per call size.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from statistics import median
from typing import Any

import torch

from flashinfer_bench.bench.inputs import DrawAt, InputKey
from flashinfer_bench.bench.judge.arena import HostArena, give_back, lease
from flashinfer_bench.bench.judge.clock import ClockFloor, HostReading, HostWatch, copy_out_ms, synchronize
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.judge.picked import PickedCall, PickedCallCheck, Verdict, draw_again, judge_calls
from flashinfer_bench.bench.judge.replayed import (
    NOT_REPLAYED_NOTE,
    REPLAYED_MARGIN_MS,
    REPLAYED_PLAUSIBLE_FRACTION,
    exchange_floor,
    figures,
    kept_calls,
    net_samples,
    next_round_calls,
    replay_shape,
    replayed_picks,
    replayed_round_seeds,
    trial_rounds,
    work_per_call,
)
from flashinfer_bench.bench.judge.windows import ClockBound, Round, SessionLatency, Shipment, log_windows
from flashinfer_bench.bench.slot import total_bytes
from flashinfer_bench.bench.wire.claims import TimingClaim
from flashinfer_bench.bench.wire.failures import CallFailed
from flashinfer_bench.bench.wire.judge_worker import Sent
from flashinfer_bench.data import EvaluationStatus

#: A round holds at most this many calls, and at most as many as keep ``KEPT_BYTES`` of outputs (at least one).
ROUND_CALLS = 100
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
#: Work while shipping is read from the shipments' lower quartile: what the judge cannot see of a host (a virtual
#: CPU waking late) only lengthens a shipment, while work for a skipped call is in every shipment that carries one.
SHIPPING_QUANTILE = 0.25
#: A shipment after a long round takes longer, mostly with no wait for a CPU: on a quiet 2-core virtual machine the
#: median one-call shipment took 0.32-0.35 ms after rounds under 1 ms, 0.66-0.73 ms after rounds over 3 ms
#: (benchmarks/shipment_windows.py). This share of the timed rounds' median window is not read as work in one: the
#: median, since lengthening a few rounds to widen it would not show in the work per call (a median over rounds too).
SHIP_ROUND_SHARE = 0.1
#: Claims summing to more than the timed rounds' wall time by this factor and this much per call are impossible.
IMPOSSIBLE_FACTOR, IMPOSSIBLE_SLACK_MS = 1.05, 0.05
#: A session in which the host held up the calls or the judge for more than this share of the time says so in
#: the trace's log (the clock was corrected for it: judge/clock.py HostWatch).
NOTED_BUSY_FRACTION = 0.1


class TimedSchedule:
    """One timing loop as the judge runs it: hands out seeds a round at a time, picks calls to check after their
    round ran (each with ``probability``, and always the planned last), keeps their outputs (host copies: the judge
    puts no work on the device between the solution's calls) and clocks every round and shipment. The picked calls
    are judged after the loop (``judge_picked``)."""

    def __init__(self, ctx: EvaluationContext, purpose: tuple[object, ...], warmup: int, iterations: int,
                 probability: float, watch: HostWatch | None = None, exchange_ms: float = 0.0,
                 trials: int = 1, reference_call_ms: float | None = None) -> None:
        self.ctx, self.probability = ctx, probability
        self.stream, self.purpose = ctx.seed_stream(*purpose), str(purpose[0])
        self.watch = watch
        self.started: HostReading | None = None
        self.warmup, self.calls = warmup, warmup + iterations
        #: The most calls a round holds (``ROUND_CALLS``, ``KEPT_BYTES``), and so the most outputs a shipment carries.
        self.round_limit = min(ROUND_CALLS, kept_calls(ctx))
        self.iterations, self.timed_round = iterations, max(1, -(-iterations // TIMED_ROUNDS))
        self.replay = replay_shape(ctx, warmup, probability, trials, reference_call_ms)
        #: The trials this session times where its calls are replayed (judge/replayed.py ``RAMP_ROUNDS``); made one
        #: at a time, it times one, of ``iterations`` calls.
        self.trials = trials if self.replay is not None else 1
        #: What a replayed round's window holds beyond its replay (ClockFloor.replay_round_ms), to size rounds.
        self.exchange_ms = exchange_ms
        #: The first call replayed from a CUDA graph, once the worker said its timed calls are (else None).
        self.replayed_from: int | None = None
        self.picks_calls = True
        self.seeds: list[int] = []
        self.rounds: list[Round] = []
        self.shipments: list[Shipment] = []
        self.picked: list[PickedCall] = []
        self.arena: HostArena | None = None  # where the picked calls' outputs are kept (``keep``)
        self.draw_ms: list[float] = []
        #: Calls reported ended so far; a round that ended before using all its seeds must be the last.
        self.ended, self.short_round, self.window_opened = 0, False, 0.0
        self.waits_at_open = self.waits_at_asking = (0.0, 0.0)
        self.arrival_held = 0.0  # the waits taken out of the shipment that arrived last (``arrived``)
        #: What share of the measured waits comes out of the windows (HostWatch.busy_fraction bounds it), and the
        #: share of the session they took; set by ``finished``.
        self.held_scale = self.busy_fraction = 0.0

    def opening_round(self) -> list[int]:
        """The first round's seeds; its window opens now."""
        if self.watch is not None:
            self.started = self.watch.read()
        return self.next_round()

    def next_round(self) -> list[int]:
        """The next round's seeds, once every call so far has ended; its window opens now. Rounds end where the
        warm-up calls and the planned calls end (these in ``TIMED_ROUNDS``; replayed: judge/replayed.py), and past
        them hold as many calls as the timer measures in a batch, so that its work on a batch falls between rounds."""
        start = len(self.seeds)
        if self.ended != start:
            raise CallFailed(EvaluationStatus.RUNTIME_ERROR,
                             f"the timing loop asked for more seeds with {start - self.ended} of its calls not "
                             "reported ended")
        replayed = start >= self.warmup and self.replay is not None and self.replayed_from is not None
        if start < self.warmup:
            size = min(self.round_limit, self.warmup - start)
        elif replayed:
            size = self._replayed_round()
        elif start < self.calls:
            size = min(self.round_limit, self.timed_round, self.calls - start)
        else:
            size = min(self.round_limit, self.calls - self.warmup)
        if replayed:
            seeds = replayed_round_seeds(self.stream, start, size)
        else:
            seeds = [self.stream.seed(start + k) for k in range(size)]
        self.seeds.extend(seeds)
        if self.watch is not None:
            self.waits_at_open = self.watch.waits_ms()
        self.window_opened = time.perf_counter()
        return seeds

    def on_ran(self, count: int, replay: bool = False, sent: Sent | None = None) -> list[int]:
        """Every call before ``count`` has ended (``replay``: the worker replays the calls after them; ``sent``: when
        the worker said so, HostWatch.held_up): closes the round's window and returns the indices of its calls
        picked for checking, in order."""
        now = time.perf_counter()
        first = self.ended
        if self.short_round or not first < count <= len(self.seeds):
            raise CallFailed(EvaluationStatus.RUNTIME_ERROR,
                             f"the timing loop reported {count} calls ended (after {first}, with "
                             f"{len(self.seeds)} seeds handed out), or a round after one that ended early")
        if replay and (self.replay is None or count != self.warmup or self.replayed_from is not None):
            raise CallFailed(EvaluationStatus.RUNTIME_ERROR,
                             f"the timing loop said it replays the calls after call {count}, where the judge "
                             f"asked for replays after the {self.warmup} warm-up calls"
                             + ("" if self.replay is not None else " (it asked for none)"))
        held = 0.0
        if self.watch is not None:
            held = HostWatch.held_up(self.waits_at_open, self.watch.waits_ms(), sent, now)
        replayed = self.replayed_from is not None
        wall_ms = (now - self.window_opened) * 1e3
        self.rounds.append(Round(first, count - first, wall_ms, min(held, wall_ms), replayed))
        self.ended, self.short_round = count, count < len(self.seeds)
        if replay:
            self.replayed_from = count
        # Whether call i is checked: a draw from the run's secret, unpredictable to the worker and the same for
        # every solution of the workload (so the reference's outputs for it serve them all: TimedCheck.expected).
        if replayed:
            return replayed_picks(self.stream, self.probability, first, count, self.calls - 1)
        return [i for i in range(first, count)
                if self.stream.seed("pick", i) / (1 << 63) < self.probability or i + 1 == self.calls]

    def asking(self) -> float:
        """Now, as the picked calls' outputs are asked for: their shipment's window opens."""
        if self.watch is not None:
            self.waits_at_asking = self.watch.waits_ms()
        return time.perf_counter()

    def arrived(self, sent: Sent | None = None) -> float:
        """Now, as the outputs have arrived (``sent``: when the worker said they were), before the judge copies
        them out: the shipment's window closes (its waits read here, not after the copy: a wait there is in no
        window)."""
        now = time.perf_counter()
        if self.watch is not None:
            self.arrival_held = HostWatch.held_up(self.waits_at_asking, self.watch.waits_ms(), sent, now)
        return now

    def on_shipped(self, outputs: Sequence[tuple[torch.Tensor, ...]], indices: Sequence[int], asked_at: float,
                   arrived_at: float) -> None:
        """The outputs of the picked calls ``indices`` of the round just ended, asked for and arrived at these
        ``time.perf_counter()`` times (``asking``, ``arrived``)."""
        ship_ms = (arrived_at - asked_at) * 1e3
        self.shipments.append(Shipment(indices[0], len(indices), ship_ms, min(self.arrival_held, ship_ms)))
        self.picked.extend(PickedCall(index, self._key(index), call_outputs)
                           for index, call_outputs in zip(indices, outputs, strict=True))

    def _key(self, index: int) -> InputKey:
        """What call ``index`` drew its inputs from: its seed, or in a replayed round the round's first seed and
        its place in the round (bench/replay.py)."""
        round_ = self.rounds[-1]
        if not round_.replayed or self.replay is None:
            return self.seeds[index]
        return DrawAt(self.seeds[round_.first], index - round_.first)

    def _replayed_round(self) -> int:
        """The next replayed round's calls (judge/replayed.py ``next_round_calls``)."""
        assert self.replay is not None
        if len(done := self._replayed_rounds()) >= self.replay.rounds:
            raise CallFailed(EvaluationStatus.RUNTIME_ERROR,
                             f"the timing loop asked for more than the {self.replay.rounds} replayed rounds")
        return next_round_calls(self.replay, self.iterations * self.trials, done, self.exchange_ms, self.trials)

    def _replayed_rounds(self) -> list[Round]:
        return [r for r in self.rounds if r.replayed]

    def finished(self) -> None:
        """The loop is over: the waits in each window come out of it, as far as the session's bound on what the host
        held up allows. CallFailed where calls made one at a time ended before the planned last (always picked), or
        replayed calls before the planned rounds (each trial's latency is a round's)."""
        if self.ended < self.calls and not self.replayed:
            raise CallFailed(EvaluationStatus.RUNTIME_ERROR, f"the timing loop ended after {self.ended} of its "
                             f"{self.calls} planned calls")
        if self.replay is not None and self.replayed and len(made := self._replayed_rounds()) < self.replay.rounds:
            raise CallFailed(EvaluationStatus.RUNTIME_ERROR, f"the timing loop ended after {len(made)} of its "
                             f"{self.replay.rounds} replayed rounds")
        if self.watch is not None and self.started is not None and (ended := self.watch.read()) is not None:
            session_ms = (ended.at - self.started.at) * 1e3
            bound_ms = HostWatch.busy_fraction(self.started, ended) * session_ms
            held_ms = sum(r.held_ms for r in self.rounds) + sum(s.held_ms for s in self.shipments)
            self.held_scale = min(1.0, bound_ms / held_ms) if held_ms > 0 else 0.0
            self.busy_fraction = held_ms * self.held_scale / session_ms if session_ms > 0 else 0.0
        log_windows(self.purpose, self.rounds, self.shipments, self.held_scale)

    def picked_inputs(self) -> Iterator[tuple[PickedCall, list[Any]]]:
        """Each picked call with its inputs, drawn again here one call at a time (judge/picked.py)."""
        return ((call, draw_again(self.ctx, call, self.draw_ms, self.watch)) for call in self.picked)

    def keep(self, nbytes: int) -> torch.Tensor:
        """Host memory for ``nbytes`` of shipped outputs, theirs until they are judged (judge/arena.py)."""
        self.arena = self.arena or lease()
        return self.arena.take(nbytes)

    def judge_picked(self, check: PickedCallCheck) -> Verdict | None:
        """The first failing verdict among the picked calls, or None (judge/picked.py ``judge_calls``); their
        outputs' memory then serves the next session, also where a check raised."""
        try:
            return judge_calls(self.ctx, self.picked, self.draw_ms, self.watch, check, time_draws=not self.replayed)
        finally:
            self.release()

    def release(self) -> None:
        """The picked calls are done with: their outputs' memory serves the next session (judge/arena.py)."""
        self.picked, arena, self.arena = [], self.arena, None
        if arena is not None:
            synchronize(self.ctx.device)  # no copy out of it still queued
            give_back(arena)

    @property
    def copy_ms(self) -> float:  # the judge's own time to copy one call's outputs
        return copy_out_ms(total_bytes(self.ctx.output_layouts), self.ctx.device)

    def _draw_ms(self) -> float:
        return median(self.draw_ms) if self.draw_ms else 0.0

    def _timed_rounds(self) -> list[Round]:  # the rounds of timed calls (every round, if none was timed)
        return [r for r in self.rounds if r.first >= self.warmup] or self.rounds

    def _checked(self, rounds: list[Round]) -> list[Round]:
        """Of ``rounds``, those with a picked call (the planned last call's always has one), else all: a round
        shortened by skipping calls counts only where its picks missed them all (docs/security.md)."""
        return [r for r in rounds if any(r.first <= s.first_index < r.first + r.calls for s in self.shipments)] or rounds

    def _work_per_call(self, round_: Round, draw: float) -> float:
        """The mean wall time of a call in the round, less what the host held it up and the judge's own draw."""
        return (round_.wall_ms - round_.held_ms * self.held_scale) / round_.calls - draw

    def _shipping_ms(self, shipment: Shipment, round_share_ms: float) -> float:
        """A shipment's time, less the host's waits, the judge's own copy of the calls and ``round_share_ms``."""
        return shipment.ship_ms - shipment.held_ms * self.held_scale - shipment.calls * self.copy_ms - round_share_ms

    def _round_share_ms(self) -> float:  # ``SHIP_ROUND_SHARE`` of the timed rounds' median window
        return SHIP_ROUND_SHARE * median(r.wall_ms for r in self._timed_rounds()) if self.rounds else 0.0

    def floor(self) -> ClockFloor:
        """What this loop says the harness costs when the callee does nothing (calibration): the cost per call of
        its cheapest timed round (the loop runs in a worker no solution code was in yet, so no round is slow on
        purpose, and one that a stall made slow says nothing of the harness), and its median shipment's."""
        draw = self._draw_ms()
        per_call = min(self._work_per_call(r, draw) for r in self._timed_rounds())
        share = self._round_share_ms()
        ship = median(self._shipping_ms(s, share) for s in self.shipments) if self.shipments else 0.0
        return ClockFloor(max(per_call, 0.0), max(ship, 0.0))

    @property
    def replayed(self) -> bool:  # whether the worker said it replays the calls after its warm-up
        return self.replayed_from is not None

    def replay_round_floor(self, claim: TimingClaim) -> float:
        """What this loop says a replayed round costs beyond its replay (calibration, whose samples are trusted:
        judge/replayed.py ``exchange_floor``)."""
        return exchange_floor(self._replayed_rounds(), claim.samples_ms)

    def latencies(self, claim: TimingClaim, floor: ClockFloor) -> list[SessionLatency]:
        """Per trial the session timed (``trials`` where its calls were replayed, judge/replayed.py
        ``trial_rounds``; else one): the latency to record, the setup's, and a note when the claim is not believed
        (see the module docstring; a setup's time is the solution's word too, and is checked with the call's). The
        judge's clock bounds the session as a whole, and every trial's claim is held to that bound."""
        samples = claim.samples_ms
        timed = self._timed_rounds()
        timed_calls = sum(r.calls for r in timed)
        claim.check_samples(timed_calls)
        claimed_total = sum(samples) + sum(claim.setup_ms[-len(samples):])
        replayed, harness = self._replayed_rounds(), 0.0
        if self.replay is not None and replayed:
            harness = self.ctx.replay_harness_ms(max(r.calls for r in replayed), self.replay.most_calls)
            try:
                samples, claimed_total = net_samples(samples, replayed, harness)
            except ValueError as exc:
                raise CallFailed(EvaluationStatus.RUNTIME_ERROR, str(exc)) from None
        setup = median(claim.setup_ms) if claim.setup_ms else None
        wall = sum(r.wall_ms for r in timed)  # uncorrected: a busy host makes no claim impossible
        draw, copy = self._draw_ms(), self.copy_ms
        if replayed:
            in_wall = work_per_call(replayed, floor.replay_round_ms or 0.0, harness)
            least = REPLAYED_PLAUSIBLE_FRACTION * in_wall - REPLAYED_MARGIN_MS
        else:
            in_wall = max(median(self._work_per_call(r, draw) for r in self._checked(timed)) - floor.per_call_ms, 0.0)
            margin = (MARGIN_MS + FLOOR_SHARE_OF_MARGIN * (floor.per_call_ms + floor.ship_ms)
                      + ESTIMATE_SHARE_OF_MARGIN * (draw + copy))
            least = PLAUSIBLE_FRACTION * in_wall - HOST_ALLOWANCE_MS - margin
        # Warm-up calls are checked but not clocked here: a first call's one-off costs are not a call's work.
        # The floor is a shipment's (mostly the exchange, whatever the calls shipped), the copies are per call.
        share = self._round_share_ms()
        shipping = [max((self._shipping_ms(s, share) - floor.ship_ms) / s.calls - (SHIP_COPY_ALLOWANCE - 1) * copy,
                        0.0) for s in self.shipments if s.first_index >= self.warmup]
        while_shipping = sorted(shipping)[int(SHIPPING_QUANTILE * (len(shipping) - 1))] if shipping else 0.0
        estimate = in_wall + while_shipping
        clocked = (f"the judge's clock puts the work at {estimate:.4f} ms ({in_wall:.4f} ms per call, "
                   f"{while_shipping:.4f} ms more while shipping its outputs"
                   + (figures(replayed, self.held_scale, floor.replay_round_ms or 0.0, harness) if replayed else "")
                   + ")")
        impossible = claimed_total > wall * IMPOSSIBLE_FACTOR + IMPOSSIBLE_SLACK_MS * len(samples)
        bound = ClockBound(estimate, clocked, least, while_shipping, HOST_ALLOWANCE_MS, tuple(self._session_notes()),
                           self.busy_fraction, None if not impossible else (
                               f"{claimed_total:.4f} ms over its {timed_calls} timed calls, more than their rounds "
                               f"took on the judge's clock ({wall:.4f} ms)"))
        if not replayed:
            return [bound.judged(claim, list(samples), setup, timed_calls)]
        return [bound.judged(claim, [samples[i] for i in rounds], setup, sum(replayed[i].calls for i in rounds))
                for rounds in trial_rounds(len(replayed), self.trials)]

    def _session_notes(self) -> list[str]:
        notes = []
        if self.replay is not None and not self.replayed:
            notes.append(NOT_REPLAYED_NOTE)
        if self.busy_fraction > NOTED_BUSY_FRACTION:
            notes.append(f"timing: the host held up the calls or the judge for {self.busy_fraction:.0%} of the "
                         "session (waiting for a CPU); the judge's clock was corrected for it")
        return notes

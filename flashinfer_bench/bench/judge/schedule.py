"""The judge's side of a timing loop: a fresh seed per call, calls picked for checking after they ran, and the
judge's own clock, which decides whether the latency the solution's process claims is believed.

Seeds go out one call ahead: the answer to call i's "done" carries the seed of call i + 2, so the worker draws
call i + 1's inputs while the judge answers instead of after. The timer has to run in the solution's process
(CUPTI sees only its own process), so the samples it reports are the solution's word: a GPU time. What the judge
knows for itself: its clock split into one window per call, from hearing the previous call is done (or, for a
picked call, having its outputs) to hearing this one is done, and, for a picked call, the time from asking for
its outputs to having them. The windows cover all the worker's time but the judge's own answers, so whatever a
call's work, it lies in some window: a solution that computes the next call's outputs ahead (it knows their
seed) makes its own window longer by as much as the next one's is shorter, and can empty at most every other
window, which leaves the median where it was. A picked call's outputs are checked against the reference on the
same inputs. Less what the harness itself costs there (``floor``: measured by the judge on a callee that does
nothing, in a worker no solution code was in yet, judge/calibration.py), the judge's own time to draw the same inputs
(in a call's window, or in the previous call's shipping when that was picked), and its own time to copy that
many output bytes, what is left is the solution's: host work and GPU work, which the judge cannot tell apart.
So it disbelieves a claim only where no honest solution could have made it:

- more GPU time than a whole call takes on the judge's clock (impossible);
- work when the outputs are asked for: an honest worker only copies them then (and draws the next call's
  inputs, as the judge's own draw time accounts for). A shipping time beyond the
  floor and ``SHIP_COPY_ALLOWANCE`` times the judge's own copy time (a median over the picked timed calls,
  which the solution cannot tell in advance), by more than ``HOST_ALLOWANCE_MS`` and more than the claimed
  time, is a solution that skipped the timed call and computed only what it had to ship;
- a claimed median under ``PLAUSIBLE_FRACTION`` of the work left in a call's wall time, less
  ``HOST_ALLOWANCE_MS`` (the host work an honest call may do around its kernels) and a margin for the clock's
  noise.

For the first two the judge's estimate of the work (wall and shipping) is recorded instead. A claim far below
the work is raised to the least the judge believes (that fraction of the work, less the allowance and the
margin): a claim just above it would stand, so recording more would cost a liar nothing, while an honest
host-bound solution (a Python-heavy torch one: 1-2 ms of host work per call around 0.1 ms of kernels, seen on an
H100) would see its latency jump between its claim and the whole window from one session to the next as its host
time crosses the line; raised to the bound, it moves with its host time instead. Either way with a note in the
trace's log.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from statistics import median
from typing import Any, Protocol

import torch

from flashinfer_bench.bench.judge.clock import ClockFloor, HostReading, HostWatch, copy_out_ms, synchronize
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.slot import output_layouts, total_bytes
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

    def expected(self, inputs: list[Any]) -> Any: ...
    def check(self, calls: list[tuple[tuple[torch.Tensor, ...], Any]]) -> Verdict | None: ...
    def finish(self) -> Verdict | None: ...

#: The picked calls of a session are checked together (one comparison, evaluator.output_errors_each) in groups
#: whose outputs and reference outputs take at most this many bytes (the comparison's float64 copies of them take
#: up to 4x that for 16-bit outputs).
CHECK_GROUP_BYTES = 16 << 20
#: A claimed latency under this fraction of the work left in a call's wall time, less the host allowance and the
#: margin, is not believed.
PLAUSIBLE_FRACTION = 0.5
HOST_ALLOWANCE_MS = 0.5
#: The margin: this much, plus shares of the harness's floor and of the judge's own draw and copy times (the
#: parts of a call's wall time that are subtracted as estimates and so carry their noise into the estimate).
MARGIN_MS = 0.05
FLOOR_SHARE_OF_MARGIN = 0.5
ESTIMATE_SHARE_OF_MARGIN = 0.25
#: An honest shipping takes at most the floor plus this many times the judge's own copy of the bytes (a
#: worker's copy may go through pageable memory); more than that, by more than the host allowance and the
#: claimed time, is work done while shipping.
SHIP_COPY_ALLOWANCE = 4.0
#: A claim above the median wall time of a call (its window: previous call done to done) by more than this is
#: impossible.
IMPOSSIBLE_FACTOR, IMPOSSIBLE_SLACK_MS = 1.05, 0.05
#: A session in which the host held up the calls or the judge for more than this share of the time says so in
#: the trace's log (the clock was corrected for it: judge/clock.py HostWatch).
NOTED_BUSY_FRACTION = 0.1


@dataclass
class PickedCall:
    index: int
    seed: int
    outputs: tuple[torch.Tensor, ...]
    ship_ms: float
    #: The part of ``ship_ms`` the calling thread or the judge spent waiting for a CPU.
    ship_held_ms: float = 0.0


class TimedSchedule:
    """One timing loop as the judge runs it: hands out a fresh seed per call (one call ahead), picks calls to
    check after they ran (with ``probability``, and always the planned last), keeps their outputs (host copies:
    the judge puts no work on the device between the solution's calls) and clocks every call's window. The
    picked calls are judged after the loop (``judge_picked``)."""

    def __init__(self, ctx: EvaluationContext, purpose: tuple[object, ...], warmup: int, iterations: int,
                 probability: float, watch: HostWatch | None = None) -> None:
        self.ctx, self.purpose, self.probability = ctx, purpose, probability
        self.watch = watch
        self.started: HostReading | None = None
        #: Per window, the time the calling thread or the judge waited for a CPU in it (HostWatch.held_up).
        self.held_ms: list[float] = []
        self.waits_at_open = self.waits_at_done = (0.0, 0.0)
        #: What share of those waits comes out of the windows: all of them, unless that is more than the session's
        #: bound allows (HostWatch.busy_fraction). Set by ``finished``, with the share of the session they took.
        self.held_scale = 0.0
        self.busy_fraction = 0.0
        self.warmup, self.calls = warmup, warmup + iterations
        self.random = secrets.SystemRandom()
        self.seeds: list[int] = []
        #: Per call, its window (see the module docstring), and whether it opened when the previous call's
        #: outputs arrived (its inputs were then drawn during that shipping, not in the window).
        self.wall_ms: list[float] = []
        self.after_shipping: list[bool] = []
        self.window_opened = 0.0
        self.window_after_shipping = False
        self.draw_ms: list[float] = []
        self.picked: list[PickedCall] = []

    def _issue(self) -> int:
        seed = self.ctx.seed_for(*self.purpose, len(self.seeds))
        self.seeds.append(seed)
        return seed

    def opening_seeds(self) -> tuple[int, int]:
        """The first two calls' seeds; the first call's window opens now."""
        seeds = self._issue(), self._issue()
        if self.watch is not None:
            self.started = self.watch.read()
            self.waits_at_open = self.watch.waits_ms()
        self.window_opened = time.perf_counter()
        return seeds

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
        held_ms = sum(self.held_ms) + sum(call.ship_held_ms for call in self.picked)
        self.held_scale = min(1.0, bound_ms / held_ms) if held_ms > 0 else 0.0
        self.busy_fraction = held_ms * self.held_scale / session_ms if session_ms > 0 else 0.0

    def next_seed(self) -> int:
        """The seed of the call after the next, for the answer to a call's "done"."""
        return self._issue()

    def on_done(self, index: int) -> bool:
        """Closes call ``index``'s window and opens the next; True picks the call for checking."""
        if index != len(self.wall_ms) or index >= len(self.seeds):
            raise CallFailed(EvaluationStatus.RUNTIME_ERROR, f"the timing loop reported call {index} out of order")
        now = time.perf_counter()
        self.wall_ms.append((now - self.window_opened) * 1e3)
        if self.watch is not None:
            self.waits_at_done = self.watch.waits_ms()
            self.held_ms.append(HostWatch.held_up(self.waits_at_open, self.waits_at_done))
            self.waits_at_open = self.waits_at_done
        else:
            self.held_ms.append(0.0)
        self.after_shipping.append(self.window_after_shipping)
        self.window_opened, self.window_after_shipping = now, False
        return self.random.random() < self.probability or index + 1 == self.calls

    def on_shipped(self, index: int, outputs: tuple[torch.Tensor, ...], asked_at: float, arrived_at: float) -> None:
        """The outputs of picked call ``index``, asked for and arrived at these ``time.perf_counter()`` times: the
        next call's window opens when they arrived."""
        held = 0.0
        if self.watch is not None:
            self.waits_at_open = self.watch.waits_ms()
            held = HostWatch.held_up(self.waits_at_done, self.waits_at_open)
        self.picked.append(PickedCall(index, self.seeds[index], outputs, (arrived_at - asked_at) * 1e3, held))
        self.window_opened, self.window_after_shipping = arrived_at, True

    def picked_inputs(self, picked: list[PickedCall] | None = None) -> Iterator[tuple[PickedCall, list[Any]]]:
        """Each picked call (of ``picked``, else all) with its inputs, drawn again here one call at a time; the
        time of each draw is kept (``draw_ms``)."""
        device = self.ctx.device
        for call in self.picked if picked is None else picked:
            synchronize(device)
            start, waited = time.perf_counter(), self._judge_waiting_ms()
            inputs = self.ctx.inputs(call.seed)
            synchronize(device)
            self.draw_ms.append((time.perf_counter() - start) * 1e3 - (self._judge_waiting_ms() - waited))
            yield call, inputs

    def judge_picked(self, check: PickedCallCheck) -> Verdict | None:
        """The first failing verdict among the picked calls (then ``check.finish``'s), or None. The calls are
        checked in groups of at most CHECK_GROUP_BYTES of outputs and expected values (at least one call per group)."""
        # Outputs and expected values (the reference's outputs) of a group are held together; inputs one at a time.
        size = 2 * total_bytes(output_layouts(self.ctx.definition, self.ctx.workload))
        per_group = max(1, CHECK_GROUP_BYTES // max(size, 1)) if check.grouped else 1
        for first in range(0, len(self.picked), per_group):
            result = check.check([(tuple(t.to(self.ctx.device) for t in call.outputs), check.expected(inputs))
                                  for call, inputs in self.picked_inputs(self.picked[first:first + per_group])])
            if result is not None and not result.passed:
                return result
        return check.finish()

    @property
    def copy_ms(self) -> float:
        return copy_out_ms(total_bytes(output_layouts(self.ctx.definition, self.ctx.workload)), self.ctx.device)

    def _draw_ms(self) -> float:
        return median(self.draw_ms) if self.draw_ms else 0.0

    def _judge_waiting_ms(self) -> float:
        return self.watch.judge_waiting_ms() if self.watch is not None else 0.0

    def _shipping(self, call: PickedCall) -> float:
        """A picked call's shipping time less what the host held it up."""
        return call.ship_ms - call.ship_held_ms * self.held_scale

    def _windows_less_draw(self, draw: float) -> list[float]:
        """Each timed call's window (every call's, if none was timed), less what the host held it up, and less
        ``draw`` where its inputs were drawn in it."""
        calls = range(self.warmup, len(self.wall_ms)) if len(self.wall_ms) > self.warmup else range(len(self.wall_ms))
        return [self.wall_ms[k] - self.held_ms[k] * self.held_scale - (0.0 if self.after_shipping[k] else draw)
                for k in calls]

    def floor(self) -> ClockFloor:
        """What this loop says the harness costs per call, when the callee did nothing (calibration)."""
        draw = self._draw_ms()
        per_call = median(self._windows_less_draw(draw))
        ship = median(self._shipping(call) for call in self.picked) - self.copy_ms - draw if self.picked else 0.0
        return ClockFloor(max(per_call, 0.0), max(ship, 0.0))

    def latency(self, claim: TimingClaim, floor: ClockFloor) -> SessionLatency:
        """The latency to record, the setup's, and a note when the claim is not believed (see the module
        docstring; a setup's time is the solution's word too, and is checked with the call's)."""
        samples = claim.samples_ms
        done = len(self.wall_ms)
        if not samples or len(samples) > done - self.warmup or not all(0.0 < s < float("inf") for s in samples) \
                or not all(0.0 <= s < float("inf") for s in claim.setup_ms):
            raise CallFailed(EvaluationStatus.RUNTIME_ERROR,
                             f"the solution's process reported {len(samples)} timing samples for {done} calls, "
                             "or samples that are not positive and finite")
        claimed = median(samples)
        setup = median(claim.setup_ms) if claim.setup_ms else None
        claimed_work = claimed + (setup or 0.0)
        wall = median(self.wall_ms[self.warmup:] or self.wall_ms)  # uncorrected: a busy host makes no claim impossible
        draw = self._draw_ms()
        copy = self.copy_ms
        in_wall = max(median(self._windows_less_draw(draw)) - floor.per_call_ms, 0.0)
        # Warm-up calls are checked but not clocked here: a first call's one-off costs are not a call's work.
        shipping = [max(self._shipping(call) - draw - floor.ship_ms - SHIP_COPY_ALLOWANCE * copy, 0.0)
                    for call in self.picked if call.index >= self.warmup]
        while_shipping = median(shipping) if shipping else 0.0
        estimate = in_wall + while_shipping
        clocked = (f"the judge's clock puts the work at {estimate:.4f} ms ({in_wall:.4f} ms per call, "
                   f"{while_shipping:.4f} ms more while shipping its outputs)")
        margin = (MARGIN_MS + FLOOR_SHARE_OF_MARGIN * (floor.per_call_ms + floor.ship_ms)
                  + ESTIMATE_SHARE_OF_MARGIN * (draw + copy))
        least = PLAUSIBLE_FRACTION * in_wall - HOST_ALLOWANCE_MS - margin
        recorded, what = estimate, "the judge's estimate"
        if claimed_work > wall * IMPOSSIBLE_FACTOR + IMPOSSIBLE_SLACK_MS:
            why = f"more than a whole call takes on the judge's clock ({wall:.4f} ms)"
        elif while_shipping > max(HOST_ALLOWANCE_MS, claimed):
            why = "work done when its outputs were asked for"
        elif claimed_work < least:
            why = "far less than the work in a call"
            # A claim just above ``least`` stands, so recording more for one below it would cost a liar nothing
            # and make an honest host-bound solution's latency jump from its claim to the whole window.
            recorded, what = least, f"the least the judge's clock allows ({least:.4f} ms)"
        else:
            return SessionLatency(claimed, setup, self._busy_notes(), list(samples), claim.conditions(),
                                  self.busy_fraction)
        with_setup = f" and {setup:.4f} ms of setup" if setup is not None else ""
        return SessionLatency(recorded, None, [
            f"timing: the solution's process claimed {claimed:.4f} ms per call{with_setup}, {why}; {clocked}; "
            f"recorded {what} ({claim.method} claim not believed)", *self._busy_notes()], [], claim.conditions(),
            self.busy_fraction)

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



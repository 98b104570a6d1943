"""The judge's side of replayed timing sessions (bench/replay.py): how their rounds are sized, what a replayed round
costs beyond its calls (calibration), and the work per call the judge's clock puts on them.

A replayed round is one replay of a graph of its calls, with no host work between them, so its window on the
judge's clock is its calls' device work plus the exchange with the judge: sending the seeds, the graph's launch
before the first kernel, waking the worker once the device is done, hearing it. The exchange (0.1-0.7 ms, with as
much again of noise) is measured in a calibration session of the zero-filling callee, whose samples (its replays'
own times, the launch included) are trusted there; the harness's own device work per call (draws, copies of
outputs) the judge times on its own graph of calls with no call in them (``replay.harness_device_ms``). What is
left of a round's window is the solution's device work, its graph's launch included, which its samples hold too.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.judge.windows import Round
from flashinfer_bench.bench.replay import SHIPPED_MOST_CALLS, ReplayShape
from flashinfer_bench.bench.seeds import SeedStream
from flashinfer_bench.bench.slot import total_bytes

#: A round keeps at most this many bytes of outputs (the worker keeps a copy of every call's outputs until the
#: round's picks are shipped).
KEPT_BYTES = 128 << 20
#: A replayed round keeps at most this many, in its ring on the device (bench/replay.py; beside it a stage of at most
#: a graph's rows, where a round replays its graph more than once): enough for rounds of small calls with large
#: outputs to last ``REPLAYED_ROUND_MS``. With ``KEPT_BYTES``, 2 MB outputs held rounds to 64 calls, about 1.9 ms on
#: an H100, where the exchange's noise alone put honest claims below the bound (docs/measurements.md). Only the
#: picked calls' outputs are shipped (``SHIPPED_MOST_CALLS``).
REPLAYED_KEPT_BYTES = 512 << 20
#: A claimed latency under this fraction of the work per call, less this margin, is not believed: a replayed round's
#: window is the device's time, so the work per call is known to about a microsecond (docs/security.md).
REPLAYED_PLAUSIBLE_FRACTION, REPLAYED_MARGIN_MS = 0.9, 0.001
#: This many rounds after the warm-up: the first of ``REPLAYED_FIRST_CALLS`` calls (or a graph's:
#: ``first_round_calls``), the later ones the first size times a power of two, enough for about ``REPLAYED_ROUND_MS``
#: of work at the least time per call so far (``next_round_calls``; a long round makes the exchange and its noise
#: small per call: an honest claim of a few microseconds is read against them), at most ``REPLAYED_MOST_CALLS`` calls
#: and ``REPLAYED_KEPT_BYTES`` of outputs.
#: Rounds of 4 ms held too little of a small kernel's work where the harness's draws and copies were most of a
#: call's: 4 us calls beside 11 us of the harness's work, in 256-call rounds, had honest claims not believed in 5
#: of 9 runs of benchmarks/harness_overhead.py on H100s, 0.4 ms of the exchange's noise being 1.6 us a call
#: (docs/measurements.md, twelfth session).
REPLAYED_FIRST_CALLS, REPLAYED_ROUNDS = 16, 5
REPLAYED_ROUND_MS, REPLAYED_MOST_CALLS = 8.0, 1024
#: Where the reference's own calls took at most ``SHORT_CALL_MS`` each (timed by the judge, so known before any of
#: the solution's timed calls), the first round holds this many calls, whole graphs of them (bench/replay.py
#: ``GRAPH_MOST_CALLS``, so at most about a quarter of ``REPLAYED_ROUND_MS`` at the reference's pace), and the worker
#: captures that one graph, not a 16-call one beside it: a worker's captures of 4 Ki-element calls on an H100 fell
#: from 11-20 ms a session to 6-10 ms (benchmarks/worker_phases.py, docs/measurements.md). A solution much slower
#: than its reference pays for its one long first round; the rounds after it are sized on its own windows as ever
#: (``next_round_calls``). Fewer calls would weigh the exchange's noise more in the round that sizes the next.
SHORT_FIRST_CALLS = 64
SHORT_CALL_MS = REPLAYED_ROUND_MS / 4 / SHORT_FIRST_CALLS
#: A replayed session may time several trials (``num_trials``, evaluators/evaluator.py): its first this many rounds
#: (the short first and the one sized on it) are no trial's, then one round per trial, each trial's latency its
#: round's sample; the judge clocks and checks all of them together (judge/schedule.py ``TimedSchedule.latencies``).
#: One warm-up, one ramp and one shipment per round then serve every trial: a session per trial, each of
#: ``REPLAYED_ROUNDS`` rounds, spent three times the rounds and the judge's picks on the defaults' three trials.
RAMP_ROUNDS = 2
#: The ramp's last round (sized on the first, no trial's) is sized for this share of ``REPLAYED_ROUND_MS``: it only
#: sizes the trials' rounds after it. Sized for the whole after a 64-call first round (``first_round_calls``), it held
#: 1,024 calls and 6.6-6.9 ms (medians over benchmarks/harness_overhead.py's sessions on H100s), where the 16-call
#: first round's slower reading had given it 512 calls and 4.7-6.2 ms; at half, 512 calls and 3.9 ms
#: (docs/measurements.md).
RAMP_SIZING_SHARE = 0.5
#: A replayed round's calls are each picked for checking with the session's probability, or with this many over
#: the round's calls where that is less (each pick costs the judge a reference call, unless a solution before had
#: the same one checked). Skipping a share f of one round's calls then escapes every pick with probability about
#: exp(-f * REPLAYED_ROUND_PICKS), whatever the round's size (docs/security.md). A check that needs every call
#: (probability 1: sampling's) keeps its rounds at this many calls instead.
REPLAYED_ROUND_PICKS = 16
#: A round that a busy host held up for more than this share of its window (the worker or the judge waiting for a
#: CPU: once as the round is launched and once as it ends, about as long whatever the round's length) makes the
#: next round twice as long. The windows are not corrected for such waits (``work_per_call``), so on a busy host an
#: honest claim is read against the least held-up round: with 16 busy loops on an H100 host, each of the four later
#: 64-call rounds of a 100 us call was held up 1.0-4.1 ms, and the claim was not believed (docs/security.md).
LENGTHENED_HELD_SHARE = 0.03
#: A replayed call's sample less the harness's work is at least this (a callee that does next to nothing).
LEAST_SAMPLE_MS = 1e-6
#: Said in the trace's log of a session whose calls the judge asked to have replayed and the worker made one at a
#: time (a setup, a call no CUDA graph can hold, or a solution that will not): its claim is held to the bound for
#: calls made one at a time, far looser below a millisecond (docs/security.md).
NOT_REPLAYED_NOTE = ("timing: the calls were made one at a time, not replayed from a CUDA graph as the judge asked; "
                     "the judge's clock bounds the claim more loosely (docs/security.md)")


def kept_calls(ctx: EvaluationContext, kept_bytes: int = KEPT_BYTES) -> int:
    """How many calls' outputs fit in ``kept_bytes`` (at least one)."""
    return max(1, kept_bytes // max(total_bytes(ctx.output_layouts), 1))


def replay_shape(ctx: EvaluationContext, warmup: int, probability: float, trials: int = 1,
                 reference_call_ms: float | None = None) -> ReplayShape | None:
    """How a session of ``trials`` trials replays its timed calls (each picked for checking with ``probability``),
    or None where it does not: no warm-up call (the worker says it replays when the warm-up ends) or inputs whose
    draws need the host. ``reference_call_ms``: the reference's latency on this workload, where the judge timed it
    (``first_round_calls``)."""
    if not warmup or ctx.input_plan.replay_obstacle is not None:
        return None
    most = REPLAYED_ROUND_PICKS if probability >= 1.0 else REPLAYED_MOST_CALLS
    most = max(1, min(most, kept_calls(ctx, REPLAYED_KEPT_BYTES)))
    return ReplayShape(min(first_round_calls(reference_call_ms), most), most,
                       REPLAYED_ROUNDS if trials <= 1 else RAMP_ROUNDS + trials)


def first_round_calls(reference_call_ms: float | None) -> int:
    """The calls of a session's first replayed round: ``SHORT_FIRST_CALLS`` where the reference's calls are short
    (``SHORT_CALL_MS``), else ``REPLAYED_FIRST_CALLS``."""
    if reference_call_ms is not None and 0.0 < reference_call_ms <= SHORT_CALL_MS:
        return SHORT_FIRST_CALLS
    return REPLAYED_FIRST_CALLS


def trial_rounds(rounds: int, trials: int) -> list[range]:
    """Which of a replayed session's ``rounds`` rounds time each of its ``trials`` trials (``RAMP_ROUNDS``): all of
    them for one trial."""
    if trials <= 1:
        return [range(rounds)]
    return [range(RAMP_ROUNDS + trial, RAMP_ROUNDS + trial + 1) for trial in range(trials)]


def replayed_round_seeds(stream: SeedStream, first: int, calls: int) -> list[int]:
    """The seeds handed out for a replayed round of ``calls`` calls from call ``first`` on: its calls draw their
    inputs from its first seed (bench/replay.py), so that seed, then 0 for each other call (wire/judge_worker.py
    ``Next``): a hash of the run's secret per call would cost the judge about 2.5 ms per 1,024 calls."""
    return [stream.seed(first), *[0] * (calls - 1)]


def round_probability(probability: float, calls: int) -> float:
    """Each call's chance of being picked in a replayed round of ``calls`` (``REPLAYED_ROUND_PICKS``)."""
    return probability if probability >= 1.0 else min(probability, REPLAYED_ROUND_PICKS / max(calls, 1))


def replayed_picks(stream: SeedStream, probability: float, first: int, count: int, planned_last: int) -> list[int]:
    """The calls of a replayed round (``first`` to ``count``) picked for checking: each with ``round_probability``,
    drawn from a generator seeded from the run's secret once per round (the same for every solution whose rounds are
    the same: a hash per call cost the judge about 2.5 ms per 1,024 calls), and ``planned_last`` where the round holds
    it; at most ``SHIPPED_MOST_CALLS``, the planned last among them."""
    chance, each = random.Random(stream.seed("picks", first)).random, round_probability(probability, count - first)
    picks = [i for i in range(first, count) if chance() < each or i == planned_last]
    if len(picks) <= SHIPPED_MOST_CALLS:
        return picks
    kept = picks[:SHIPPED_MOST_CALLS - 1]
    return [*kept, planned_last if planned_last in picks[len(kept):] else picks[len(kept)]]


def later_round_calls(replay: ReplayShape, iterations: int, per_call_ms: float | None,
                      round_ms: float = REPLAYED_ROUND_MS) -> int:
    """The calls of each replayed round after the first: the first round's calls times a power of two, enough for
    the ``iterations`` timed calls planned in all (every trial's) and for ``round_ms`` at ``per_call_ms`` (where
    known), at most ``replay.most_calls``."""
    wanted = -(-max(iterations - replay.first_calls, 0) // max(replay.rounds - 1, 1))
    if per_call_ms is not None:
        wanted = max(wanted, int(round_ms / max(per_call_ms, 1e-6)))
    calls = replay.first_calls
    while calls < wanted and calls * 2 <= replay.most_calls:
        calls *= 2
    return calls


def next_round_calls(replay: ReplayShape, iterations: int, done: Sequence[Round], exchange_ms: float,
                     trials: int = 1) -> int:
    """The next replayed round's calls, after the replayed rounds ``done``: after the first, sized at the least time
    per call of the rounds so far (a window less the exchange and what the host held it up: whatever else a window
    held makes the rounds shorter than asked for, never longer; the first round's, of few calls, came out up to four
    times the later ones' on an H100, and rounds sized on it alone lasted half ``REPLAYED_ROUND_MS``), and never
    fewer than the round before; twice those (up to ``replay.most_calls``) after a later round the host held up for
    more than ``LENGTHENED_HELD_SHARE`` of its window. In a session of several ``trials``, the ramp's last round
    is sized for ``RAMP_SIZING_SHARE`` of ``REPLAYED_ROUND_MS``."""
    if not done:
        return replay.first_calls
    latest = done[-1]
    share = RAMP_SIZING_SHARE if trials > 1 and len(done) == RAMP_ROUNDS - 1 else 1.0
    calls = later_round_calls(replay, iterations, min((r.wall_ms - r.held_ms - exchange_ms) / r.calls for r in done),
                              REPLAYED_ROUND_MS * share)
    if len(done) > 1:
        calls = max(calls, latest.calls)
        if latest.held_ms > LENGTHENED_HELD_SHARE * latest.wall_ms:
            calls = min(2 * calls, replay.most_calls)
    return calls


def exchange_floor(rounds: Sequence[Round], samples_ms: Sequence[float]) -> float:
    """What a replayed round costs beyond its replay, from a calibration session's rounds and its trusted samples
    (each round's replay time per call): the least over the rounds of the window less the replay, as clocked, as a
    session's work is taken from its least round (``work_per_call``): a busy host lengthens some rounds of both."""
    return max(0.0, min(r.wall_ms - r.calls * sample for r, sample in zip(rounds, samples_ms, strict=True)))


def work_per_call(rounds: Sequence[Round], exchange_ms: float, harness_ms: float) -> float:
    """The solution's device work per call in a session's replayed rounds: each round's window less the exchange,
    per call, less the harness's own work per call, the least over the rounds after the first (the first is short,
    so the exchange's noise weighs on it most; a round whose graph was captured in its window, or that a busy host
    stalled, is only longer). Windows are taken as clocked, not less the time the host held the calling thread up:
    a thread kept waiting for a CPU while the device works (one that launches a long graph, or polls instead of
    sleeping) would have that work taken out. Skipping some of one round's calls shortens it, and each skipped call
    is picked with the session's probability (docs/security.md)."""
    later = rounds[1:] or rounds
    return max(min((r.wall_ms - exchange_ms) / r.calls for r in later) - harness_ms, 0.0)


def net_samples(samples_ms: Sequence[float], rounds: Sequence[Round],
                harness_ms: float) -> tuple[list[float], float]:
    """A replayed session's samples (one per round: its time per call, the harness's work included) less the
    judge's own measure of that work, and the time they claim in all; ValueError where there is not one per
    round."""
    if len(samples_ms) != len(rounds):
        raise ValueError(f"the solution's process reported {len(samples_ms)} timing samples for {len(rounds)} "
                         "replayed rounds")
    total = sum(sample * r.calls for sample, r in zip(samples_ms, rounds, strict=True))
    return less_harness(samples_ms, harness_ms), total


def less_harness(samples_ms: Sequence[float], harness_ms: float) -> list[float]:
    """Replayed samples (a round's time per call, the harness's own device work included) less that work, at least
    ``LEAST_SAMPLE_MS`` each: a solution's (``net_samples``) and the reference's (judge/local.py)."""
    return [max(sample - harness_ms, LEAST_SAMPLE_MS) for sample in samples_ms]


def figures(rounds: Sequence[Round], held_scale: float, exchange_ms: float, harness_ms: float) -> str:
    """What a replayed session's work per call was worked out from, for the trace's log."""
    clocked = ", ".join(f"{r.calls} calls in {r.wall_ms:.4f} ms ({r.held_ms * held_scale:.4f} ms held up)"
                        for r in rounds)
    return (f"; replayed rounds: {clocked}, less {exchange_ms:.4f} ms per round for the exchange and "
            f"{harness_ms:.4f} ms per call of the harness's device work")

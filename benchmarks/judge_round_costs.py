"""The judge's own CPU time per timing session for handing out seeds and drawing picks (judge/schedule.py), the
part of a session's cost that grows with its calls on the judge's side: a replayed session at the defaults (a
16-call round, then 4 rounds of up to 1,024 calls: judge/replayed.py) and a session of calls made one at a time.

Nothing is called and no clock is read but the schedule's: the windows are empty, so this is the judge's
bookkeeping alone (best of ``--repeat``, process CPU time).

    python3 benchmarks/judge_round_costs.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import time


def session_ms(replayed: bool, repeat: int) -> tuple[float, int]:
    """Best CPU ms of one session's seeds and picks, and its calls."""
    from flashinfer_bench.bench.config import ResolvedEvalConfig
    from flashinfer_bench.bench.judge.context import EvaluationContext
    from flashinfer_bench.bench.judge.replayed import (
        REPLAYED_FIRST_CALLS,
        REPLAYED_MOST_CALLS,
        REPLAYED_ROUNDS,
    )
    from flashinfer_bench.bench.judge.schedule import TimedSchedule
    from flashinfer_bench.bench.replay import ReplayShape
    from flashinfer_bench.data import Definition, Workload

    definition = Definition.model_validate({
        "name": "scale", "op_type": "elementwise", "axes": {"n": {"type": "var"}},
        "inputs": {"x": {"shape": ["n"], "dtype": "float32"}}, "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
        "reference": "def run(x):\n    return x * 2\n"})
    config = ResolvedEvalConfig(warmup_runs=10, iterations=50, num_trials=3, rtol=1e-2, atol=1e-2)
    ctx = EvaluationContext(definition, Workload(uuid="w", axes={"n": 64}, inputs={}), config, "cpu", None, 1)
    best, calls = float("inf"), 0
    for trial in range(repeat):
        schedule = TimedSchedule(ctx, ("timed", trial), config.warmup_runs, config.iterations, 0.125)
        if replayed:
            schedule.replay = ReplayShape(REPLAYED_FIRST_CALLS, REPLAYED_MOST_CALLS, REPLAYED_ROUNDS)
        start = time.process_time()
        seeds = schedule.opening_round()
        while True:
            count = schedule.ended + len(seeds)
            schedule.on_ran(count, replay=replayed and count == config.warmup_runs)
            if schedule.replayed and len(schedule.rounds) > REPLAYED_ROUNDS or \
                    not schedule.replayed and count >= schedule.calls:
                break
            seeds = schedule.next_round()
        best, calls = min(best, (time.process_time() - start) * 1e3), schedule.ended
    return best, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    for replayed in (True, False):
        ms, calls = session_ms(replayed, args.repeat)
        print(f"{'replayed' if replayed else 'one at a time':>14}: {calls:>5} calls, {ms:7.2f} ms of the judge's CPU "
              f"per session ({ms / calls * 1e3:.2f} us per call)")


if __name__ == "__main__":
    main()

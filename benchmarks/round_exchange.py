"""What a replayed round's window holds beyond the device's work, part by part: the exchange between judge and
worker that the judge's clock cannot tell from a solution's work (judge/replayed.py, bench/waiting.py).

This process judges ``scale_add`` at the default settings (``timed_call_costs.py``: the reference timed once per
workload, the solution loaded again for each evaluation) with a real worker process, not sandboxed, on the first
device, ``--evaluations`` evaluations per ``--sizes`` workload. Clocks on both sides stamp each replayed round:
the judge opening its window (the seeds handed out) and closing it (the worker's answer read); the worker having
the seeds, queueing the round, done waiting for it (with the round's device time, CUDA events) and answering.
Per round size it prints the medians of the window, of the device's time and of the rest, and the rest's parts:
- to the worker: from the window's opening until the worker has read the seeds;
- before the round: until the worker starts queueing it;
- waiting beyond the device: from queueing the round until the worker knows it ended, less the device's time;
- answering: from the worker knowing the round ended until it starts its answer (``WireExchange.ran``);
- to the judge: until the judge has read that answer.
The parts and the device's time make up the window.
Last, over all rounds, the 10th percentile, median and 90th percentile of each part. Needs a CUDA device.

    python3 benchmarks/round_exchange.py [--sizes 4096,262144] [--evaluations 6]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import timed_call_costs

#: The folder where each worker writes its stamps when it stops (set by ``main`` before any process starts: the
#: workers are forked from a server that has the environment of its start).
STAMPS_ENV = "FLASHINFER_BENCH_ROUND_STAMPS"
#: The parts of a round's window beyond the device's work, in order.
PARTS = ("to the worker", "before the round", "waiting beyond the device", "answering", "to the judge")


def stamping_worker(conn, device: str, scratch) -> None:
    """worker/main.py's worker, not sandboxed, stamping each replayed round; writes the stamps when it stops:
    ``answered`` (seeds read, or any other answer of the judge), ``queued``, ``ended`` (with the round's device
    time, ms) and ``ran`` (the worker's answer)."""
    from flashinfer_bench.bench.replay import ReplayedCalls
    from flashinfer_bench.bench.wire.judge_worker import JudgeChannel
    from flashinfer_bench.bench.worker.main import WireExchange, Worker

    stamps: list[tuple[str, float, float]] = []
    queued_rounds: set[int] = set()  # the ReplayedCalls with a round queued (a capture waits for a replay too)
    answer, run, wait, ran = WireExchange._answer, ReplayedCalls.run, ReplayedCalls.wait, WireExchange.ran

    def answered(self, expected):
        result = answer(self, expected)
        stamps.append(("answered", time.perf_counter(), 0.0))
        return result

    def queued(self, seed, calls):
        stamps.append(("queued", time.perf_counter(), 0.0))
        queued_rounds.add(id(self))
        return run(self, seed, calls)

    def ended(self):
        wait(self)
        if id(self) in queued_rounds:
            queued_rounds.discard(id(self))
            stamps.append(("ended", time.perf_counter(), self.replay_ms() * self.round_calls))

    def answering(self, count, more, replay=False):
        stamps.append(("ran", time.perf_counter(), 0.0))
        return ran(self, count, more, replay)

    WireExchange._answer, ReplayedCalls.run, ReplayedCalls.wait, WireExchange.ran = answered, queued, ended, answering
    try:
        Worker(JudgeChannel(conn), device, scratch, scratch).serve("none (benchmark)")
    except EOFError:
        pass
    (Path(os.environ[STAMPS_ENV]) / f"stamps-{os.getpid()}.json").write_text(json.dumps(stamps))


def judge_windows() -> list[tuple[float, float, int]]:
    """Clock this process's TimedSchedule: every round's window (opened, closed, calls) as it closes."""
    from flashinfer_bench.bench.judge.schedule import TimedSchedule

    windows: list[tuple[float, float, int]] = []
    on_ran = TimedSchedule.on_ran

    def closing(self, count, replay=False, sent=None):
        windows.append((self.window_opened, time.perf_counter(), count - self.ended))
        return on_ran(self, count, replay, sent)

    TimedSchedule.on_ran = closing
    return windows


def round_parts(windows: list[tuple[float, float, int]], stamps: list[tuple[str, float, float]]) -> list[dict]:
    """Each replayed round's window, device time and parts (ms, ``PARTS``): the worker's round whose queueing lies
    in a window of the judge's, with the latest answer the worker read before it."""
    rows, answers = [], [at for label, at, _ in stamps if label == "answered"]
    rounds = [(stamps[i][1], stamps[i + 1], stamps[i + 2]) for i in range(len(stamps) - 2)
              if stamps[i][0] == "queued" and stamps[i + 1][0] == "ended" and stamps[i + 2][0] == "ran"]
    for queued_at, (_, ended_at, device_ms), (_, ran_at, _) in rounds:
        window = next((w for w in windows if w[0] <= queued_at and ran_at <= w[1]), None)
        seeds = max((at for at in answers if at <= queued_at), default=None)
        if window is None or seeds is None or seeds < window[0]:
            continue
        opened, closed, calls = window
        parts = ((seeds - opened) * 1e3, (queued_at - seeds) * 1e3, (ended_at - queued_at) * 1e3 - device_ms,
                 (ran_at - ended_at) * 1e3, (closed - ran_at) * 1e3)
        rows.append({"calls": calls, "window": (closed - opened) * 1e3, "device": device_ms,
                     **dict(zip(PARTS, parts, strict=True))})
    return rows


def report(rows: list[dict]) -> None:
    if not rows:
        print("no replayed rounds (no CUDA device?)")
        return
    for calls in sorted({row["calls"] for row in rows}):
        mine = [row for row in rows if row["calls"] == calls]
        med = {key: statistics.median(row[key] for row in mine) for key in ("window", "device", *PARTS)}
        rest = statistics.median(row["window"] - row["device"] for row in mine)
        print(f"{calls:5d} calls, {len(mine):4d} rounds, medians (ms): window {med['window']:.3f}, device "
              f"{med['device']:.3f}, the rest {rest:.3f}: " + ", ".join(f"{part} {med[part]:.3f}" for part in PARTS))
    print("all rounds, 10th percentile / median / 90th percentile (ms):")
    for key in ("rest", *PARTS):
        values = [row["window"] - row["device"] if key == "rest" else row[key] for row in rows]
        q = statistics.quantiles(values, n=10) if len(values) > 1 else values * 9
        print(f"  {key:26s} {q[0]:.3f} / {statistics.median(values):.3f} / {q[-1]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,262144")
    parser.add_argument("--evaluations", type=int, default=6)
    args = parser.parse_args()
    from flashinfer_bench.bench.config import BenchmarkConfig
    from flashinfer_bench.bench.judge.context import EvaluationContext
    from flashinfer_bench.bench.runner import available_devices
    from flashinfer_bench.bench.seeds import new_run_secret
    from flashinfer_bench.data import Definition, Workload

    definition = Definition.model_validate(timed_call_costs.SCALE_ADD)
    windows = judge_windows()
    timed_call_costs.unsandboxed_worker = stamping_worker
    rows = []
    with tempfile.TemporaryDirectory(prefix="fib-round-stamps-") as directory:
        os.environ[STAMPS_ENV] = directory
        for n in (int(size) for size in args.sizes.split(",")):
            ctx = EvaluationContext(definition, Workload(uuid=f"n{n}", axes={"n": n}, inputs={}),
                                    BenchmarkConfig.default().resolve(definition), available_devices()[0], None,
                                    new_run_secret())
            windows.clear()
            timed_call_costs.remote_ms_per_evaluation(ctx, args.evaluations, sandboxed=False, reload=True)
            for path in Path(directory).glob("stamps-*.json"):
                rows += round_parts(windows, json.loads(path.read_text()))
                path.unlink()
    report(rows)


if __name__ == "__main__":
    main()

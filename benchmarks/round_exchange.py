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
import statistics
import time

from stamped_runs import quantile_lines, stamped_evaluations, write_stamps

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
    write_stamps(stamps)


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
    columns = {"rest": [row["window"] - row["device"] for row in rows]}
    print("\n".join(quantile_lines(columns | {part: [row[part] for row in rows] for part in PARTS})))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,262144")
    parser.add_argument("--evaluations", type=int, default=6)
    args = parser.parse_args()
    windows = judge_windows()
    rows = []
    for _, workers in stamped_evaluations(stamping_worker, [int(s) for s in args.sizes.split(",")],
                                          args.evaluations):
        for stamps in workers:
            rows += round_parts(windows, [tuple(stamp) for stamp in stamps])
        windows.clear()
    report(rows)


if __name__ == "__main__":
    main()

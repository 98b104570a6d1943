"""What a correctness call costs the judge beyond the worker's own work, part by part (judge/remote.py
``RemoteSolution.call``, worker/main.py, bench/harness.py ``Harness.call``). Over a run of
``harness_overhead.py`` a correctness call took the judge 4.2 ms on average (judge_functions.py), while the worker's
phases of one took 0.5-1 ms (worker_phases.py; docs/measurements.md).

This process judges ``scale_add`` at the default settings (``timed_call_costs.py``: the reference timed once per
workload, the solution loaded again for each evaluation) with a real worker process, not sandboxed, on the first
device, ``--evaluations`` evaluations per ``--sizes`` workload. Clocks on both sides stamp each correctness call:
- before sending: from the judge's call until it sends the request (its output buffer sized, the message made);
- to the worker: until the worker has read the request;
- before the harness: until the worker's harness starts the call (the worker's dispatch, its log and torch-state
  guards);
- the harness: the harness's call (inputs drawn and copied, the solution called, its outputs written to the
  buffer, its inputs compared with their copies);
- after the harness: until the worker sends its answer;
- to the judge: until the judge has read the answer;
- reading: until the judge's call returns (the outputs read from the buffer).
The parts make up the judge's call. Per size it prints the medians; then, over all calls, the 10th percentile,
median and 90th percentile of each part. Runs on the CPU too (the worker's device is the first available).

    python3 benchmarks/call_exchange.py [--sizes 4096,262144] [--evaluations 6]
"""

from __future__ import annotations

import argparse
import statistics
import time

from stamped_runs import quantile_lines, stamped_evaluations, write_stamps
from timed_call_costs import clocked

#: The judge's stamps of one call, and the worker's, in the order they are made.
JUDGE_STAMPS = ("begun", "sent", "answered", "ended")
WORKER_STAMPS = ("received", "harness begun", "harness ended", "answering")
#: The parts of a call on the judge's clock, in order.
PARTS = ("before sending", "to the worker", "before the harness", "the harness", "after the harness",
         "to the judge", "reading")


def stamping_worker(conn, device: str, scratch) -> None:
    """worker/main.py's worker, not sandboxed, stamping each correctness call (``WORKER_STAMPS``); writes the
    stamps when it stops (stamped_runs.py)."""
    from flashinfer_bench.bench.harness import Harness
    from flashinfer_bench.bench.wire.judge_worker import Call, Called, JudgeChannel
    from flashinfer_bench.bench.worker.main import Worker

    stamps: list[tuple[str, float]] = []
    receive, send = JudgeChannel.receive, JudgeChannel.send

    def received(self, due=None):
        message = receive(self, due)
        if isinstance(message, Call):
            stamps.append(("received", time.perf_counter()))
        return message

    def answering(self, message):
        if isinstance(message, Called):
            stamps.append(("answering", time.perf_counter()))
        send(self, message)

    def harness_call(start_ns: int, end_ns: int) -> None:  # perf_counter_ns: perf_counter's clock
        stamps.extend([("harness begun", start_ns / 1e9), ("harness ended", end_ns / 1e9)])

    JudgeChannel.receive, JudgeChannel.send = received, answering
    clocked(Harness, "call", harness_call)
    try:
        Worker(JudgeChannel(conn), device, scratch, scratch).serve("none (benchmark)")
    except EOFError:
        pass
    write_stamps(stamps)


def judge_stamps() -> list[tuple[str, float]]:
    """Clock this process's correctness calls (``JUDGE_STAMPS``), appended to the list returned as they are made.
    Each is sent by ``RemoteSolution.call``: no call is started ahead of it (``start_call``: the next trial's,
    while the judge compares the one before, and a slow last call's, evaluators/ahead.py), so that each call's
    parts follow one another."""
    from flashinfer_bench.bench.judge.remote import RemoteSolution
    from flashinfer_bench.bench.wire.judge_worker import Call, Called, WorkerChannel

    RemoteSolution.start_call = lambda self, args: None

    stamps: list[tuple[str, float]] = []
    call, send, receive = RemoteSolution.call, WorkerChannel.send, WorkerChannel.receive

    def clocked_call(self, *args, **kwargs):
        stamps.append(("begun", time.perf_counter()))
        try:
            return call(self, *args, **kwargs)
        finally:
            stamps.append(("ended", time.perf_counter()))

    def sending(self, message):
        if isinstance(message, Call):
            stamps.append(("sent", time.perf_counter()))
        send(self, message)

    def answered(self, *expected):
        message = receive(self, *expected)
        if isinstance(message, Called):
            stamps.append(("answered", time.perf_counter()))
        return message

    RemoteSolution.call, WorkerChannel.send, WorkerChannel.receive = clocked_call, sending, answered
    return stamps


def calls_of(stamps: list[tuple[str, float]], labels: tuple[str, ...]) -> list[list[float]]:
    """The times of each whole run of ``labels`` in ``stamps`` (a call whose stamps are incomplete is left out)."""
    calls = []
    for start in range(len(stamps) - len(labels) + 1):
        window = stamps[start:start + len(labels)]
        if tuple(label for label, _ in window) == labels:
            calls.append([at for _, at in window])
    return calls


def call_parts(judge: list[tuple[str, float]], worker: list[tuple[str, float]], n: int) -> list[dict]:
    """Each correctness call's whole time and parts (ms, ``PARTS``): the judge's calls and the worker's in order."""
    rows = []
    for (begun, sent, answered, ended), (received, h_begun, h_ended, answering) in zip(
            calls_of(judge, JUDGE_STAMPS), calls_of(worker, WORKER_STAMPS), strict=True):
        parts = (sent - begun, received - sent, h_begun - received, h_ended - h_begun, answering - h_ended,
                 answered - answering, ended - answered)
        rows.append({"n": n, "call": (ended - begun) * 1e3, **{p: t * 1e3 for p, t in zip(PARTS, parts, strict=True)}})
    return rows


def report(rows: list[dict]) -> None:
    if not rows:
        print("no correctness calls")
        return
    for n in sorted({row["n"] for row in rows}):
        mine = [row for row in rows if row["n"] == n]
        print(f"n={n}, {len(mine)} calls, medians (ms): call {statistics.median(r['call'] for r in mine):.3f}: "
              + ", ".join(f"{part} {statistics.median(r[part] for r in mine):.3f}" for part in PARTS))
    print("all calls, 10th percentile / median / 90th percentile (ms):")
    print("\n".join(quantile_lines({key: [row[key] for row in rows] for key in ("call", *PARTS)})))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,262144")
    parser.add_argument("--evaluations", type=int, default=6)
    args = parser.parse_args()
    judge = judge_stamps()
    rows = []
    for n, workers in stamped_evaluations(stamping_worker, [int(s) for s in args.sizes.split(",")], args.evaluations):
        for stamps in workers:
            rows += call_parts(judge, [tuple(stamp) for stamp in stamps], n)
        judge.clear()
    report(rows)


if __name__ == "__main__":
    main()
